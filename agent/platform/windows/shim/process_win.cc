#include <windows.h>

#include <algorithm>
#include <atomic>
#include <cwctype>
#include <map>
#include <thread>

#include "agent/platform/windows/shim/cmdline.h"
#include "agent/platform/windows/shim/process.h"

namespace smbfleet::agent::windows::shim {
namespace {

struct Handle {
  HANDLE h = nullptr;
  Handle() = default;
  explicit Handle(HANDLE handle) : h(handle) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { Close(); }
  void Close() {
    if (h != nullptr && h != INVALID_HANDLE_VALUE) CloseHandle(h);
    h = nullptr;
  }
};

struct CaseInsensitiveLess {
  bool operator()(const std::wstring& a, const std::wstring& b) const {
    return std::lexicographical_compare(
        a.begin(), a.end(), b.begin(), b.end(),
        [](wchar_t x, wchar_t y) { return std::towupper(x) < std::towupper(y); });
  }
};

// The agent's environment with the request's variables added or replaced, as a sorted,
// double-NUL-terminated block (names are case-insensitive on Windows).
std::wstring EnvironmentBlock(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::wstring, std::wstring, CaseInsensitiveLess> vars;
  LPWCH current = GetEnvironmentStringsW();
  if (current != nullptr) {
    for (const wchar_t* p = current; *p != L'\0'; p += wcslen(p) + 1) {
      std::wstring entry(p);
      size_t eq = entry.find(L'=', 1);  // "=C:=C:\dir" entries start with '='
      if (eq == std::wstring::npos) continue;
      vars[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    FreeEnvironmentStringsW(current);
  }
  for (const auto& [k, v] : extra) vars[Widen(k)] = Widen(v);
  std::wstring block;
  for (const auto& [k, v] : vars) {
    block += k;
    block += L'=';
    block += v;
    block.push_back(L'\0');
  }
  block.push_back(L'\0');
  return block;
}

void ReadAll(HANDLE pipe, std::string* out, size_t cap, std::atomic<bool>* over, HANDLE job) {
  char buf[8192];
  DWORD n = 0;
  while (ReadFile(pipe, buf, sizeof(buf), &n, nullptr) && n > 0) {
    if (out->size() + n > cap) {
      over->store(true);
      TerminateJobObject(job, 1);
      return;
    }
    out->append(buf, n);
  }
}

}  // namespace

std::wstring Widen(const std::string& s) {
  if (s.empty()) return std::wstring();
  int n = MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), nullptr, 0);
  std::wstring w(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), w.data(), n);
  return w;
}

std::string Narrow(const std::wstring& w) {
  if (w.empty()) return std::string();
  int n = WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), nullptr, 0, nullptr,
                              nullptr);
  std::string s(static_cast<size_t>(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), s.data(), n, nullptr,
                      nullptr);
  return s;
}

std::string ErrorText(uint32_t code) {
  wchar_t* text = nullptr;
  DWORD n = FormatMessageW(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
      nullptr, code, 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::string msg = n > 0 ? Narrow(std::wstring(text, n)) : std::string("unknown error");
  if (text != nullptr) LocalFree(text);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r' || msg.back() == ' ')) {
    msg.pop_back();
  }
  return msg + " (" + std::to_string(code) + ")";
}

ProcessResult RunProcess(const ProcessRequest& request) {
  ProcessResult result;
  if (request.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  SECURITY_ATTRIBUTES sa{sizeof(sa), nullptr, TRUE};
  HANDLE raw[6] = {};
  if (!CreatePipe(&raw[0], &raw[1], &sa, 0) || !CreatePipe(&raw[2], &raw[3], &sa, 0) ||
      !CreatePipe(&raw[4], &raw[5], &sa, 0)) {
    result.error = "CreatePipe: " + ErrorText(GetLastError());
    for (HANDLE h : raw) {
      if (h != nullptr) CloseHandle(h);
    }
    return result;
  }
  Handle out_r(raw[0]), out_w(raw[1]), err_r(raw[2]), err_w(raw[3]), in_r(raw[4]), in_w(raw[5]);
  // Only the child's ends are inheritable.
  SetHandleInformation(out_r.h, HANDLE_FLAG_INHERIT, 0);
  SetHandleInformation(err_r.h, HANDLE_FLAG_INHERIT, 0);
  SetHandleInformation(in_w.h, HANDLE_FLAG_INHERIT, 0);

  // Inherit exactly these three handles, not every inheritable handle of the agent.
  SIZE_T attr_size = 0;
  InitializeProcThreadAttributeList(nullptr, 1, 0, &attr_size);
  std::vector<char> attr_buf(attr_size);
  auto* attrs = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(attr_buf.data());
  HANDLE inherit[3] = {in_r.h, out_w.h, err_w.h};
  if (!InitializeProcThreadAttributeList(attrs, 1, 0, &attr_size) ||
      !UpdateProcThreadAttribute(attrs, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherit,
                                 sizeof(inherit), nullptr, nullptr)) {
    result.error = "ProcThreadAttribute: " + ErrorText(GetLastError());
    return result;
  }
  STARTUPINFOEXW si{};
  si.StartupInfo.cb = sizeof(si);
  si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  si.StartupInfo.hStdInput = in_r.h;
  si.StartupInfo.hStdOutput = out_w.h;
  si.StartupInfo.hStdError = err_w.h;
  si.lpAttributeList = attrs;

  Handle job(CreateJobObjectW(nullptr, nullptr));
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  SetInformationJobObject(job.h, JobObjectExtendedLimitInformation, &limits, sizeof(limits));

  std::wstring cmdline = Widen(BuildCommandLine(request.argv));
  std::wstring env = EnvironmentBlock(request.env);
  PROCESS_INFORMATION pi{};
  BOOL ok = CreateProcessW(nullptr, cmdline.data(), nullptr, nullptr, TRUE,
                           CREATE_SUSPENDED | CREATE_NO_WINDOW | CREATE_UNICODE_ENVIRONMENT |
                               EXTENDED_STARTUPINFO_PRESENT,
                           env.data(), nullptr, &si.StartupInfo, &pi);
  DeleteProcThreadAttributeList(attrs);
  if (!ok) {
    DWORD err = GetLastError();
    result.outcome = (err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND)
                         ? ProcessOutcome::kNotFound
                         : ProcessOutcome::kError;
    result.error = request.argv[0] + ": " + ErrorText(err);
    return result;
  }
  Handle process(pi.hProcess), thread(pi.hThread);
  AssignProcessToJobObject(job.h, process.h);
  ResumeThread(thread.h);
  // The parent's copies of the child's ends must go, or the readers never see end of file.
  out_w.Close();
  err_w.Close();
  in_r.Close();

  std::atomic<bool> over{false};
  std::thread out_reader(ReadAll, out_r.h, &result.stdout_data, request.max_output_bytes, &over,
                         job.h);
  std::thread err_reader(ReadAll, err_r.h, &result.stderr_data, request.max_output_bytes, &over,
                         job.h);
  std::thread writer([&request, &in_w] {
    DWORD written = 0;
    size_t off = 0;
    while (off < request.stdin_data.size()) {
      DWORD chunk = static_cast<DWORD>(std::min<size_t>(request.stdin_data.size() - off, 1 << 16));
      if (!WriteFile(in_w.h, request.stdin_data.data() + off, chunk, &written, nullptr)) break;
      off += written;
    }
    in_w.Close();
  });

  DWORD wait = WaitForSingleObject(process.h, request.timeout_ms);
  bool timed_out = wait == WAIT_TIMEOUT;
  // Ends the child on timeout, and whatever it left running in every case.
  TerminateJobObject(job.h, 1);
  WaitForSingleObject(process.h, 5000);
  writer.join();
  out_reader.join();
  err_reader.join();
  DWORD code = 0;
  GetExitCodeProcess(process.h, &code);
  result.exit_code = code;
  if (timed_out) {
    result.outcome = ProcessOutcome::kTimedOut;
    result.error =
        request.argv[0] + ": timed out after " + std::to_string(request.timeout_ms) + " ms";
  } else if (over.load()) {
    result.outcome = ProcessOutcome::kOutputTooLarge;
    result.error =
        request.argv[0] + ": output over " + std::to_string(request.max_output_bytes) + " bytes";
  } else {
    result.outcome = ProcessOutcome::kExited;
  }
  return result;
}

}  // namespace smbfleet::agent::windows::shim

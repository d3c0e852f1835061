// A stand-in for powershell.exe on a Windows (or Wine) host without the SMB cmdlets: it answers
// the agent's probe scripts from a capture folder, so that the agent's real process launch runs
// end to end. Win32 only, no third-party code:
//
//   x86_64-w64-mingw32-g++-posix -std=c++17 -static -O2 -municode powershell_standin.cc
//
// It takes the agent's command line (`-EncodedCommand BASE64`, the UTF-16LE script text), works
// out which probe the script is, and writes `<capture>\<probe>.json` to stdout unchanged.
// Configuration is a UTF-8 file `standin.cfg` beside the executable, one directive per line:
//
//   capture DIR           the capture folder (required)
//   sleep PROBE SECONDS   that probe hangs instead of answering (a cmdlet that times out)
//   log FILE              appends each probe it answered (or refused) as a line
//
// A probe whose file is missing fails as PowerShell does when the cmdlet does not exist: exit 1,
// "The term 'X' is not recognized..." on stderr. A script it does not know fails with exit 1 and
// a message naming its first line.

#include <windows.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cwchar>
#include <string>

#include "agent/platform/windows/shim/process.h"
#include "agent/platform/windows/testing/powershell_standin_probes.h"

namespace {

using ::smbfleet::agent::windows::shim::Narrow;
using ::smbfleet::agent::windows::shim::Widen;

using smbfleet::agent::windows::testing::kStandInProbes;
using smbfleet::agent::windows::testing::StandInProbe;

struct Config {
  std::wstring capture;
  std::wstring sleep_probe;
  DWORD sleep_seconds = 0;
  std::wstring log;
};

void WriteAll(HANDLE h, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    DWORD n = 0;
    DWORD chunk = static_cast<DWORD>(std::min<size_t>(bytes.size() - done, 1 << 20));
    if (!WriteFile(h, bytes.data() + done, chunk, &n, nullptr) || n == 0) return;
    done += n;
  }
}

int Fail(const std::string& message) {
  WriteAll(GetStdHandle(STD_ERROR_HANDLE), message + "\r\n");
  return 1;
}

bool ReadWholeFile(const std::wstring& path, std::string* out) {
  HANDLE h = CreateFileW(path.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                         FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) return false;
  out->clear();
  char buf[65536];
  DWORD n = 0;
  bool ok = true;
  while ((ok = ReadFile(h, buf, sizeof(buf), &n, nullptr)) && n > 0) out->append(buf, n);
  CloseHandle(h);
  return ok;
}

std::wstring ExeDir() {
  std::wstring path(32768, L'\0');
  DWORD n = GetModuleFileNameW(nullptr, path.data(), static_cast<DWORD>(path.size()));
  path.resize(n);
  size_t slash = path.find_last_of(L"\\/");
  return slash == std::wstring::npos ? std::wstring(L".") : path.substr(0, slash);
}

bool LoadConfig(Config* config, std::string* error) {
  std::wstring path = ExeDir() + L"\\standin.cfg";
  std::string text;
  if (!ReadWholeFile(path, &text)) {
    *error = "powershell stand-in: cannot read " + Narrow(path);
    return false;
  }
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.find(' ');
    std::string key = line.substr(0, space);
    std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "capture") {
      config->capture = Widen(value);
    } else if (key == "log") {
      config->log = Widen(value);
    } else if (key == "sleep") {
      size_t sp = value.find(' ');
      config->sleep_probe = Widen(value.substr(0, sp));
      config->sleep_seconds =
          sp == std::string::npos
              ? 600
              : static_cast<DWORD>(std::strtoul(value.c_str() + sp + 1, nullptr, 10));
    } else {
      *error = "powershell stand-in: " + Narrow(path) + ": unknown directive '" + key + "'";
      return false;
    }
  }
  if (config->capture.empty()) {
    *error = "powershell stand-in: " + Narrow(path) + " names no capture folder";
    return false;
  }
  DWORD attributes = GetFileAttributesW(config->capture.c_str());
  if (attributes == INVALID_FILE_ATTRIBUTES || !(attributes & FILE_ATTRIBUTE_DIRECTORY)) {
    *error = "powershell stand-in: capture folder " + Narrow(config->capture) + " does not exist";
    return false;
  }
  return true;
}

bool DecodeBase64(const std::wstring& in, std::string* out) {
  auto value = [](wchar_t c) -> int {
    if (c >= L'A' && c <= L'Z') return c - L'A';
    if (c >= L'a' && c <= L'z') return c - L'a' + 26;
    if (c >= L'0' && c <= L'9') return c - L'0' + 52;
    if (c == L'+') return 62;
    if (c == L'/') return 63;
    return -1;
  };
  uint32_t acc = 0;
  int bits = 0;
  for (wchar_t c : in) {
    if (c == L'=') break;
    int v = value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

void AppendLog(const Config& config, const std::wstring& line) {
  if (config.log.empty()) return;
  HANDLE h = CreateFileW(config.log.c_str(), FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_WRITE,
                         nullptr, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) return;
  WriteAll(h, Narrow(line) + "\n");
  CloseHandle(h);
}

}  // namespace

int wmain(int argc, wchar_t** argv) {
  Config config;
  std::string error;
  if (!LoadConfig(&config, &error)) return Fail(error);

  std::wstring encoded;
  for (int i = 1; i + 1 < argc; ++i) {
    if (_wcsicmp(argv[i], L"-EncodedCommand") == 0) encoded = argv[i + 1];
  }
  std::string utf16;
  if (encoded.empty() || !DecodeBase64(encoded, &utf16) || utf16.size() % 2 != 0) {
    return Fail("powershell stand-in: no valid -EncodedCommand argument");
  }
  std::wstring script(utf16.size() / 2, L'\0');
  for (size_t i = 0; i < script.size(); ++i) {
    script[i] = static_cast<wchar_t>(static_cast<unsigned char>(utf16[2 * i]) |
                                     (static_cast<unsigned char>(utf16[2 * i + 1]) << 8));
  }

  const StandInProbe* probe = nullptr;
  for (const StandInProbe& p : kStandInProbes) {
    if (script.find(p.marker) != std::wstring::npos) {
      probe = &p;
      break;
    }
  }
  if (probe == nullptr) {
    // The prelude is common to every script: name the first line after it.
    size_t at = script.find(L"}\n", script.find(L"trap {"));
    at = at == std::wstring::npos ? 0 : at + 2;
    std::wstring first = script.substr(at, script.find(L'\n', at) - at);
    AppendLog(config, L"unknown");
    return Fail("powershell stand-in: unknown script, first line: " + Narrow(first));
  }
  AppendLog(config, probe->name);
  if (config.sleep_probe == probe->name) Sleep(config.sleep_seconds * 1000);

  std::string bytes;
  std::wstring file = config.capture + L"\\" + probe->name + L".json";
  if (!ReadWholeFile(file, &bytes)) {
    return Fail(Narrow(std::wstring(L"The term '") + probe->cmdlet +
                       L"' is not recognized as the name of a cmdlet, function, script file, or "
                       L"operable program."));
  }
  WriteAll(GetStdHandle(STD_OUTPUT_HANDLE), bytes);
  return 0;
}

// common/files.h on Windows: every call is the W form of the Win32 API with the path converted
// from UTF-8, so that non-ASCII paths work whatever the system's ANSI code page is.
#include <windows.h>

#include "common/files.h"
// windows.h first: these need its types.
#include <sddl.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"

namespace smbfleet {
namespace {

// SYSTEM and Administrators full control, protected from inheritance: what mode 0600 means for
// a service's key (the service runs as LocalSystem; an administrator may read it, no one else).
constexpr wchar_t kPrivateSddl[] = L"D:P(A;;FA;;;SY)(A;;FA;;;BA)";

// FILETIME counts 100 ns ticks since 1601-01-01.
constexpr int64_t kUnixEpochTicks = 116444736000000000LL;

std::string SystemMessage(DWORD err) {
  wchar_t* text = nullptr;
  DWORD n = ::FormatMessageW(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
      nullptr, err, 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::string out;
  if (n > 0 && text != nullptr) {
    std::wstring wide(text, n);
    while (!wide.empty() && (wide.back() == L'\n' || wide.back() == L'\r' || wide.back() == L' ' ||
                             wide.back() == L'.')) {
      wide.pop_back();
    }
    out = WideToUtf8(wide);
  }
  if (text != nullptr) ::LocalFree(text);
  return absl::StrCat(out.empty() ? "error" : out, " (", err, ")");
}

absl::Status Win32Status(absl::string_view what, const std::string& path, DWORD err) {
  std::string message = absl::StrCat(path, ": ", what, ": ", SystemMessage(err));
  if (err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND) {
    return absl::NotFoundError(message);
  }
  if (err == ERROR_ACCESS_DENIED) return absl::PermissionDeniedError(message);
  if (err == ERROR_FILE_EXISTS || err == ERROR_ALREADY_EXISTS) {
    return absl::AlreadyExistsError(message);
  }
  if (err == ERROR_DISK_FULL || err == ERROR_HANDLE_DISK_FULL) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

bool IsSeparator(char c) { return c == '/' || c == '\\'; }

// Closes a handle when it goes out of scope.
class Handle {
 public:
  explicit Handle(HANDLE h) : h_(h) {}
  ~Handle() { Close(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  HANDLE get() const { return h_; }
  bool valid() const { return h_ != INVALID_HANDLE_VALUE; }
  // CloseHandle's result, for writers that must know the file was closed cleanly.
  bool Close() {
    if (h_ == INVALID_HANDLE_VALUE) return true;
    bool ok = ::CloseHandle(h_) != 0;
    h_ = INVALID_HANDLE_VALUE;
    return ok;
  }

 private:
  HANDLE h_;
};

// The security descriptor of a private file, freed with LocalFree when this goes away.
class PrivateDescriptor {
 public:
  PrivateDescriptor() {
    ::ConvertStringSecurityDescriptorToSecurityDescriptorW(kPrivateSddl, SDDL_REVISION_1, &sd_,
                                                           nullptr);
  }
  ~PrivateDescriptor() {
    if (sd_ != nullptr) ::LocalFree(sd_);
  }
  PrivateDescriptor(const PrivateDescriptor&) = delete;
  PrivateDescriptor& operator=(const PrivateDescriptor&) = delete;
  PSECURITY_DESCRIPTOR get() const { return sd_; }

 private:
  PSECURITY_DESCRIPTOR sd_ = nullptr;
};

// Writes all of content to a new file (or a truncated existing one) and flushes it to disk.
absl::Status WriteAndFlush(const std::string& path, DWORD disposition, absl::string_view content,
                           SECURITY_ATTRIBUTES* security) {
  Handle file(::CreateFileW(Utf8ToWide(path).c_str(), GENERIC_WRITE, 0, security, disposition,
                            FILE_ATTRIBUTE_NORMAL, nullptr));
  if (!file.valid()) return Win32Status("cannot create", path, ::GetLastError());
  size_t off = 0;
  while (off < content.size()) {
    DWORD chunk = static_cast<DWORD>(std::min<size_t>(content.size() - off, 1u << 30));
    DWORD written = 0;
    if (!::WriteFile(file.get(), content.data() + off, chunk, &written, nullptr)) {
      return Win32Status("cannot write", path, ::GetLastError());
    }
    off += written;
  }
  if (!::FlushFileBuffers(file.get())) {
    return Win32Status("cannot flush", path, ::GetLastError());
  }
  if (!file.Close()) return Win32Status("cannot close", path, ::GetLastError());
  return absl::OkStatus();
}

absl::Status WriteAtomic(const std::string& path, absl::string_view content, bool is_private) {
  std::string tmp = absl::StrCat(path, ".tmp.", ::GetCurrentProcessId());
  PrivateDescriptor descriptor;
  SECURITY_ATTRIBUTES attributes{};
  SECURITY_ATTRIBUTES* security = nullptr;
  if (is_private) {
    if (descriptor.get() == nullptr) {
      return Win32Status("cannot build the private ACL for", path, ::GetLastError());
    }
    attributes.nLength = sizeof(attributes);
    attributes.lpSecurityDescriptor = descriptor.get();
    security = &attributes;
  }
  if (absl::Status s = WriteAndFlush(tmp, CREATE_ALWAYS, content, security); !s.ok()) {
    ::DeleteFileW(Utf8ToWide(tmp).c_str());
    return s;
  }
  if (absl::Status s = RenameFile(tmp, path); !s.ok()) {
    ::DeleteFileW(Utf8ToWide(tmp).c_str());
    return s;
  }
  return absl::OkStatus();
}

absl::Time FromFileTime(const FILETIME& ft) {
  const int64_t ticks =
      static_cast<int64_t>((static_cast<uint64_t>(ft.dwHighDateTime) << 32) | ft.dwLowDateTime);
  return absl::FromUnixMicros((ticks - kUnixEpochTicks) / 10);
}

}  // namespace

std::wstring Utf8ToWide(absl::string_view utf8) {
  if (utf8.empty()) return std::wstring();
  int n = ::MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), nullptr, 0);
  std::wstring out(static_cast<size_t>(n), L'\0');
  ::MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), out.data(), n);
  return out;
}

std::string WideToUtf8(const std::wstring& wide) {
  if (wide.empty()) return std::string();
  int n = ::WideCharToMultiByte(CP_UTF8, 0, wide.data(), static_cast<int>(wide.size()), nullptr, 0,
                                nullptr, nullptr);
  std::string out(static_cast<size_t>(n), '\0');
  ::WideCharToMultiByte(CP_UTF8, 0, wide.data(), static_cast<int>(wide.size()), out.data(), n,
                        nullptr, nullptr);
  return out;
}

absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  const std::wstring wide = Utf8ToWide(path);
  const DWORD attributes = ::GetFileAttributesW(wide.c_str());
  if (attributes == INVALID_FILE_ATTRIBUTES) {
    return Win32Status("cannot open", path, ::GetLastError());
  }
  if (attributes & FILE_ATTRIBUTE_DIRECTORY) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, expected a file"));
  }
  // FILE_SHARE_DELETE: a writer may replace the file (MoveFileExW) while it is being read.
  Handle file(::CreateFileW(wide.c_str(), GENERIC_READ,
                            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                            OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr));
  if (!file.valid()) return Win32Status("cannot open", path, ::GetLastError());
  std::string out;
  std::vector<char> buf(65536);
  while (true) {
    DWORD n = 0;
    if (!::ReadFile(file.get(), buf.data(), static_cast<DWORD>(buf.size()), &n, nullptr)) {
      return Win32Status("cannot read", path, ::GetLastError());
    }
    if (n == 0) break;
    if (out.size() + n > max_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": larger than the limit of ", max_bytes, " bytes"));
    }
    out.append(buf.data(), n);
  }
  return out;
}

absl::Status WriteFileAtomic(const std::string& path, absl::string_view content, int mode) {
  return WriteAtomic(path, content, /*is_private=*/false);
}

absl::Status WritePrivateFileAtomic(const std::string& path, absl::string_view content) {
  return WriteAtomic(path, content, /*is_private=*/true);
}

absl::StatusOr<std::string> WriteUniqueTempFile(const std::string& prefix,
                                                absl::string_view content, int mode) {
  // CREATE_NEW makes the name ours alone, as mkstemp's O_EXCL does.
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  uint64_t seed = (static_cast<uint64_t>(::GetCurrentProcessId()) << 32) ^ ::GetTickCount64() ^
                  reinterpret_cast<uintptr_t>(&content);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string tmp = prefix;
    for (int i = 0; i < 6; ++i) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      tmp.push_back(kAlphabet[(seed >> 33) % (sizeof(kAlphabet) - 1)]);
    }
    absl::Status s = WriteAndFlush(tmp, CREATE_NEW, content, nullptr);
    if (s.ok()) return tmp;
    if (absl::IsAlreadyExists(s)) continue;  // someone else's file: try another name
    ::DeleteFileW(Utf8ToWide(tmp).c_str());
    return s;
  }
  return absl::InternalError(absl::StrCat(prefix, "XXXXXX: cannot find an unused temp name"));
}

absl::Status RenameFile(const std::string& from, const std::string& to) {
  if (!::MoveFileExW(Utf8ToWide(from).c_str(), Utf8ToWide(to).c_str(),
                     MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
    return Win32Status(absl::StrCat("cannot rename ", from, " into place"), to, ::GetLastError());
  }
  return absl::OkStatus();
}

absl::Status SyncDirectory(const std::string& dir) {
  // NTFS journals metadata: with MOVEFILE_WRITE_THROUGH the rename is on disk when it returns.
  return absl::OkStatus();
}

absl::Status RemoveFile(const std::string& path) {
  if (!::DeleteFileW(Utf8ToWide(path).c_str())) {
    DWORD err = ::GetLastError();
    if (err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND) return absl::OkStatus();
    return Win32Status("cannot remove", path, err);
  }
  return absl::OkStatus();
}

absl::Status RemoveFileDurably(const std::string& path) { return RemoveFile(path); }

bool FileExists(const std::string& path) {
  return ::GetFileAttributesW(Utf8ToWide(path).c_str()) != INVALID_FILE_ATTRIBUTES;
}

absl::Status MakeDirs(const std::string& path, int mode) {
  if (path.empty()) return absl::InvalidArgumentError("empty directory path");
  // Never try to create a drive ("C:") or a share ("\\server\share"): start past them.
  size_t start = 0;
  if (path.size() >= 2 && path[1] == ':') {
    start = 2;
  } else if (path.size() >= 2 && IsSeparator(path[0]) && IsSeparator(path[1])) {
    size_t server_end = path.find_first_of("/\\", 2);
    size_t share_end = server_end == std::string::npos ? std::string::npos
                                                       : path.find_first_of("/\\", server_end + 1);
    start = share_end == std::string::npos ? path.size() : share_end;
  }
  for (size_t pos = start; pos <= path.size(); ++pos) {
    if (pos != path.size() && !IsSeparator(path[pos])) continue;
    std::string partial = path.substr(0, pos);
    if (partial.size() <= start || IsSeparator(partial.back())) continue;
    if (!::CreateDirectoryW(Utf8ToWide(partial).c_str(), nullptr)) {
      DWORD err = ::GetLastError();
      if (err != ERROR_ALREADY_EXISTS) return Win32Status("cannot create directory", partial, err);
    }
  }
  const DWORD attributes = ::GetFileAttributesW(Utf8ToWide(path).c_str());
  if (attributes == INVALID_FILE_ATTRIBUTES || !(attributes & FILE_ATTRIBUTE_DIRECTORY)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": exists and is not a directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DirEntry>> ListDirectory(const std::string& dir) {
  WIN32_FIND_DATAW data;
  HANDLE find = ::FindFirstFileExW(Utf8ToWide(absl::StrCat(dir, "\\*")).c_str(), FindExInfoBasic,
                                   &data, FindExSearchNameMatch, nullptr, 0);
  if (find == INVALID_HANDLE_VALUE) {
    return Win32Status("cannot list directory", dir, ::GetLastError());
  }
  std::vector<DirEntry> out;
  do {
    DirEntry entry;
    entry.name = WideToUtf8(data.cFileName);
    if (entry.name == "." || entry.name == "..") continue;
    entry.regular =
        (data.dwFileAttributes &
         (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DEVICE)) == 0;
    entry.bytes = (static_cast<uint64_t>(data.nFileSizeHigh) << 32) | data.nFileSizeLow;
    entry.allocated = (entry.bytes + 4095) / 4096 * 4096;
    entry.modified = FromFileTime(data.ftLastWriteTime);
    out.push_back(std::move(entry));
  } while (::FindNextFileW(find, &data));
  ::FindClose(find);
  return out;
}

std::string LocalHostName() {
  wchar_t buf[256];
  DWORD n = static_cast<DWORD>(std::size(buf));
  if (!::GetComputerNameExW(ComputerNameDnsHostname, buf, &n)) return "";
  return WideToUtf8(std::wstring(buf, n));
}

}  // namespace smbfleet

#include <windows.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/bench/file_prefix.h"
#include "common/files.h"

namespace smbfleet::agent::bench {

absl::StatusOr<std::string> ReadRegularFilePrefix(const std::string& path, size_t max_bytes) {
  // FILE_FLAG_OPEN_REPARSE_POINT: a symbolic link or junction is opened as itself, then refused.
  // The W call: path is UTF-8, which CreateFileA would read in the ANSI code page.
  HANDLE h =
      CreateFileW(Utf8ToWide(path).c_str(), GENERIC_READ,
                  FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                  FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_SEQUENTIAL_SCAN, nullptr);
  if (h == INVALID_HANDLE_VALUE) {
    const DWORD error = GetLastError();
    const std::string message = absl::StrCat("CreateFile: error ", error);
    if (error == ERROR_FILE_NOT_FOUND || error == ERROR_PATH_NOT_FOUND) {
      return absl::NotFoundError(message);
    }
    if (error == ERROR_ACCESS_DENIED || error == ERROR_SHARING_VIOLATION) {
      return absl::PermissionDeniedError(message);
    }
    return absl::UnavailableError(message);
  }
  BY_HANDLE_FILE_INFORMATION info{};
  if (!GetFileInformationByHandle(h, &info) || GetFileType(h) != FILE_TYPE_DISK ||
      (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT)) != 0) {
    CloseHandle(h);
    return absl::FailedPreconditionError("not a regular file");
  }
  // Reads must not move the last-access time the file's owner sees.
  FILETIME keep{0xFFFFFFFF, 0xFFFFFFFF};
  SetFileTime(h, nullptr, &keep, nullptr);
  std::string out(max_bytes, '\0');
  size_t have = 0;
  while (have < max_bytes) {
    DWORD n = 0;
    const DWORD want = static_cast<DWORD>(std::min<size_t>(max_bytes - have, 1u << 20));
    if (!::ReadFile(h, out.data() + have, want, &n, nullptr)) {
      const DWORD error = GetLastError();
      CloseHandle(h);
      return absl::UnavailableError(absl::StrCat("ReadFile: error ", error));
    }
    if (n == 0) break;
    have += n;
  }
  CloseHandle(h);
  out.resize(have);
  return out;
}

}  // namespace smbfleet::agent::bench

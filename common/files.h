#ifndef SMBFLEET_COMMON_FILES_H_
#define SMBFLEET_COMMON_FILES_H_

// The file system as the agent and the collector use it. One implementation per OS:
// files_posix.cc, or files_win.cc (Win32 W calls, paths UTF-8 here and UTF-16 for the OS, so that
// non-ASCII paths work). Paths may use '/' on Windows too; both separators are understood there.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace smbfleet {

// Reads a whole file. Fails with an error naming the path when it is missing, unreadable or
// larger than max_bytes.
absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes = 64 << 20);

// Writes through a temporary file "<path>.tmp.<pid>" in the same directory, fsyncs it, checks
// close(), renames it over path and fsyncs the directory, so that a reader sees the old content or
// the new one, never a torn file, and the new name survives a power cut once this returns. mode
// applies to the new file. A full disk (ENOSPC, EDQUOT) is ResourceExhausted.
// Windows: FlushFileBuffers, then MoveFileExW(MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH);
// mode is not used (the file gets its directory's inherited ACL).
absl::Status WriteFileAtomic(const std::string& path, absl::string_view content, int mode = 0644);

// WriteFileAtomic for secrets (private keys): mode 0600 on POSIX; on Windows an ACL that grants
// SYSTEM and Administrators only, not inherited, set when the temp file is created.
absl::Status WritePrivateFileAtomic(const std::string& path, absl::string_view content);

// True for the temporary name WriteFileAtomic uses ("<name>.tmp.<digits>"), so that a directory's
// owner can remove those a killed writer left behind.
bool IsAtomicWriteLeftover(absl::string_view file_name);

// Writes content to a new file "<prefix>XXXXXX" (a unique suffix, mkstemp on POSIX), flushed to
// disk and closed, and returns its name; on error the file is removed. For writers that rename
// it into place themselves (agent/core/durable_file.h).
absl::StatusOr<std::string> WriteUniqueTempFile(const std::string& prefix,
                                                absl::string_view content, int mode);

// rename(from, to), replacing to. Windows: MoveFileExW with MOVEFILE_REPLACE_EXISTING and
// MOVEFILE_WRITE_THROUGH. The directory is not synced (SyncDirectory).
absl::Status RenameFile(const std::string& from, const std::string& to);

// fsync of a directory, so that a rename, create or unlink in it is on disk. A no-op on Windows:
// NTFS journals its metadata, and a directory cannot be flushed through the Win32 API.
absl::Status SyncDirectory(const std::string& dir);

// unlink then fsync of the directory. A missing file is not an error.
absl::Status RemoveFileDurably(const std::string& path);

// unlink alone (no directory sync), for temp files and leftovers. A missing file is not an error.
absl::Status RemoveFile(const std::string& path);

bool FileExists(const std::string& path);

// Creates the directory and its parents (mode for the ones it creates; not used on Windows).
absl::Status MakeDirs(const std::string& path, int mode = 0755);

struct DirEntry {
  std::string name;
  bool regular = false;    // a regular file (not a directory, link or device)
  uint64_t bytes = 0;      // its size
  uint64_t allocated = 0;  // what it takes on disk (Windows: the size rounded up to 4 KiB)
  absl::Time modified;
};

// The entries of a directory except "." and "..", in no particular order.
absl::StatusOr<std::vector<DirEntry>> ListDirectory(const std::string& dir);

// This host's name (gethostname; Windows: its DNS host name), "" when the OS does not say.
std::string LocalHostName();

#ifdef _WIN32
// UTF-8 <-> UTF-16 for the Win32 W API. Invalid input is replaced (U+FFFD), never dropped.
std::wstring Utf8ToWide(absl::string_view utf8);
std::string WideToUtf8(const std::wstring& wide);
#endif

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_FILES_H_

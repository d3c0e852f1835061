#ifndef SMBFLEET_COMMON_FILES_H_
#define SMBFLEET_COMMON_FILES_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smbfleet {

// Reads a whole file. Fails with an error naming the path when it is missing, unreadable or
// larger than max_bytes.
absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes = 64 << 20);

// Writes through a temporary file "<path>.tmp.<pid>" in the same directory, fsyncs it, checks
// close(), renames it over path and fsyncs the directory, so that a reader sees the old content or
// the new one, never a torn file, and the new name survives a power cut once this returns. mode
// applies to the new file. A full disk (ENOSPC, EDQUOT) is ResourceExhausted.
absl::Status WriteFileAtomic(const std::string& path, absl::string_view content, int mode = 0644);

// True for the temporary name WriteFileAtomic uses ("<name>.tmp.<digits>"), so that a directory's
// owner can remove those a killed writer left behind.
bool IsAtomicWriteLeftover(absl::string_view file_name);

// fsync of a directory, so that a rename, create or unlink in it is on disk.
absl::Status SyncDirectory(const std::string& dir);

// unlink then fsync of the directory. A missing file is not an error.
absl::Status RemoveFileDurably(const std::string& path);

bool FileExists(const std::string& path);

// Creates the directory and its parents (mode for the ones it creates).
absl::Status MakeDirs(const std::string& path, int mode = 0755);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_FILES_H_

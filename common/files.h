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

// Writes through a temporary file in the same directory, fsyncs and renames, so that a reader
// sees the old content or the new one, never a torn file. mode applies to the new file.
absl::Status WriteFileAtomic(const std::string& path, absl::string_view content, int mode = 0644);

bool FileExists(const std::string& path);

// Creates the directory and its parents (mode for the ones it creates).
absl::Status MakeDirs(const std::string& path, int mode = 0755);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_FILES_H_

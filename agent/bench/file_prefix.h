#ifndef SMBFLEET_AGENT_BENCH_FILE_PREFIX_H_
#define SMBFLEET_AGENT_BENCH_FILE_PREFIX_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace smbfleet::agent::bench {

// Up to `max_bytes` from the start of the regular file at `path`, read-only, without following
// a symbolic link in the last component, without waiting on a FIFO or device and (where the OS
// lets the caller) without touching its access time. NotFound when it is gone,
// PermissionDenied when it may not be read, FailedPrecondition when it is not a regular file
// (or is a link).
absl::StatusOr<std::string> ReadRegularFilePrefix(const std::string& path, size_t max_bytes);

}  // namespace smbfleet::agent::bench

#endif  // SMBFLEET_AGENT_BENCH_FILE_PREFIX_H_

#include <windows.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "agent/bench/thread_priority.h"

namespace smbfleet::agent::bench {

absl::Status LowerCurrentThreadPriority() {
  if (SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_IDLE)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("SetThreadPriority(THREAD_PRIORITY_IDLE) failed: error ", GetLastError()));
}

absl::Status LowerCurrentThreadIoPriority() {
  if (SetThreadPriority(GetCurrentThread(), THREAD_MODE_BACKGROUND_BEGIN)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "SetThreadPriority(THREAD_MODE_BACKGROUND_BEGIN) failed: error ", GetLastError()));
}

double ThreadCpuSeconds() {
  FILETIME created, exited, kernel, user;
  if (!GetThreadTimes(GetCurrentThread(), &created, &exited, &kernel, &user)) {
    return 0;
  }
  auto ticks = [](const FILETIME& t) {
    return (static_cast<uint64_t>(t.dwHighDateTime) << 32) | t.dwLowDateTime;
  };
  return static_cast<double>(ticks(kernel) + ticks(user)) * 1e-7;  // 100 ns ticks
}

}  // namespace smbfleet::agent::bench

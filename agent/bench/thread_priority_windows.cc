#include <windows.h>

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

}  // namespace smbfleet::agent::bench

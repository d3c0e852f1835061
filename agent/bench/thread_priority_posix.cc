#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/bench/thread_priority.h"

namespace smbfleet::agent::bench {

absl::Status LowerCurrentThreadPriority() {
#ifdef SCHED_IDLE
  sched_param param{};
  param.sched_priority = 0;
  if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &param) == 0) {
    return absl::OkStatus();
  }
#endif
#ifdef __linux__
  // On Linux a thread id given to setpriority(PRIO_PROCESS) changes that thread only.
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19) == 0) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("cannot lower the benchmark thread's priority: ", std::strerror(errno)));
#else
  return absl::UnimplementedError("no per-thread priority on this platform");
#endif
}

}  // namespace smbfleet::agent::bench

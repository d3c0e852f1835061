#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

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

absl::Status LowerCurrentThreadIoPriority() {
#if defined(__linux__) && defined(SYS_ioprio_set)
  // <linux/ioprio.h> is not in every libc's headers: the ABI's constants.
  constexpr int kIoprioWhoProcess = 1;  // with id 0: the calling thread
  constexpr int kIoprioClassIdle = 3;
  constexpr int kIoprioClassShift = 13;
  if (syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, kIoprioClassIdle << kIoprioClassShift) == 0) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("cannot lower the thread's I/O priority: ", std::strerror(errno)));
#else
  return absl::UnimplementedError("no per-thread I/O priority on this platform");
#endif
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace smbfleet::agent::bench

#ifndef SMBFLEET_AGENT_BENCH_THREAD_PRIORITY_H_
#define SMBFLEET_AGENT_BENCH_THREAD_PRIORITY_H_

#include "absl/status/status.h"

namespace smbfleet::agent::bench {

// Moves the calling thread (only it, not the process) to the lowest scheduling priority the OS
// offers: SCHED_IDLE on Linux (nice 19 where SCHED_IDLE is refused), THREAD_PRIORITY_IDLE on
// Windows. Error when the OS refused everything.
absl::Status LowerCurrentThreadPriority();

}  // namespace smbfleet::agent::bench

#endif  // SMBFLEET_AGENT_BENCH_THREAD_PRIORITY_H_

#ifndef SMBFLEET_AGENT_BENCH_THREAD_PRIORITY_H_
#define SMBFLEET_AGENT_BENCH_THREAD_PRIORITY_H_

#include "absl/status/status.h"

namespace smbfleet::agent::bench {

// Moves the calling thread (only it, not the process) to the lowest scheduling priority the OS
// offers: SCHED_IDLE on Linux (nice 19 where SCHED_IDLE is refused), THREAD_PRIORITY_IDLE on
// Windows. Error when the OS refused everything.
absl::Status LowerCurrentThreadPriority();

// Moves the calling thread (only it) to the lowest I/O priority: IOPRIO_CLASS_IDLE on Linux,
// background mode on Windows (which also lowers its CPU priority). Error when the OS refused.
absl::Status LowerCurrentThreadIoPriority();

// CPU seconds the calling thread has used: the divisor of every benchmark rate, so that a
// thread waiting behind other work does not report a slower CPU.
double ThreadCpuSeconds();

}  // namespace smbfleet::agent::bench

#endif  // SMBFLEET_AGENT_BENCH_THREAD_PRIORITY_H_

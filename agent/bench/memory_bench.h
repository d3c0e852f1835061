#ifndef SMBFLEET_AGENT_BENCH_MEMORY_BENCH_H_
#define SMBFLEET_AGENT_BENCH_MEMORY_BENCH_H_

// The on-host memory benchmark: the CPU cost of one minor page fault. Samba's smbd reads each
// large READ into memory its allocator has just obtained from the kernel, so every page it
// serves may be a fault; where faults are dear (virtual machines, kernels with page-table
// isolation) they are much of smbd's CPU per byte, and the cost model adds them
// (policy/cost, docs/cost-model.md "page faults").
//
// Method: the benchmark thread writes `rounds` fresh anonymous mappings of `mapping_bytes`
// (mapped, written whole, unmapped: what smbd's allocator does with an 8 MiB buffer it does not
// reuse) and the same bytes into one mapping it has already touched; the difference in thread
// CPU time over the faults the fresh writes took (the kernel's own count for the thread) is
// the cost of a fault. Repeated `trials` times; the median is reported.
//
// The thread runs at idle priority, so on a busy host it may get almost no CPU: the agent's
// report waits for its benchmarks, and the run gives up once `give_up_after` of wall clock has
// passed (the figures are then left out, as the crypto benchmark's are).

#include <chrono>
#include <cstddef>

#include "absl/status/statusor.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::bench {

struct MemoryBenchOptions {
  size_t mapping_bytes = 8u << 20;  // smbd's buffer for one 8 MiB READ (`smb2 max read`)
  unsigned rounds = 4;              // fresh mappings per trial
  unsigned trials = 3;
  bool lowest_priority = true;
  // Wall clock from the start: 0.03-0.3 s of CPU is the whole run on an idle host.
  std::chrono::steady_clock::duration give_up_after = std::chrono::seconds(3);
};

// InvalidArgument for bad options (a mapping under one page or over 64 MiB, no rounds or more
// than 64, no trials or more than 9, no time to give up after); ResourceExhausted when the OS
// refuses a mapping; Unavailable when the fresh writes took no fault (nothing to divide by);
// DeadlineExceeded when the run gave up (host busy); Unimplemented on
// Windows (its SMB server works in the kernel, where the model adds no fault term).
absl::StatusOr<smbfleet::v1::MemoryBenchmark> RunPageFaultBenchmark(
    const MemoryBenchOptions& options);

}  // namespace smbfleet::agent::bench

#endif  // SMBFLEET_AGENT_BENCH_MEMORY_BENCH_H_

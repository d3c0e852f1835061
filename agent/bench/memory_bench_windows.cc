#include "absl/status/status.h"
#include "agent/bench/memory_bench.h"

namespace smbfleet::agent::bench {

absl::StatusOr<smbfleet::v1::MemoryBenchmark> RunPageFaultBenchmark(const MemoryBenchOptions&) {
  return absl::UnimplementedError(
      "the page-fault benchmark is measured on Linux hosts only: the Windows SMB server "
      "serves from the kernel, where the cost model adds no fault term");
}

}  // namespace smbfleet::agent::bench

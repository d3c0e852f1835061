#include "agent/bench/memory_bench.h"

#ifndef _WIN32
#include <unistd.h>
#endif

#include <chrono>

#include "gtest/gtest.h"

namespace smbfleet::agent::bench {
namespace {

#ifndef _WIN32

MemoryBenchOptions Small() {
  MemoryBenchOptions options;
  options.mapping_bytes = 2u << 20;
  options.rounds = 2;
  options.trials = 3;
  options.lowest_priority = false;  // a busy machine may hold an idle thread back for long
  return options;
}

TEST(MemoryBenchTest, FreshPagesCostMoreThanTouchedOnes) {
  auto result = RunPageFaultBenchmark(Small());
  ASSERT_TRUE(result.ok()) << result.status();
  const long page = sysconf(_SC_PAGESIZE);
  EXPECT_EQ(result->page_bytes(), static_cast<uint64_t>(page));
  // The kernel counted the faults of the fresh writes: at most one per page written (fewer with
  // transparent huge pages), and some.
  const uint64_t pages = Small().rounds * Small().mapping_bytes / static_cast<uint64_t>(page);
  EXPECT_GT(result->faults(), 0u);
  EXPECT_LE(result->faults(), pages + 64);  // what else the thread faulted in meanwhile
  // Writing fresh pages costs the faults on top of the same writes into touched ones.
  EXPECT_GT(result->page_fault_seconds(), 0);
  EXPECT_GT(result->measured_at().seconds(), 0);
}

TEST(MemoryBenchTest, RejectsOptionsOutsideTheirBounds) {
  MemoryBenchOptions options = Small();
  options.mapping_bytes = 1;
  EXPECT_EQ(RunPageFaultBenchmark(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = Small();
  options.mapping_bytes = 65u << 20;
  EXPECT_EQ(RunPageFaultBenchmark(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = Small();
  options.rounds = 0;
  EXPECT_EQ(RunPageFaultBenchmark(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = Small();
  options.trials = 10;
  EXPECT_EQ(RunPageFaultBenchmark(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = Small();
  options.give_up_after = std::chrono::steady_clock::duration::zero();
  EXPECT_EQ(RunPageFaultBenchmark(options).status().code(), absl::StatusCode::kInvalidArgument);
}

// At idle priority on a busy host the thread may get no CPU for minutes, and the agent's report
// waits for it: past its time the run stops and says why, leaving no figure.
TEST(MemoryBenchTest, GivesUpOnceItsTimeHasPassed) {
  MemoryBenchOptions options = Small();
  options.give_up_after = std::chrono::nanoseconds(1);  // passed before the first write
  auto result = RunPageFaultBenchmark(options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(result.status().message().find("host busy"), absl::string_view::npos)
      << result.status();
}

#else

TEST(MemoryBenchTest, NotMeasuredOnWindows) {
  EXPECT_EQ(RunPageFaultBenchmark(MemoryBenchOptions()).status().code(),
            absl::StatusCode::kUnimplemented);
}

#endif

}  // namespace
}  // namespace smbfleet::agent::bench

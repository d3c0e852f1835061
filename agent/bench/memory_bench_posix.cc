#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/bench/memory_bench.h"
#include "agent/bench/thread_priority.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::agent::bench {
namespace {

constexpr size_t kMaxMappingBytes = 64u << 20;

// Minor faults the calling thread has taken (the whole process's where the OS does not count
// per thread).
uint64_t MinorFaults() {
  rusage usage{};
#ifdef RUSAGE_THREAD
  if (getrusage(RUSAGE_THREAD, &usage) == 0) return static_cast<uint64_t>(usage.ru_minflt);
#endif
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_minflt);
}

absl::StatusOr<void*> MapAnonymous(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap of ", bytes, " bytes failed: ", std::strerror(errno)));
  }
  return p;
}

struct Trial {
  double seconds_per_fault = 0;
  uint64_t faults = 0;
};

using SteadyClock = std::chrono::steady_clock;

absl::Status GaveUp(const MemoryBenchOptions& options) {
  return absl::DeadlineExceededError(absl::StrCat(
      "page-fault benchmark: not done within ",
      std::chrono::duration_cast<std::chrono::milliseconds>(options.give_up_after).count(),
      " ms (host busy)"));
}

// One trial: the same writes into fresh mappings and into `warm`. The last byte of each write
// is read back through a volatile pointer so that no write can be dropped as dead. Gives up
// between writes once `give_up` has passed.
absl::StatusOr<Trial> RunTrial(const MemoryBenchOptions& options, unsigned char* warm,
                               SteadyClock::time_point give_up) {
  const size_t bytes = options.mapping_bytes;
  double start = ThreadCpuSeconds();
  for (unsigned r = 0; r < options.rounds; ++r) {
    if (SteadyClock::now() >= give_up) return GaveUp(options);
    std::memset(warm, static_cast<int>(r + 1), bytes);
    (void)static_cast<volatile unsigned char*>(warm)[bytes - 1];
  }
  const double reused = ThreadCpuSeconds() - start;

  const uint64_t faults_before = MinorFaults();
  start = ThreadCpuSeconds();
  for (unsigned r = 0; r < options.rounds; ++r) {
    if (SteadyClock::now() >= give_up) return GaveUp(options);
    absl::StatusOr<void*> fresh = MapAnonymous(bytes);
    if (!fresh.ok()) return fresh.status();
    auto* p = static_cast<unsigned char*>(*fresh);
    std::memset(p, static_cast<int>(r + 1), bytes);
    (void)static_cast<volatile unsigned char*>(p)[bytes - 1];
    munmap(p, bytes);
  }
  const double fresh_seconds = ThreadCpuSeconds() - start;
  Trial trial;
  trial.faults = MinorFaults() - faults_before;
  if (trial.faults == 0) {
    return absl::UnavailableError(absl::StrCat("writing ", options.rounds, " fresh mappings of ",
                                               bytes,
                                               " bytes took no page fault: nothing to measure"));
  }
  trial.seconds_per_fault =
      std::max(0.0, fresh_seconds - reused) / static_cast<double>(trial.faults);
  return trial;
}

absl::StatusOr<smbfleet::v1::MemoryBenchmark> Measure(const MemoryBenchOptions& options) {
  const SteadyClock::time_point give_up = SteadyClock::now() + options.give_up_after;
  if (options.lowest_priority) {
    // A refusal leaves the figure right (CPU time is the measure), only the run less polite.
    (void)LowerCurrentThreadPriority();
  }
  absl::StatusOr<void*> mapped = MapAnonymous(options.mapping_bytes);
  if (!mapped.ok()) return mapped.status();
  auto* warm = static_cast<unsigned char*>(*mapped);
  std::memset(warm, 0xff, options.mapping_bytes);  // its faults, before any timing
  std::vector<Trial> trials;
  absl::Status failed;
  for (unsigned t = 0; t < options.trials && failed.ok(); ++t) {
    absl::StatusOr<Trial> trial = RunTrial(options, warm, give_up);
    if (trial.ok()) {
      trials.push_back(*trial);
    } else {
      failed = trial.status();
    }
  }
  munmap(warm, options.mapping_bytes);
  if (!failed.ok()) return failed;
  std::sort(trials.begin(), trials.end(), [](const Trial& a, const Trial& b) {
    return a.seconds_per_fault < b.seconds_per_fault;
  });
  const Trial& median = trials[trials.size() / 2];
  smbfleet::v1::MemoryBenchmark out;
  out.set_page_fault_seconds(median.seconds_per_fault);
  out.set_faults(median.faults);
  out.set_page_bytes(static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  *out.mutable_measured_at() = google::protobuf::util::TimeUtil::GetCurrentTime();
  return out;
}

}  // namespace

absl::StatusOr<smbfleet::v1::MemoryBenchmark> RunPageFaultBenchmark(
    const MemoryBenchOptions& options) {
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || options.mapping_bytes < static_cast<size_t>(page) ||
      options.mapping_bytes > kMaxMappingBytes) {
    return absl::InvalidArgumentError(absl::StrCat("mapping of ", options.mapping_bytes,
                                                   " bytes: want one page (", page, ") to ",
                                                   kMaxMappingBytes));
  }
  if (options.rounds == 0 || options.rounds > 64) {
    return absl::InvalidArgumentError(absl::StrCat("rounds ", options.rounds, ": want 1 to 64"));
  }
  if (options.trials == 0 || options.trials > 9) {
    return absl::InvalidArgumentError(absl::StrCat("trials ", options.trials, ": want 1 to 9"));
  }
  if (options.give_up_after <= SteadyClock::duration::zero()) {
    return absl::InvalidArgumentError("give_up_after: want a time above zero");
  }
  // A thread of its own, so that lowering its priority leaves the caller's alone.
  absl::StatusOr<smbfleet::v1::MemoryBenchmark> result =
      absl::InternalError("the benchmark thread did not run");
  std::thread worker([&] { result = Measure(options); });
  worker.join();
  return result;
}

}  // namespace smbfleet::agent::bench

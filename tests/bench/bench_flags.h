#ifndef SMBFLEET_TESTS_BENCH_BENCH_FLAGS_H_
#define SMBFLEET_TESTS_BENCH_BENCH_FLAGS_H_

// What the PostgreSQL benchmarks (change_store_bench, host_search_bench, push_bench) share:
// their --name=N flags, elapsed milliseconds and percentiles of their samples.

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace smbfleet::tests::bench {

// The value of --name=N on the command line, or `fallback` when absent or not a number.
inline int IntFlag(int argc, char** argv, const char* name, int fallback) {
  const std::string prefix = absl::StrCat("--", name, "=");
  for (int i = 1; i < argc; ++i) {
    int value = 0;
    if (absl::StartsWith(argv[i], prefix) &&
        absl::SimpleAtoi(std::string(argv[i]).substr(prefix.size()), &value)) {
      return value;
    }
  }
  return fallback;
}

// Milliseconds since `start` on the steady clock.
inline double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The p-th (0 to 1) of the samples, the lower one where p falls between two; 0 without any.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace smbfleet::tests::bench

#endif  // SMBFLEET_TESTS_BENCH_BENCH_FLAGS_H_

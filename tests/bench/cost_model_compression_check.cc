// Is the cost model's compression CPU this host's? Runs the agent's compression benchmark with
// the agent's defaults (1 MiB per corpus, its budget; normal priority), builds the model's host
// profile from those rows, then compresses N MiB of each corpus with XPRESS Huffman on this thread,
// timed by the thread's CPU clock, and prints the model's CPU term for the same bytes beside it,
// with the error, as JSON.
//
//   cost_model_compression_check [--mib=32] [--repeats=3]
//
// Each corpus is compressed `repeats` times; the smallest CPU time counts (other work on the
// machine only ever adds to it).

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "agent/bench/compression_bench.h"
#include "nlohmann/json.hpp"
#include "policy/cost/cost_model.h"
#include "tests/bench/cost_model_compression.h"

namespace {

namespace v1 = ::smbfleet::v1;
namespace cost = ::smbfleet::policy::cost;
namespace bench = ::smbfleet::agent::bench;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

bool ParseCount(absl::string_view arg, absl::string_view flag, int low, int high, int* out) {
  if (!absl::ConsumePrefix(&arg, flag)) {
    return false;
  }
  int v = 0;
  if (!absl::SimpleAtoi(arg, &v) || v < low || v > high) {
    std::fprintf(stderr, "%.*s: want a whole number from %d to %d\n",
                 static_cast<int>(flag.size() - 1), flag.data(), low, high);
    std::exit(2);
  }
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int mib = 32;
  int repeats = 3;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (!ParseCount(arg, "--mib=", 1, 256, &mib) &&
        !ParseCount(arg, "--repeats=", 1, 20, &repeats)) {
      std::fprintf(stderr, "unknown argument: %s\nusage: %s [--mib=32] [--repeats=3]\n", argv[i],
                   argv[0]);
      return 2;
    }
  }

  bench::CompressionBenchOptions options;
  // Normal priority, so that a busy machine does not starve cells out of the run; the rates are
  // per second of CPU time, as the agent's.
  options.lowest_priority = false;
  auto rows = bench::RunCompressionBenchmark(options);
  if (!rows.ok()) {
    std::fprintf(stderr, "compression benchmark: %s\n", rows.status().ToString().c_str());
    return 1;
  }
  v1::Posture posture;
  for (const v1::CompressionBenchmark& row : *rows) {
    *posture.add_compression_benchmarks() = row;
  }
  const cost::HostProfile host = cost::ProfileFromPosture(posture);

  nlohmann::json out;
  out["mib"] = mib;
  out["repeats"] = repeats;
  out["algorithm"] = "XPRESS Huffman";
  double worst = 0;
  for (const std::string& corpus : bench::CorpusKinds()) {
    const uint64_t bytes = static_cast<uint64_t>(mib) << 20;
    auto input = bench::MakeCorpus(corpus, bytes, /*seed=*/17);
    if (!input.ok()) {
      std::fprintf(stderr, "%s: %s\n", corpus.c_str(), input.status().ToString().c_str());
      return 1;
    }
    bench::CompressionMeasureOptions options;
    options.decompress = false;
    double best = 0;
    double ratio = 0;
    for (int r = 0; r < repeats; ++r) {
      double start = ThreadCpuSeconds();
      auto result = bench::MeasureCompression(v1::COMPRESSION_LZ77_HUFFMAN, *input, options);
      double seconds = ThreadCpuSeconds() - start;
      if (!result.ok()) {
        std::fprintf(stderr, "%s: %s\n", corpus.c_str(), result.status().ToString().c_str());
        return 1;
      }
      ratio = result->ratio;
      best = r == 0 ? seconds : std::min(best, seconds);
    }
    smbfleet::tests::bench::CpuTermCheck check =
        smbfleet::tests::bench::CompareCpuTerm(host, corpus, bytes, best);
    const cost::CompressionCost figures =
        cost::CompressionCostFor(host, corpus, cost::DefaultParameters());
    worst = std::max(worst, std::abs(check.error));
    out["corpora"].push_back({
        {"corpus", corpus},
        {"bytes", bytes},
        {"benchmark_compress_mb_s", 1e-6 / figures.compress_seconds_per_byte},
        {"benchmark_ratio", figures.ratio},
        {"ratio", ratio},
        {"model_cpu_seconds", check.predicted_seconds},
        {"measured_cpu_seconds", check.measured_seconds},
        {"error", check.error},
    });
  }
  out["worst_abs_error"] = worst;
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

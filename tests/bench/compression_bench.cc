// The agent's compression benchmark at length: per algorithm and corpus, compress and decompress
// throughput of one thread (MB/s of input per CPU second) and ratio, as medians of --repeats
// runs, then one run of the agent's own call (RunCompressionBenchmark with its defaults) and how
// long that took. Prints one JSON document; no timing goal is asserted anywhere.
//
//   compression_bench [--corpus_mib=8] [--repeats=5] [--ms_per_cell=300] [--quick]
//
// --quick (for the ctest smoke) runs 256 KiB corpora once with short cells.

#include "agent/bench/compression_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace {

namespace bench = ::smbfleet::agent::bench;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool IntFlag(absl::string_view arg, absl::string_view name, int lo, int hi, int* out) {
  if (!absl::ConsumePrefix(&arg, name)) return false;
  if (!absl::SimpleAtoi(arg, out) || *out < lo || *out > hi) {
    std::fprintf(stderr, "%.*s want %d..%d\n", static_cast<int>(name.size()), name.data(), lo, hi);
    std::exit(2);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int corpus_mib = 8;
  int repeats = 5;
  int ms_per_cell = 300;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (IntFlag(arg, "--corpus_mib=", 1, 256, &corpus_mib) ||
        IntFlag(arg, "--repeats=", 1, 20, &repeats) ||
        IntFlag(arg, "--ms_per_cell=", 1, 10000, &ms_per_cell)) {
      continue;
    }
    if (arg == "--quick") {
      quick = true;
      continue;
    }
    std::fprintf(stderr, "unknown argument: %s\n", argv[i]);
    return 2;
  }
  const size_t corpus_bytes = quick ? 256u << 10 : static_cast<size_t>(corpus_mib) << 20;
  if (quick) {
    repeats = 1;
    ms_per_cell = 20;
  }

  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& kind : bench::CorpusKinds()) {
    auto corpus = bench::MakeCorpus(kind, corpus_bytes, bench::CompressionBenchOptions{}.seed);
    if (!corpus.ok()) {
      std::fprintf(stderr, "%s\n", std::string(corpus.status().message()).c_str());
      return 1;
    }
    for (auto algorithm : bench::CompressionAlgorithms()) {
      std::vector<double> compress, decompress;
      double ratio = 0;
      bench::CompressionMeasureOptions options;
      options.min_time = std::chrono::milliseconds(ms_per_cell / 2);
      for (int r = 0; r < repeats; ++r) {
        auto result = bench::MeasureCompression(algorithm, *corpus, options);
        if (!result.ok()) {
          std::fprintf(stderr, "%s\n", std::string(result.status().message()).c_str());
          return 1;
        }
        compress.push_back(result->compress_bytes_per_second);
        decompress.push_back(result->decompress_bytes_per_second);
        ratio = result->ratio;
      }
      rows.push_back({{"algorithm", smbfleet::v1::CompressionAlgorithm_Name(algorithm)},
                      {"corpus", kind},
                      {"inputBytes", corpus_bytes},
                      {"compressMBps", Median(compress) / 1e6},
                      {"decompressMBps", Median(decompress) / 1e6},
                      {"ratio", ratio},
                      {"repeats", repeats}});
    }
  }

  // The agent's own call, as the agent makes it: the default budget and corpora.
  const auto start = std::chrono::steady_clock::now();
  auto agent_rows = bench::RunCompressionBenchmark(bench::CompressionBenchOptions{});
  const double agent_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!agent_rows.ok()) {
    std::fprintf(stderr, "%s\n", std::string(agent_rows.status().message()).c_str());
    return 1;
  }
  nlohmann::json agent = nlohmann::json::array();
  for (const auto& row : *agent_rows) {
    agent.push_back({{"algorithm", smbfleet::v1::CompressionAlgorithm_Name(row.algorithm())},
                     {"corpus", row.corpus()},
                     {"compressMBps", row.compress_bytes_per_second() / 1e6},
                     {"decompressMBps", row.decompress_bytes_per_second() / 1e6},
                     {"ratio", row.ratio()}});
  }
  nlohmann::json doc = {
      {"rows", rows},
      {"agentRun",
       {{"rows", agent},
        {"wallSeconds", agent_seconds},
        {"budgetSeconds", bench::CompressionBenchOptions{}.budget.count() / 1e3}}}};
  std::printf("%s\n", doc.dump(2).c_str());
  return 0;
}

// The cost model's compression arithmetic, and the published case: Windows Server 2022
// replicating VM backups over a 1 Gbit link went from ~110 MB/s at ~15% server CPU to ~160 MB/s
// (+45%) at ~28% (~1.9x) with SMB compression.
//
// Tolerance, and why: the model is fed the published link and baseline, the ratio the agent's
// benchmark measures on its vm-disk corpus (deterministic: the same bytes and compressor on
// every host) and a compression speed. It is not fed the published host's CPU, its core count
// (not published; 8 logical cores assumed, a common file server VM) or its XPRESS
// implementation (Windows' own; ours is wimlib's). The check is therefore on direction and
// size, not on the figure: throughput gain within [+20%, +80%] (a gain, less than the 1.9x the
// ratio alone would allow, around +45%) and CPU after/before within [1.4, 3.0] (~1.9x
// published; core counts of 6 to 16 move the prediction across most of that range). With this
// host's speed instead of the reference host's, the upper bound of the gain is what the link
// allows with the ratio (see PublishedCaseWithThisHostsSpeed).

#include "tests/bench/cost_model_compression.h"

#include <chrono>
#include <cstdio>

#include "agent/bench/compression_bench.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/cost/compression_row_testing.h"

namespace smbfleet::tests::bench {
namespace {

namespace v1 = ::smbfleet::v1;
namespace cost = ::smbfleet::policy::cost;

constexpr double kGainLow = 0.20, kGainHigh = 0.80;
constexpr double kCpuRatioLow = 1.4, kCpuRatioHigh = 3.0;

TEST(CostModelCompressionTest, CpuTermIsBytesOverCompressSpeed) {
  cost::HostProfile host;
  host.logical_cores = 4;
  google::protobuf::RepeatedPtrField<v1::CompressionBenchmark> rows;
  *rows.Add() = cost::CompressionRow(v1::COMPRESSION_LZ77_HUFFMAN, "text", 5, 200e6, 800e6);
  host.compression = cost::FitCompressionCosts(rows);
  // 100 MB at 200 MB/s: 0.5 s of the server's CPU, whatever the link and the ratio.
  EXPECT_NEAR(ModelCompressSeconds(host, "text", 100'000'000), 0.5, 1e-9);
  CpuTermCheck c = CompareCpuTerm(host, "text", 100'000'000, 0.4);
  EXPECT_NEAR(c.predicted_seconds, 0.5, 1e-9);
  EXPECT_NEAR(c.error, 0.25, 1e-9);
  EXPECT_EQ(ModelCompressSeconds(host, "no-such-corpus", 100'000'000), 0);
}

// The ratio of the benchmark's own vm-disk corpus, 16 MiB, with its seed.
double VmDiskRatio() {
  auto corpus = agent::bench::MakeCorpus("vm-disk", 16 << 20, 17);
  EXPECT_TRUE(corpus.ok()) << corpus.status();
  agent::bench::CompressionMeasureOptions options;
  options.decompress = false;
  auto r = agent::bench::MeasureCompression(v1::COMPRESSION_LZ77_HUFFMAN, *corpus, options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->ratio : 0;
}

void ExpectPublishedSize(const PublishedPrediction& p, double gain_high = kGainHigh) {
  std::printf(
      "{\"throughput_before_mb_s\": %.1f, \"throughput_after_mb_s\": %.1f, \"gain\": %.3f, "
      "\"cpu_before\": %.3f, \"cpu_after\": %.3f, \"cpu_ratio\": %.2f}\n%s\n",
      p.throughput_before / 1e6, p.throughput_after / 1e6, p.throughput_gain, p.cpu_before,
      p.cpu_after, p.cpu_ratio, p.summary.c_str());
  // The model's link part reproduces the published baseline (108 vs ~110 MB/s).
  EXPECT_NEAR(p.throughput_before / 1e6, 110, 110 * 0.05);
  EXPECT_NEAR(p.cpu_before, 0.15, 0.01);
  EXPECT_GE(p.throughput_gain, kGainLow);
  EXPECT_LE(p.throughput_gain, gain_high);
  EXPECT_GE(p.cpu_ratio, kCpuRatioLow);
  EXPECT_LE(p.cpu_ratio, kCpuRatioHigh);
}

// The speed stated: XPRESS Huffman on vm-disk on the reference host of docs/cost-model.md
// (153 MB/s compress, 606 MB/s decompress per thread); the ratio measured now.
TEST(CostModelCompressionTest, PublishedCaseWithTheReferenceHostSpeed) {
  double ratio = VmDiskRatio();
  ASSERT_GT(ratio, 1.5);  // zero runs and text in the corpus; random extents keep it below 3
  ASSERT_LT(ratio, 3.0);
  google::protobuf::RepeatedPtrField<v1::CompressionBenchmark> rows;
  *rows.Add() =
      cost::CompressionRow(v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", ratio, 153e6, 606e6, 16 << 20);
  PublishedPrediction p = PredictPublishedCase(PublishedCase{}, rows);
  ExpectPublishedSize(p);
  // The compressor, one core per connection, is what holds it below ratio x link.
  EXPECT_EQ(p.limit_after, cost::Prediction::Limit::kCpu);
}

// This host's speed, from the agent's own benchmark of the vm-disk corpus (rates per second of
// the benchmark thread's CPU time). The figure is not held to the published range: that range is
// for the reference host's speed, and a slower or busier host (a loaded CI machine measured 110
// MB/s) rightly gets less gain, down to none. What must hold at any speed: the baseline does not
// move, the gain never exceeds what the ratio allows over the link, compression costs CPU, the
// prediction moves with the speed in the right direction against the reference host's, and when
// the compressor is the limit, it is this host's speed that limits.
TEST(CostModelCompressionTest, PublishedCaseWithThisHostsSpeed) {
  agent::bench::CompressionBenchOptions options;
  options.corpora = {"vm-disk"};
  options.algorithms = {v1::COMPRESSION_LZ77_HUFFMAN};
  options.corpus_bytes = 4 << 20;
  options.budget = std::chrono::milliseconds(400);
  // Normal priority: at idle priority a busy machine can starve the run until the cell is left
  // out; the rate is per second of the thread's CPU time either way.
  options.lowest_priority = false;
  auto rows = agent::bench::RunCompressionBenchmark(options);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  google::protobuf::RepeatedPtrField<v1::CompressionBenchmark> field(rows->begin(), rows->end());
  const double speed = field[0].compress_bytes_per_second();
  const double ratio = field[0].ratio();
  std::printf("this host: XPRESS Huffman vm-disk %.0f MB/s compress, ratio %.3f\n", speed / 1e6,
              ratio);
  PublishedPrediction here = PredictPublishedCase(PublishedCase{}, field);

  // The same row with the reference host's compression speed (docs/cost-model.md).
  constexpr double kReferenceSpeed = 153e6;
  google::protobuf::RepeatedPtrField<v1::CompressionBenchmark> reference_rows;
  *reference_rows.Add() =
      cost::CompressionRow(v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", ratio, kReferenceSpeed,
                           field[0].decompress_bytes_per_second(), field[0].input_bytes());
  PublishedPrediction reference = PredictPublishedCase(PublishedCase{}, reference_rows);
  std::printf("{\"this_host_gain\": %.3f, \"reference_speed_gain\": %.3f}\n", here.throughput_gain,
              reference.throughput_gain);

  EXPECT_NEAR(here.throughput_before / 1e6, 110, 110 * 0.05);
  EXPECT_NEAR(here.cpu_before, 0.15, 0.01);
  EXPECT_LE(here.throughput_gain, ratio - 1 + 1e-9);
  EXPECT_GT(here.cpu_after, here.cpu_before);
  if (speed < kReferenceSpeed) {
    EXPECT_LE(here.throughput_gain, reference.throughput_gain + 1e-9);
  } else {
    EXPECT_GE(here.throughput_gain, reference.throughput_gain - 1e-9);
  }
  if (here.limit_after == cost::Prediction::Limit::kCpu) {
    EXPECT_LE(here.throughput_after, speed * (1 + 1e-9));
  }
}

// Writes (the client compresses, the server decompresses) cost the server far less.
TEST(CostModelCompressionTest, PublishedCaseAsWritesCostsTheServerLess) {
  google::protobuf::RepeatedPtrField<v1::CompressionBenchmark> rows;
  *rows.Add() =
      cost::CompressionRow(v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 1.88, 153e6, 606e6, 16 << 20);
  PublishedPrediction read = PredictPublishedCase(PublishedCase{}, rows);
  PublishedPrediction write =
      PredictPublishedCase(PublishedCase{}, rows, cost::Workload::Direction::kWrite);
  EXPECT_LT(write.cpu_after / write.throughput_after, read.cpu_after / read.throughput_after);
}

}  // namespace
}  // namespace smbfleet::tests::bench

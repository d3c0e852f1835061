#include "agent/bench/compression_bench.h"

#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::bench {
namespace {

using ::smbfleet::v1::CompressionAlgorithm;

std::string Corpus(const std::string& kind, size_t bytes = 1 << 20, uint64_t seed = 17) {
  absl::StatusOr<std::string> corpus = MakeCorpus(kind, bytes, seed);
  EXPECT_TRUE(corpus.ok()) << corpus.status();
  return corpus.ok() ? *std::move(corpus) : std::string();
}

double Ratio(CompressionAlgorithm algorithm, const std::string& input) {
  absl::StatusOr<CompressionResult> r = MeasureCompression(algorithm, input);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->ratio : 0;
}

TEST(MakeCorpusTest, DeterministicPerKindSizeAndSeed) {
  for (const std::string& kind : CorpusKinds()) {
    SCOPED_TRACE(kind);
    std::string a = Corpus(kind, 300'001, 5);
    EXPECT_EQ(a.size(), 300'001u);
    EXPECT_EQ(a, Corpus(kind, 300'001, 5));
    EXPECT_NE(a, Corpus(kind, 300'001, 6));
  }
  EXPECT_NE(Corpus("text", 65536), Corpus("vm-disk", 65536));
}

TEST(MakeCorpusTest, TextLooksLikeLogLines) {
  std::string text = Corpus("text", 1 << 16);
  EXPECT_NE(text.find("Z INFO "), std::string::npos);
  EXPECT_NE(text.find("STATUS_ACCESS_DENIED"), std::string::npos);
  size_t lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  EXPECT_GT(lines, 300u);  // about 120 bytes a line
}

TEST(MakeCorpusTest, VmDiskHasZeroRunsAndIncompressibleBlocks) {
  std::string disk = Corpus("vm-disk", 8 << 20);
  size_t zero_blocks = 0;
  for (size_t at = 0; at + 4096 <= disk.size(); at += 4096) {
    zero_blocks += disk.find_first_not_of('\0', at) >= at + 4096 ? 1 : 0;
  }
  // 25% by construction; other kinds may hold an all-zero block by chance, hardly ever.
  EXPECT_EQ(zero_blocks, 512u);
  // Small corpora hold the mix too, so a 1 MiB run compares with an 8 MiB one.
  for (CompressionAlgorithm algorithm : CompressionAlgorithms()) {
    const double small = Ratio(algorithm, Corpus("vm-disk", 1 << 20));
    const double large = Ratio(algorithm, disk);
    EXPECT_NEAR(small / large, 1.0, 0.05) << smbfleet::v1::CompressionAlgorithm_Name(algorithm);
  }
}

TEST(MakeCorpusTest, CorporaHaveTheirIntendedCharacter) {
  for (CompressionAlgorithm algorithm : CompressionAlgorithms()) {
    SCOPED_TRACE(smbfleet::v1::CompressionAlgorithm_Name(algorithm));
    const double text = Ratio(algorithm, Corpus("text"));
    const double disk = Ratio(algorithm, Corpus("vm-disk"));
    const double compressed = Ratio(algorithm, Corpus("compressed"));
    EXPECT_GT(text, 2.5);
    EXPECT_GT(disk, 1.3);
    EXPECT_LT(disk, text);
    EXPECT_GT(compressed, 0.99);  // stored chunks: never larger than the input
    EXPECT_LT(compressed, 1.01);
  }
}

TEST(MakeCorpusTest, BadArgumentsAreClearErrors) {
  auto zero = MakeCorpus("text", 0, 1);
  EXPECT_TRUE(absl::IsInvalidArgument(zero.status()));
  EXPECT_NE(zero.status().message().find("0 bytes"), std::string::npos) << zero.status();
  auto huge = MakeCorpus("text", size_t{1} << 40, 1);
  EXPECT_TRUE(absl::IsInvalidArgument(huge.status()));
  EXPECT_NE(huge.status().message().find("want 1..268435456"), std::string::npos) << huge.status();
  auto unknown = MakeCorpus("video", 4096, 1);
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status()));
  EXPECT_NE(unknown.status().message().find("'video': unknown"), std::string::npos)
      << unknown.status();
}

TEST(MeasureCompressionTest, RoundTripsAndCountsEveryChunk) {
  // An odd size: the last chunk is short.
  std::string input = Corpus("vm-disk", 3 * 65536 + 1234);
  for (CompressionAlgorithm algorithm : CompressionAlgorithms()) {
    SCOPED_TRACE(smbfleet::v1::CompressionAlgorithm_Name(algorithm));
    auto r = MeasureCompression(algorithm, input);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->input_bytes, input.size());
    EXPECT_EQ(r->chunks, 4u);
    EXPECT_LT(r->compressed_bytes, input.size());
    EXPECT_DOUBLE_EQ(r->ratio, static_cast<double>(input.size()) / r->compressed_bytes);
    EXPECT_GT(r->compress_bytes_per_second, 0);
    EXPECT_GT(r->decompress_bytes_per_second, 0);
  }
}

TEST(MeasureCompressionTest, IncompressibleChunksAreStoredNotGrown) {
  std::string random = Corpus("compressed", 5 * 4096);
  CompressionMeasureOptions options;
  options.chunk_bytes = 4096;
  for (CompressionAlgorithm algorithm : CompressionAlgorithms()) {
    auto r = MeasureCompression(algorithm, random, options);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->stored_chunks, 5u);
    EXPECT_EQ(r->compressed_bytes, random.size());
    EXPECT_DOUBLE_EQ(r->ratio, 1.0);
  }
}

TEST(MeasureCompressionTest, AllZerosCompressToAlmostNothingWithoutDividingByZero) {
  std::string zeros(1 << 20, '\0');
  for (CompressionAlgorithm algorithm : CompressionAlgorithms()) {
    SCOPED_TRACE(smbfleet::v1::CompressionAlgorithm_Name(algorithm));
    auto r = MeasureCompression(algorithm, zeros);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(r->compressed_bytes, 0u);
    EXPECT_EQ(r->stored_chunks, 0u);
    EXPECT_GT(r->ratio, 50);
  }
  // A single byte cannot get smaller: stored, ratio 1.
  auto one = MeasureCompression(smbfleet::v1::COMPRESSION_LZ77_HUFFMAN, std::string(1, 'x'));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_DOUBLE_EQ(one->ratio, 1.0);
}

TEST(MeasureCompressionTest, CompressOnlyGivesTheRatioWithoutRates) {
  CompressionMeasureOptions options;
  options.decompress = false;
  auto r = MeasureCompression(smbfleet::v1::COMPRESSION_LZ4, Corpus("text", 65536), options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->ratio, 2);
  EXPECT_EQ(r->compress_bytes_per_second, 0);
  EXPECT_EQ(r->decompress_bytes_per_second, 0);
}

TEST(MeasureCompressionTest, BadArgumentsAreClearErrors) {
  auto empty = MeasureCompression(smbfleet::v1::COMPRESSION_LZ4, "");
  EXPECT_TRUE(absl::IsInvalidArgument(empty.status()));
  EXPECT_NE(empty.status().message().find("compression input: 0 bytes"), std::string::npos)
      << empty.status();
  auto lznt1 = MeasureCompression(smbfleet::v1::COMPRESSION_LZNT1, "abc");
  EXPECT_TRUE(absl::IsInvalidArgument(lznt1.status()));
  EXPECT_NE(lznt1.status().message().find("COMPRESSION_LZNT1 is not benchmarked"),
            std::string::npos)
      << lznt1.status();
  CompressionMeasureOptions big_chunk;
  big_chunk.chunk_bytes = 1 << 17;
  auto chunk = MeasureCompression(smbfleet::v1::COMPRESSION_LZ77_HUFFMAN, "abc", big_chunk);
  EXPECT_TRUE(absl::IsInvalidArgument(chunk.status()));
  EXPECT_NE(chunk.status().message().find("chunk_bytes: 131072 bytes, want 1..65536"),
            std::string::npos)
      << chunk.status();
}

TEST(CompressionBenchTest, OneRowPerAlgorithmAndCorpus) {
  CompressionBenchOptions options;
  options.corpus_bytes = 256 << 10;
  options.budget = std::chrono::milliseconds(120);
  // At idle priority a busy machine may hold the thread back for long; this test is about
  // the rows.
  options.lowest_priority = false;
  auto rows = RunCompressionBenchmark(options);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::set<std::pair<CompressionAlgorithm, std::string>> seen;
  for (const auto& row : *rows) {
    EXPECT_TRUE(seen.insert({row.algorithm(), row.corpus()}).second) << "duplicate row";
    EXPECT_EQ(row.input_bytes(), 256u << 10);
    EXPECT_EQ(row.threads(), 1u);
    EXPECT_GT(row.compress_bytes_per_second(), 0);
    EXPECT_GT(row.decompress_bytes_per_second(), 0);
    EXPECT_GE(row.ratio(), 1.0);
    EXPECT_GT(row.measured_at().seconds(), 0);
  }
  EXPECT_EQ(seen.size(), CompressionAlgorithms().size() * CorpusKinds().size());
}

TEST(CompressionBenchTest, BadOptionsAreClearErrors) {
  CompressionBenchOptions options;
  options.corpora = {"text", "video"};
  auto unknown = RunCompressionBenchmark(options);
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status()));
  EXPECT_NE(unknown.status().message().find("'video' is unknown"), std::string::npos)
      << unknown.status();
  options = {};
  options.budget = std::chrono::milliseconds(5);
  EXPECT_TRUE(absl::IsInvalidArgument(RunCompressionBenchmark(options).status()));
  options = {};
  options.corpus_bytes = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(RunCompressionBenchmark(options).status()));
  options = {};
  options.algorithms = {smbfleet::v1::COMPRESSION_PATTERN_V1};
  EXPECT_TRUE(absl::IsInvalidArgument(RunCompressionBenchmark(options).status()));
}

}  // namespace
}  // namespace smbfleet::agent::bench

#include "policy/compressibility.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/cost/compression_row_testing.h"

namespace smbfleet::policy {
namespace {

namespace v1 = ::smbfleet::v1;
using ::testing::HasSubstr;

void AddRow(v1::Posture& p, v1::CompressionAlgorithm algorithm, const std::string& corpus,
            double ratio, uint64_t input_bytes = 1 << 20, uint32_t threads = 1) {
  *p.add_compression_benchmarks() =
      cost::CompressionRow(algorithm, corpus, ratio, 1e8, 1e9, input_bytes, threads);
}

v1::Posture Benched() {
  v1::Posture p;
  AddRow(p, v1::COMPRESSION_LZ4, "vm-disk", 1.8);
  AddRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 2.3);
  AddRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 9, 1 << 20, 4);  // all-thread row: ignored
  AddRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "text", 4.5);
  AddRow(p, v1::COMPRESSION_LZ4, "compressed", 1.0);
  return p;
}

TEST(CompressibilityTest, SampleWinsOverBenchmarkAndLabel) {
  v1::Posture p = Benched();
  (*p.mutable_host()->mutable_labels())["data"] = "text";
  v1::Share s;
  s.set_name("Backups");
  s.mutable_compressibility()->set_ratio(1.04);
  s.mutable_compressibility()->set_bytes_sampled(64u << 20);
  s.mutable_compressibility()->set_files_sampled(120);
  Compressibility c = ShareCompressibility(p, s, "backup");
  EXPECT_DOUBLE_EQ(c.ratio, 1.04);
  EXPECT_EQ(c.corpus, "");
  EXPECT_EQ(c.source, "sampled: 64 MiB of 120 files");
}

TEST(CompressibilityTest, LabelThenClassificationPickTheCorpus) {
  v1::Posture p = Benched();
  v1::Share s;
  s.set_name("Images");
  Compressibility backup = ShareCompressibility(p, s, "backup");
  EXPECT_DOUBLE_EQ(backup.ratio, 2.3);  // XPRESS Huffman, not LZ4, not the all-thread row
  EXPECT_EQ(backup.corpus, "vm-disk");
  EXPECT_EQ(backup.source, "vm-disk benchmark (backup share)");

  (*p.mutable_host()->mutable_labels())["data"] = " Compressed ";
  Compressibility labelled = ShareCompressibility(p, s, "backup");
  EXPECT_DOUBLE_EQ(labelled.ratio, 1.0);  // LZ4 only for that corpus
  EXPECT_EQ(labelled.source, "compressed benchmark (label data)");
}

TEST(CompressibilityTest, UnknownIsNeverGuessed) {
  v1::Posture p = Benched();
  v1::Share s;
  s.set_name("Projects");
  s.mutable_compressibility()->set_not_sampled_reason("sampling is off");
  Compressibility general = ShareCompressibility(p, s, "general");
  EXPECT_EQ(general.ratio, 0);
  EXPECT_EQ(general.source, "unknown: not sampled (sampling is off)");

  v1::Posture bare;
  Compressibility no_bench = ShareCompressibility(bare, s, "backup");
  EXPECT_EQ(no_bench.ratio, 0);
  EXPECT_THAT(no_bench.source, HasSubstr("no vm-disk compression benchmark"));
  (*bare.mutable_host()->mutable_labels())["data"] = "movies";
  EXPECT_EQ(ShareCompressibility(bare, s, "general").ratio, 0);
  EXPECT_EQ(HostCompressibility(bare).ratio, 0);
}

TEST(CompressibilityTest, HostIsTheMeanOfItsKnownShares) {
  v1::Posture p = Benched();
  v1::Share* a = p.add_shares();
  a->set_name("Backups");
  a->set_classification("backup");  // 2.3 from the benchmark
  v1::Share* b = p.add_shares();
  b->set_name("Logs");
  b->mutable_compressibility()->set_ratio(4.1);
  v1::Share* c = p.add_shares();
  c->set_name("Projects");  // unknown: left out
  v1::Share* d = p.add_shares();
  d->set_name("C$");
  d->mutable_compressibility()->set_ratio(100);  // special: left out
  Compressibility host = HostCompressibility(p);
  EXPECT_DOUBLE_EQ(host.ratio, (2.3 + 4.1) / 2);
  EXPECT_EQ(host.source, "mean of 2 shares");
  EXPECT_EQ(HostCompressibility(v1::Posture()).source, "unknown: no share sampled or classified");
}

}  // namespace
}  // namespace smbfleet::policy

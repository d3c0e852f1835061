#include "agent/bench/share_sampler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/bench/compression_bench.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::bench {
namespace {

namespace fs = std::filesystem;

class ShareSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("share_sampler_test_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "share");
    fs::create_directories(dir_ / "outside");
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_ / "share", fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }

  // `count` files of `bytes` bytes of a corpus kind, under share/<sub>.
  void Fill(const std::string& sub, const std::string& kind, int count, size_t bytes) {
    fs::create_directories(dir_ / sub);
    for (int i = 0; i < count; ++i) {
      auto corpus = MakeCorpus(kind, bytes, static_cast<uint64_t>(i) + 1);
      ASSERT_TRUE(corpus.ok()) << corpus.status();
      std::ofstream(dir_ / sub / ("secret-name-" + std::to_string(i) + ".dat"), std::ios::binary)
          << *corpus;
    }
  }

  std::string Share() const { return (dir_ / "share").string(); }

  fs::path dir_;
};

TEST_F(ShareSamplerTest, TextFilesCompressAndNothingNamesThem) {
  Fill("share", "text", 3, 200'000);
  Fill("share/deeper/still", "text", 2, 50'000);
  auto sample = SampleCompressibility(Share(), SamplingLimits{});
  EXPECT_EQ(sample.not_sampled_reason(), "");
  EXPECT_GT(sample.ratio(), 2.0);
  EXPECT_EQ(sample.files_sampled(), 5u);
  EXPECT_EQ(sample.bytes_sampled(), 700'000u);
  EXPECT_EQ(sample.algorithm(), smbfleet::v1::COMPRESSION_LZ77_HUFFMAN);
  EXPECT_GT(sample.measured_at().seconds(), 0);
  const std::string wire = sample.SerializeAsString() + sample.DebugString();
  EXPECT_EQ(wire.find("secret-name"), std::string::npos);
  EXPECT_EQ(wire.find("deeper"), std::string::npos);
}

TEST_F(ShareSamplerTest, RandomFilesDoNotCompress) {
  Fill("share", "compressed", 4, 100'000);
  SamplingLimits limits;
  limits.algorithm = smbfleet::v1::COMPRESSION_LZ4;
  auto sample = SampleCompressibility(Share(), limits);
  EXPECT_EQ(sample.not_sampled_reason(), "");
  EXPECT_GT(sample.ratio(), 0.99);
  EXPECT_LT(sample.ratio(), 1.01);
  EXPECT_EQ(sample.files_sampled(), 4u);
  EXPECT_EQ(sample.algorithm(), smbfleet::v1::COMPRESSION_LZ4);
}

TEST_F(ShareSamplerTest, StaysWithinTheFileAndByteBounds) {
  Fill("share", "text", 10, 300'000);
  SamplingLimits limits;
  limits.max_files = 3;
  limits.max_bytes_per_file = 100'000;
  auto sample = SampleCompressibility(Share(), limits);
  EXPECT_EQ(sample.files_sampled(), 3u);
  EXPECT_EQ(sample.bytes_sampled(), 300'000u);
  limits.max_bytes = 150'000;  // the second file gives only what is left
  sample = SampleCompressibility(Share(), limits);
  EXPECT_EQ(sample.files_sampled(), 2u);
  EXPECT_EQ(sample.bytes_sampled(), 150'000u);
  // The same tree gives the same pick.
  EXPECT_EQ(SampleCompressibility(Share(), limits).ratio(), sample.ratio());
}

TEST_F(ShareSamplerTest, SymbolicLinksOutOfTheShareAreNotFollowed) {
  Fill("share", "compressed", 2, 100'000);
  Fill("outside", "text", 4, 100'000);
  fs::create_directory_symlink(dir_ / "outside", dir_ / "share" / "linked-dir");
  fs::create_symlink(dir_ / "outside" / "secret-name-0.dat", dir_ / "share" / "linked-file");
  auto sample = SampleCompressibility(Share(), SamplingLimits{});
  EXPECT_EQ(sample.files_sampled(), 2u);  // the two random files only
  EXPECT_LT(sample.ratio(), 1.01);
}

TEST_F(ShareSamplerTest, ReasonsInsteadOfARatio) {
  struct Case {
    std::string path;
    SamplingLimits limits;
    std::string reason;
  };
  SamplingLimits zero_files;
  zero_files.max_files = 0;
  SamplingLimits zero_bytes;
  zero_bytes.max_bytes = 0;
  std::ofstream(dir_ / "plain-file") << "x";
  for (const Case& c : {Case{(dir_ / "no-such-share").string(), {}, "path not found"},
                        Case{(dir_ / "plain-file").string(), {}, "not a directory"},
                        Case{Share(), {}, "no regular files"},  // empty
                        Case{Share(), zero_files, "sampling budget is 0"},
                        Case{Share(), zero_bytes, "sampling budget is 0"}}) {
    auto sample = SampleCompressibility(c.path, c.limits);
    EXPECT_EQ(sample.not_sampled_reason(), c.reason) << c.path;
    EXPECT_EQ(sample.ratio(), 0) << c.path;
    EXPECT_EQ(sample.files_sampled(), 0u) << c.path;
    EXPECT_GT(sample.measured_at().seconds(), 0) << c.path;
  }
}

TEST_F(ShareSamplerTest, FifosAndEmptyFilesAreNotRegularDataAndDoNotBlock) {
  ASSERT_EQ(::mkfifo((dir_ / "share" / "pipe").c_str(), 0600), 0);
  std::ofstream empty(dir_ / "share" / "empty");
  fs::create_directory(dir_ / "share" / "subdir");
  auto sample = SampleCompressibility(Share(), SamplingLimits{});
  EXPECT_EQ(sample.not_sampled_reason(), "no regular files");
}

TEST_F(ShareSamplerTest, UnreadableShareIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads a mode 000 directory";
  Fill("share", "text", 1, 1000);
  fs::permissions(dir_ / "share", fs::perms::none);
  auto sample = SampleCompressibility(Share(), SamplingLimits{});
  EXPECT_EQ(sample.not_sampled_reason(), "permission denied");
}

TEST_F(ShareSamplerTest, UnreadableFilesAreSkippedAndAllUnreadableIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads mode 000 files";
  Fill("share", "text", 3, 10'000);
  fs::permissions(dir_ / "share" / "secret-name-0.dat", fs::perms::none);
  auto sample = SampleCompressibility(Share(), SamplingLimits{});
  EXPECT_EQ(sample.files_sampled(), 2u);
  for (int i = 1; i < 3; ++i) {
    fs::permissions(dir_ / "share" / ("secret-name-" + std::to_string(i) + ".dat"),
                    fs::perms::none);
  }
  sample = SampleCompressibility(Share(), SamplingLimits{});
  EXPECT_EQ(sample.not_sampled_reason(), "permission denied");
}

}  // namespace
}  // namespace smbfleet::agent::bench

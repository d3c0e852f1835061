#include "agent/bench/crypto_bench.h"

#include <map>
#include <set>
#include <tuple>

#include "gtest/gtest.h"

namespace smbfleet::agent::bench {
namespace {

using ::smbfleet::v1::CryptoAlgorithm;

TEST(CryptoBenchTest, OneRowPerAlgorithmSizeAndThreadCount) {
  BenchOptions options;
  options.buffer_sizes = {4096, 65536};
  options.threads = 2;
  options.budget = std::chrono::milliseconds(300);
  // At idle priority a busy machine may hold the threads back for long; this test is about
  // the rows.
  options.lowest_priority = false;
  auto rows = RunCryptoBenchmark(options);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::set<std::tuple<CryptoAlgorithm, uint64_t, uint32_t>> seen;
  for (const smbfleet::v1::Benchmark& row : *rows) {
    EXPECT_GT(row.bytes_per_second(), 0);
    EXPECT_GT(row.measured_at().seconds(), 0);
    EXPECT_TRUE(seen.insert({row.algorithm(), row.buffer_bytes(), row.threads()}).second)
        << "duplicate row";
  }
  // Every cell times at least one message, so every row is there even on a loaded machine.
  for (CryptoAlgorithm algorithm : BenchmarkedAlgorithms()) {
    for (uint64_t size : {4096u, 65536u}) {
      for (uint32_t threads : {1u, 2u}) {
        EXPECT_TRUE(seen.count({algorithm, size, threads}))
            << smbfleet::v1::CryptoAlgorithm_Name(algorithm) << " " << size << " x" << threads;
      }
    }
  }
  EXPECT_EQ(rows->size(), BenchmarkedAlgorithms().size() * 2 * 2);
  for (const auto& [algorithm, size, threads] : seen) {
    EXPECT_TRUE(threads == 1 || threads == 2);
  }
}

TEST(CryptoBenchTest, LargerMessagesAmortiseThePerMessageCost) {
  // Per-message setup (nonce, init, final) makes 256-byte messages clearly slower per byte
  // than 64 KiB ones for every algorithm; a benchmark that ignored the size would fail here.
  BenchOptions options;
  options.buffer_sizes = {256, 65536};
  options.threads = 1;
  options.budget = std::chrono::milliseconds(280);
  options.lowest_priority = false;
  auto rows = RunCryptoBenchmark(options);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::map<std::pair<CryptoAlgorithm, uint64_t>, double> rate;
  for (const auto& row : *rows) {
    rate[{row.algorithm(), row.buffer_bytes()}] = row.bytes_per_second();
  }
  for (CryptoAlgorithm algorithm : BenchmarkedAlgorithms()) {
    SCOPED_TRACE(smbfleet::v1::CryptoAlgorithm_Name(algorithm));
    ASSERT_TRUE(rate.count({algorithm, 256}) > 0 && rate.count({algorithm, 65536}) > 0);
    double small = rate[{algorithm, 256}];
    double large = rate[{algorithm, 65536}];
    EXPECT_LT(small, large);
  }
}

TEST(CryptoBenchTest, SelectedAlgorithmsOnly) {
  BenchOptions options;
  options.buffer_sizes = {4096};
  options.threads = 1;
  options.budget = std::chrono::milliseconds(20);
  options.lowest_priority = false;
  options.algorithms = {smbfleet::v1::AES_128_GMAC};
  auto rows = RunCryptoBenchmark(options);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].algorithm(), smbfleet::v1::AES_128_GMAC);
  EXPECT_EQ((*rows)[0].threads(), 1u);
}

TEST(CryptoBenchTest, RejectsBadOptions) {
  struct Case {
    const char* name;
    BenchOptions options;
  };
  BenchOptions empty_sizes;
  empty_sizes.buffer_sizes = {};
  BenchOptions zero_size;
  zero_size.buffer_sizes = {0};
  BenchOptions huge_size;
  huge_size.buffer_sizes = {size_t{64} << 20};
  BenchOptions tiny_budget;
  tiny_budget.budget = std::chrono::milliseconds(1);
  BenchOptions md5;
  md5.algorithms = {smbfleet::v1::HMAC_MD5};
  for (const Case& c :
       {Case{"empty sizes", empty_sizes}, Case{"zero size", zero_size},
        Case{"huge size", huge_size}, Case{"tiny budget", tiny_budget}, Case{"md5", md5}}) {
    SCOPED_TRACE(c.name);
    auto rows = RunCryptoBenchmark(c.options);
    EXPECT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument) << rows.status();
  }
}

}  // namespace
}  // namespace smbfleet::agent::bench

#include "agent/core/backoff.h"

#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

TEST(BackoffTest, CeilingDoublesUpToCap) {
  Backoff b(std::chrono::milliseconds(100), std::chrono::milliseconds(1000), 1);
  const int64_t expected[] = {100, 200, 400, 800, 1000, 1000};
  for (int64_t ceiling : expected) {
    EXPECT_EQ(b.Ceiling().count(), ceiling);
    auto wait = b.Next();
    EXPECT_GE(wait.count(), 0);
    EXPECT_LE(wait.count(), ceiling);
  }
  b.Reset();
  EXPECT_EQ(b.Ceiling().count(), 100);
}

TEST(BackoffTest, FullJitterSpreadsWaits) {
  Backoff b(std::chrono::milliseconds(1000), std::chrono::milliseconds(1000), 7);
  int64_t lo = 1000, hi = 0;
  for (int i = 0; i < 200; ++i) {
    int64_t w = b.Next().count();
    lo = std::min(lo, w);
    hi = std::max(hi, w);
  }
  EXPECT_LT(lo, 200);
  EXPECT_GT(hi, 800);
}

TEST(BackoffTest, BackoffsSeededApartWaitApartAndStaySmall) {
  // Agents seed their backoff from their identity: two must not retry in step.
  Backoff a(std::chrono::milliseconds(1000), std::chrono::milliseconds(1000), 1'000'003);
  Backoff b(std::chrono::milliseconds(1000), std::chrono::milliseconds(1000), 1'000'004);
  Backoff c(std::chrono::milliseconds(1000), std::chrono::milliseconds(1000), 1ULL << 40);
  int same_ab = 0, same_ac = 0;
  for (int i = 0; i < 20; ++i) {
    const auto wait = a.Next();
    same_ab += wait == b.Next() ? 1 : 0;
    same_ac += wait == c.Next() ? 1 : 0;
  }
  EXPECT_LT(same_ab, 5);
  EXPECT_LT(same_ac, 5);
  // The loadgen holds two per simulated agent, 100,000 agents on one machine.
  EXPECT_LE(sizeof(Backoff), 64u);
}

TEST(SplayTest, StaysWithinHalfTheSplay) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100; ++i) {
    auto d = SplayedInterval(std::chrono::minutes(60), std::chrono::minutes(10), rng);
    EXPECT_GE(d, std::chrono::minutes(55));
    EXPECT_LE(d, std::chrono::minutes(65));
  }
  EXPECT_EQ(SplayedInterval(std::chrono::minutes(60), std::chrono::minutes(0), rng),
            std::chrono::minutes(60));
}

}  // namespace
}  // namespace smbfleet::agent

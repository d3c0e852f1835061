#include "collector/admin/nudge_limiter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;

class NudgeLimiterTest : public ::testing::Test {
 protected:
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15T08:00:00Z
  NudgeLimiter limiter_{{absl::Seconds(60), 3}, [this] { return now_; }};
};

TEST_F(NudgeLimiterTest, OneNudgePerHostPerInterval) {
  ASSERT_TRUE(limiter_.Admit("alice", "fs01").ok());
  now_ += absl::Seconds(59);
  absl::Status again = limiter_.Admit("bob", "FS01");  // another person, the same host
  EXPECT_TRUE(absl::IsResourceExhausted(again)) << again;
  EXPECT_THAT(std::string(again.message()), HasSubstr("host 'FS01'"));
  EXPECT_THAT(std::string(again.message()), HasSubstr("asked again after 2027-01-15T08:01:00Z"));
  EXPECT_TRUE(limiter_.Admit("alice", "fs02").ok());  // other hosts are not held back
  now_ += absl::Seconds(1);
  EXPECT_TRUE(limiter_.Admit("bob", "fs01").ok());
}

TEST_F(NudgeLimiterTest, EachCallerHasAFleetWideCapPerMinute) {
  ASSERT_TRUE(limiter_.Admit("alice", "fs01").ok());
  ASSERT_TRUE(limiter_.Admit("alice", "fs02").ok());
  now_ += absl::Seconds(30);
  ASSERT_TRUE(limiter_.Admit("alice", "fs03").ok());
  absl::Status fourth = limiter_.Admit("alice", "fs04");
  EXPECT_TRUE(absl::IsResourceExhausted(fourth)) << fourth;
  EXPECT_THAT(std::string(fourth.message()), HasSubstr("'alice' asked for 3 reports"));
  EXPECT_THAT(std::string(fourth.message()), HasSubstr("after 2027-01-15T08:01:00Z"));
  EXPECT_TRUE(limiter_.Admit("bob", "fs04").ok());  // the cap is per person
  now_ += absl::Seconds(30);                        // the first two left the window
  EXPECT_TRUE(limiter_.Admit("alice", "fs05").ok());
  EXPECT_TRUE(limiter_.Admit("alice", "fs06").ok());
  EXPECT_TRUE(absl::IsResourceExhausted(limiter_.Admit("alice", "fs07")));
}

TEST_F(NudgeLimiterTest, AnUndeliveredNudgeDoesNotHoldTheHostBack) {
  ASSERT_TRUE(limiter_.Admit("alice", "fs01").ok());
  limiter_.Undelivered("fs01");
  EXPECT_TRUE(limiter_.Admit("alice", "fs01").ok());
  // ...but counts against the caller.
  EXPECT_TRUE(limiter_.Admit("alice", "fs02").ok());
  EXPECT_TRUE(absl::IsResourceExhausted(limiter_.Admit("alice", "fs03")));
}

}  // namespace
}  // namespace smbfleet::collector

// ApproverTrust and ReplayStore over real files: what survives a restart, and what is refused.

#include "agent/core/approver_trust.h"

#include <filesystem>
#include <string>

#include "agent/core/replay_store.h"
#include "agent/core/testing/test_approvals.h"
#include "common/approval_signing.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

using ::testing::HasSubstr;
using testing::TestApprovals;

class TrustStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/trust_state_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  std::string dir_;
  TestApprovals approvals_;
};

TEST_F(TrustStateTest, PinnedKeysAreTrustedWithoutASet) {
  ApproverTrust trust(approvals_.Trust({"alice"}, 2), dir_ + "/set.pb");
  ASSERT_TRUE(trust.Open().ok());
  EXPECT_EQ(trust.serial(), 0u);
  EXPECT_EQ(trust.min_approvals(), 2u);
  ASSERT_EQ(trust.Keys().size(), 1u);
  EXPECT_EQ(trust.Keys().begin()->first, KeyId(approvals_.key("alice").public_raw));
}

TEST_F(TrustStateTest, NewerSetIsKeptDurablyWithThePinnedKeysAndAnOlderOneRefused) {
  {
    ApproverTrust trust(approvals_.Trust({"carol"}), dir_ + "/set.pb");
    ASSERT_TRUE(trust.Open().ok());
    ASSERT_TRUE(trust.Accept(approvals_.Set(5, {"alice", "bob"})).ok());
    EXPECT_EQ(trust.Keys().size(), 3u);
    absl::Status same = trust.Accept(approvals_.Set(5, {"alice"}));
    EXPECT_TRUE(absl::IsFailedPrecondition(same)) << same;
    EXPECT_THAT(same.message(), HasSubstr("this host holds serial 5"));
    EXPECT_EQ(trust.Keys().size(), 3u);
  }
  EXPECT_EQ(std::filesystem::status(dir_ + "/set.pb").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ApproverTrust restarted(approvals_.Trust({"carol"}), dir_ + "/set.pb");
  ASSERT_TRUE(restarted.Open().ok());
  EXPECT_EQ(restarted.serial(), 5u);
  EXPECT_EQ(restarted.Keys().size(), 3u);
  EXPECT_TRUE(absl::IsFailedPrecondition(restarted.Accept(approvals_.Set(4, {"mallory"}))));
  ASSERT_TRUE(restarted.Accept(approvals_.Set(6, {"alice"})).ok());
  EXPECT_EQ(restarted.Keys().size(), 2u);  // bob left out; carol pinned
}

TEST_F(TrustStateTest, SetNotSignedByTheRootIsRefusedAndNotKept) {
  ApproverTrust trust(approvals_.Trust({}), dir_ + "/set.pb");
  ASSERT_TRUE(trust.Open().ok());
  absl::Status s = trust.Accept(approvals_.Set(1, {"mallory"}, "mallory"));
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_TRUE(trust.Keys().empty());
  EXPECT_FALSE(FileExists(dir_ + "/set.pb"));
}

TEST_F(TrustStateTest, KeptSetThatNoLongerVerifiesIsIgnored) {
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/set.pb",
                              approvals_.Set(9, {"mallory"}, "mallory").SerializeAsString())
                  .ok());
  ApproverTrust trust(approvals_.Trust({"alice"}), dir_ + "/set.pb");
  ASSERT_TRUE(trust.Open().ok());
  EXPECT_EQ(trust.serial(), 0u);
  EXPECT_EQ(trust.Keys().size(), 1u);
}

TEST_F(TrustStateTest, ReplayStoreRemembersAcrossRestartsAndForgetsLongExpiredOrders) {
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  {
    ReplayStore store(dir_ + "/applied.json");
    ASSERT_TRUE(store.Open().ok());
    ASSERT_TRUE(store.Record("c1", 1, std::string("n\0\xff", 3), now + absl::Hours(1), now).ok());
    ASSERT_TRUE(store.Record("c2", 1, "n2", now - absl::Hours(1), now).ok());
  }
  ReplayStore store(dir_ + "/applied.json");
  ASSERT_TRUE(store.Open().ok());
  EXPECT_TRUE(store.Seen("c1", 1, std::string("n\0\xff", 3)));
  EXPECT_FALSE(store.Seen("c1", 2, std::string("n\0\xff", 3)));
  EXPECT_FALSE(store.Seen("c1", 1, "other"));
  EXPECT_TRUE(store.Seen("c2", 1, "n2"));
  ASSERT_TRUE(store.Record("c3", 1, "n3", now + absl::Hours(50), now + absl::Hours(48)).ok());
  EXPECT_FALSE(store.Seen("c2", 1, "n2"));  // expired more than a day ago
  EXPECT_FALSE(store.Seen("c1", 1, std::string("n\0\xff", 3)));
  EXPECT_TRUE(store.Seen("c3", 1, "n3"));
}

TEST_F(TrustStateTest, UnreadableReplayStoreStopsTheStart) {
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/applied.json", "{not json").ok());
  ReplayStore store(dir_ + "/applied.json");
  absl::Status s = store.Open();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("applied.json"));
}

}  // namespace
}  // namespace smbfleet::agent

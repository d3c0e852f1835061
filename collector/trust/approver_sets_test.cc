// ApproverSets over the memory store and the stream registry: a published set reaches every open
// stream at once, a newer one from another replica is picked up by Refresh, and what is refused.

#include "collector/trust/approver_sets.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using smbfleet::v1::SignedApproverSet;
using ::testing::HasSubstr;

class FakeStream : public AgentStream {
 public:
  void Send(const smbfleet::v1::WatchResponse& message) override {
    absl::MutexLock lock(&mu_);
    if (message.has_approver_set()) sets.push_back(message.approver_set());
  }
  void Close(const std::string&) override {}
  std::vector<SignedApproverSet> Sets() {
    absl::MutexLock lock(&mu_);
    return sets;
  }

 private:
  absl::Mutex mu_;
  std::vector<SignedApproverSet> sets ABSL_GUARDED_BY(mu_);
};

SignedApproverSet Set(uint64_t serial) {
  smbfleet::v1::ApproverSet set;
  set.set_serial(serial);
  auto* k = set.add_approvers();
  k->set_name("alice");
  k->set_public_key(std::string(32, 'k'));
  SignedApproverSet s;
  s.set_approver_set(set.SerializeAsString());
  s.set_root_key_id("0123456789abcdef");
  s.set_signature(std::string(64, 's'));
  return s;
}

class ApproverSetsTest : public ::testing::Test {
 protected:
  std::unique_ptr<ApproverSetStore> store_ = NewMemoryApproverSetStore();
  StreamRegistry registry_{std::chrono::hours(1)};
  ApproverSets sets_{store_.get(), &registry_, absl::ZeroDuration()};
};

TEST_F(ApproverSetsTest, PublishedSetReachesEveryOpenStreamAndIsKeptForNewOnes) {
  ASSERT_TRUE(sets_.Start().ok());
  EXPECT_FALSE(sets_.Current().has_value());
  FakeStream a, b;
  registry_.Register("fs01", &a);
  registry_.Register("fs02", &b);
  absl::StatusOr<v1::PublishApproverSetResponse> r = sets_.Publish(Set(3), "ada");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->serial(), 3u);
  EXPECT_EQ(r->agents_sent(), 2u);
  ASSERT_EQ(a.Sets().size(), 1u);
  EXPECT_EQ(a.Sets()[0].SerializeAsString(), Set(3).SerializeAsString());
  EXPECT_EQ(b.Sets().size(), 1u);
  ASSERT_TRUE(sets_.Current().has_value());
  EXPECT_EQ(sets_.Current()->SerializeAsString(), Set(3).SerializeAsString());
  registry_.Unregister("fs01", &a);
  registry_.Unregister("fs02", &b);
}

TEST_F(ApproverSetsTest, SerialNotAboveTheLatestIsRefused) {
  ASSERT_TRUE(sets_.Publish(Set(3), "ada").ok());
  absl::Status s = sets_.Publish(Set(3), "ada").status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("not greater than the published 3"));
  EXPECT_TRUE(absl::IsFailedPrecondition(sets_.Publish(Set(2), "ada").status()));
}

TEST_F(ApproverSetsTest, SetThatDoesNotParseIsRefusedNamingTheField) {
  SignedApproverSet bad = Set(1);
  bad.set_approver_set("\xff\xff");
  EXPECT_THAT(sets_.Publish(bad, "ada").status().message(), HasSubstr("set.approver_set"));
  bad = Set(0);
  EXPECT_THAT(sets_.Publish(bad, "ada").status().message(), HasSubstr("serial is 0"));
  bad = Set(1);
  bad.set_signature("short");
  EXPECT_THAT(sets_.Publish(bad, "ada").status().message(), HasSubstr("signature has 5 bytes"));
  EXPECT_FALSE(store_->Latest()->has_value());
}

TEST_F(ApproverSetsTest, RefreshSendsASetAnotherReplicaPublishedOnce) {
  ASSERT_TRUE(sets_.Start().ok());
  FakeStream a;
  registry_.Register("fs01", &a);
  ASSERT_TRUE(store_->Publish(Set(7), 7, "ada").ok());  // through another replica
  EXPECT_EQ(*sets_.Refresh(), 1u);
  EXPECT_EQ(*sets_.Refresh(), 0u);
  ASSERT_EQ(a.Sets().size(), 1u);
  EXPECT_EQ(a.Sets()[0].SerializeAsString(), Set(7).SerializeAsString());
  registry_.Unregister("fs01", &a);
}

}  // namespace
}  // namespace smbfleet::collector

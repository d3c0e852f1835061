// The ApproverKeyStore contract: add, get, list (revoked only when asked), revoke once.
#include "tests/integration/approver_key_store_conformance.h"

#include "absl/time/time.h"
#include "common/approval_signing.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"

namespace smbfleet::collector::store_testing {

void ApproverKeyStoreConformanceTest::SetUp() {
  under_test_ = GetParam().make();
  if (!under_test_.skip.empty()) GTEST_SKIP() << under_test_.skip;
  ASSERT_NE(under_test_.keys, nullptr);
  store_ = under_test_.keys.get();
}

namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

constexpr int64_t kT0 = 1'800'000'000;

v1::ApproverKey KeyOf(const std::string& name, int64_t added_at) {
  auto generated = GenerateEd25519Key();
  EXPECT_TRUE(generated.ok()) << generated.status();
  v1::ApproverKey k;
  k.set_name(name);
  k.set_public_key(generated->public_raw);
  k.set_key_id(KeyId(generated->public_raw));
  k.set_added_by("root-admin");
  k.mutable_added_at()->set_seconds(added_at);
  k.mutable_added_at()->set_nanos(123000);  // whole microseconds survive every backend
  return k;
}

std::vector<std::string> Ids(const std::vector<v1::ApproverKey>& keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) out.push_back(k.key_id());
  return out;
}

TEST_P(ApproverKeyStoreConformanceTest, AddGetAndListByName) {
  v1::ApproverKey bob = KeyOf("bob", kT0);
  v1::ApproverKey ann = KeyOf("ann", kT0 + 10);
  v1::ApproverKey ann2 = KeyOf("ann", kT0 + 20);
  for (const auto* k : {&bob, &ann2, &ann}) ASSERT_TRUE(store_->AddKey(*k).ok());

  auto got = store_->GetKey(ann.key_id());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(**got, ann)) << (*got)->DebugString();
  EXPECT_FALSE(store_->GetKey("0123456789abcdef")->has_value());

  auto all = store_->ListKeys(false);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Ids(*all), ::testing::ElementsAre(ann.key_id(), ann2.key_id(), bob.key_id()));
}

TEST_P(ApproverKeyStoreConformanceTest, AKeyIdIsRegisteredOnce) {
  v1::ApproverKey ann = KeyOf("ann", kT0);
  ASSERT_TRUE(store_->AddKey(ann).ok());
  v1::ApproverKey again = ann;
  again.set_name("mallory");  // the same public key under another name
  absl::Status s = store_->AddKey(again);
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(ann.key_id()));
  EXPECT_EQ((*store_->GetKey(ann.key_id()))->name(), "ann");
}

TEST_P(ApproverKeyStoreConformanceTest, RevokedKeysAreListedOnlyWhenAskedAndRevokedOnce) {
  v1::ApproverKey ann = KeyOf("ann", kT0);
  v1::ApproverKey bob = KeyOf("bob", kT0);
  ASSERT_TRUE(store_->AddKey(ann).ok());
  ASSERT_TRUE(store_->AddKey(bob).ok());
  const absl::Time at = absl::FromUnixSeconds(kT0 + 60);
  auto revoked = store_->RevokeKey(ann.key_id(), "root-admin", "laptop lost", at);
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(revoked->revoked_by(), "root-admin");
  EXPECT_EQ(revoked->revoked_at().seconds(), kT0 + 60);
  EXPECT_EQ(revoked->name(), "ann");

  EXPECT_THAT(Ids(*store_->ListKeys(false)), ::testing::ElementsAre(bob.key_id()));
  EXPECT_THAT(Ids(*store_->ListKeys(true)), ::testing::ElementsAre(ann.key_id(), bob.key_id()));
  EXPECT_TRUE((*store_->GetKey(ann.key_id()))->has_revoked_at());

  auto twice = store_->RevokeKey(ann.key_id(), "other-admin", "again", at + absl::Minutes(1));
  EXPECT_TRUE(absl::IsFailedPrecondition(twice.status())) << twice.status();
  EXPECT_EQ((*store_->GetKey(ann.key_id()))->revoked_by(), "root-admin");
  auto unknown = store_->RevokeKey("0123456789abcdef", "root-admin", "x", at);
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
}

}  // namespace
}  // namespace smbfleet::collector::store_testing

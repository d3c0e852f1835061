// The EnrollmentStore contract: tokens (create, list active, revoke once, take a use
// atomically), issued certificates and the trusted host labels.
#include "tests/integration/enrollment_store_conformance.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"

namespace smbfleet::collector::store_testing {

void EnrollmentStoreConformanceTest::SetUp() {
  under_test_ = GetParam().make();
  if (!under_test_.skip.empty()) GTEST_SKIP() << under_test_.skip;
  ASSERT_NE(under_test_.store, nullptr);
  store_ = under_test_.store.get();
}

namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kT0 = 1'800'000'000;
const absl::Time kNow = absl::FromUnixSeconds(kT0 + 100);

v1::EnrollmentToken TokenOf(const std::string& id, uint32_t max_uses, int64_t created,
                            int64_t expires) {
  v1::EnrollmentToken t;
  t.set_id(id);
  (*t.mutable_labels())["site"] = "paris";
  (*t.mutable_labels())["class"] = "strict";
  t.set_max_uses(max_uses);
  t.set_created_by("root-admin");
  t.mutable_created_at()->set_seconds(created);
  t.mutable_created_at()->set_nanos(5000);
  t.mutable_expires_at()->set_seconds(expires);
  t.set_comment("rack 4");
  return t;
}

std::string Hash(char c) { return std::string(32, c); }

std::vector<std::string> Ids(const std::vector<v1::EnrollmentToken>& tokens) {
  std::vector<std::string> out;
  for (const auto& t : tokens) out.push_back(t.id());
  return out;
}

TEST_P(EnrollmentStoreConformanceTest, CreateGetAndListActiveNewestFirst) {
  v1::EnrollmentToken a = TokenOf("00000000000000a1", 2, kT0, kT0 + 3600);
  a.set_allow_reenrollment(true);
  v1::EnrollmentToken b = TokenOf("00000000000000b2", 1, kT0 + 10, kT0 + 3600);
  v1::EnrollmentToken expired = TokenOf("00000000000000c3", 1, kT0 + 20, kT0 + 50);
  ASSERT_TRUE(store_->CreateToken(a, Hash('a')).ok());
  ASSERT_TRUE(store_->CreateToken(b, Hash('b')).ok());
  ASSERT_TRUE(store_->CreateToken(expired, Hash('c')).ok());
  EXPECT_EQ(store_->CreateToken(a, Hash('z')).code(), absl::StatusCode::kAlreadyExists);

  auto got = store_->GetToken(a.id());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE(MessageDifferencer::Equals((*got)->token, a)) << (*got)->token.DebugString();
  EXPECT_EQ((*got)->secret_sha256, Hash('a'));
  EXPECT_FALSE(store_->GetToken("0000000000000000")->has_value());

  auto active = store_->ListTokens(false, kNow);
  ASSERT_TRUE(active.ok()) << active.status();
  EXPECT_THAT(Ids(*active), ElementsAre(b.id(), a.id()));
  EXPECT_THAT(Ids(*store_->ListTokens(true, kNow)), ElementsAre(expired.id(), b.id(), a.id()));
}

TEST_P(EnrollmentStoreConformanceTest, UsesRunOutAndEachRefusalSaysWhy) {
  ASSERT_TRUE(store_->CreateToken(TokenOf("00000000000000a1", 2, kT0, kT0 + 3600), Hash('a')).ok());
  ASSERT_TRUE(store_->CreateToken(TokenOf("00000000000000b2", 5, kT0, kT0 + 50), Hash('b')).ok());
  ASSERT_TRUE(store_->CreateToken(TokenOf("00000000000000c3", 5, kT0, kT0 + 3600), Hash('c')).ok());

  auto first = store_->TakeUse("00000000000000a1", kNow);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->uses(), 1u);
  ASSERT_TRUE(store_->TakeUse("00000000000000a1", kNow).ok());
  auto third = store_->TakeUse("00000000000000a1", kNow);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(third.status().message(), HasSubstr("used up"));
  EXPECT_EQ((*store_->GetToken("00000000000000a1"))->token.uses(), 2u);
  EXPECT_TRUE(store_->ListTokens(false, kNow)->size() == 1);  // only c3 is usable

  auto expired = store_->TakeUse("00000000000000b2", kNow);
  EXPECT_THAT(expired.status().message(), HasSubstr("expired"));

  auto revoked = store_->RevokeToken("00000000000000c3", "root-admin", "lost", kNow);
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(revoked->revoked_by(), "root-admin");
  EXPECT_EQ(revoked->revoked_at().seconds(), kT0 + 100);
  EXPECT_EQ(store_->RevokeToken("00000000000000c3", "x", "again", kNow).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store_->TakeUse("00000000000000c3", kNow).status().message(), HasSubstr("revoked"));
  EXPECT_EQ(store_->TakeUse("0000000000000000", kNow).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->RevokeToken("0000000000000000", "x", "y", kNow).status().code(),
            absl::StatusCode::kNotFound);
}

// Eight enrollments racing for the last use of a token: exactly one gets it.
TEST_P(EnrollmentStoreConformanceTest, RaceForTheLastUseHasOneWinner) {
  const std::string id = "00000000000000d4";
  ASSERT_TRUE(store_->CreateToken(TokenOf(id, 3, kT0, kT0 + 3600), Hash('d')).ok());
  ASSERT_TRUE(store_->TakeUse(id, kNow).ok());
  ASSERT_TRUE(store_->TakeUse(id, kNow).ok());
  std::atomic<int> won{0};
  std::atomic<int> refused{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      auto r = store_->TakeUse(id, kNow);
      if (r.ok()) {
        ++won;
      } else if (r.status().code() == absl::StatusCode::kFailedPrecondition) {
        ++refused;
      }
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(refused.load(), 7);
  EXPECT_EQ((*store_->GetToken(id))->token.uses(), 3u);
}

v1::IssuedCertificate CertOf(const std::string& serial, const std::string& host, int64_t issued,
                             int64_t not_after, const std::string& token) {
  v1::IssuedCertificate c;
  c.set_serial(serial);
  c.set_fingerprint(std::string(64 - serial.size(), '0') + serial);
  c.set_host(host);
  c.mutable_not_before()->set_seconds(issued - 60);
  c.mutable_not_after()->set_seconds(not_after);
  c.mutable_issued_at()->set_seconds(issued);
  c.set_enrollment_token_id(token);
  return c;
}

TEST_P(EnrollmentStoreConformanceTest, CertificatesByHostActiveOnes) {
  ASSERT_TRUE(store_->CreateToken(TokenOf("00000000000000a1", 2, kT0, kT0 + 3600), Hash('a')).ok());
  v1::IssuedCertificate old = CertOf("0a", "fs01", kT0, kT0 + 50, "00000000000000a1");
  v1::IssuedCertificate renewed = CertOf("0b", "fs01", kT0 + 40, kT0 + 9000, "");
  v1::IssuedCertificate other = CertOf("0c", "fs02", kT0 + 1, kT0 + 9000, "00000000000000a1");
  for (const auto* c : {&renewed, &other, &old}) ASSERT_TRUE(store_->RecordCertificate(*c).ok());
  EXPECT_EQ(store_->RecordCertificate(old).code(), absl::StatusCode::kAlreadyExists);

  auto fs01 = store_->ListCertificates("fs01", true, kNow);
  ASSERT_TRUE(fs01.ok()) << fs01.status();
  ASSERT_EQ(fs01->size(), 2u);
  EXPECT_TRUE(MessageDifferencer::Equals((*fs01)[0], old)) << (*fs01)[0].DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals((*fs01)[1], renewed));
  auto active = store_->ListCertificates("", false, kNow);
  ASSERT_TRUE(active.ok());
  ASSERT_EQ(active->size(), 2u);
  EXPECT_EQ((*active)[0].serial(), "0b");
  EXPECT_EQ((*active)[1].serial(), "0c");
}

TEST_P(EnrollmentStoreConformanceTest, HostLabelsAreReplacedWhole) {
  EXPECT_TRUE(store_->GetHostLabels("fs01")->empty());
  ASSERT_TRUE(
      store_->SetHostLabels("fs01", {{"site", "paris"}, {"class", "strict"}}, "enroll", kNow).ok());
  ASSERT_TRUE(store_->SetHostLabels("fs02", {{"site", "lyon"}}, "enroll", kNow).ok());
  ASSERT_TRUE(store_->SetHostLabels("fs01", {{"site", "nice"}}, "root-admin", kNow).ok());
  EXPECT_EQ(*store_->GetHostLabels("fs01"), (HostLabels{{"site", "nice"}}));
  EXPECT_EQ(*store_->GetHostLabels("fs02"), (HostLabels{{"site", "lyon"}}));
  // Values are stored verbatim, SQL metacharacters included.
  ASSERT_TRUE(
      store_->SetHostLabels("fs03", {{"k'; DROP TABLE host_labels;--", "v\"'"}}, "a", kNow).ok());
  EXPECT_EQ(store_->GetHostLabels("fs03")->at("k'; DROP TABLE host_labels;--"), "v\"'");
}

}  // namespace
}  // namespace smbfleet::collector::store_testing

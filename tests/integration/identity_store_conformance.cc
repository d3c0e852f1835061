// The IdentityStore contract: tokens (add once, get with the secret's hash, list active or all,
// revoke once) and revocations (once per serial, fingerprint or host, listed oldest first).
#include "tests/integration/identity_store_conformance.h"

#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"

namespace smbfleet::collector::store_testing {

void IdentityStoreConformanceTest::SetUp() {
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

StoredApiToken TokenOf(const std::string& id, const std::string& name, int64_t created,
                       int64_t expires) {
  StoredApiToken s;
  s.token.set_id(id);
  s.token.set_name(name);
  s.token.add_roles("viewer");
  s.token.add_roles("approver");
  s.token.set_created_by("root-admin");
  s.token.mutable_created_at()->set_seconds(created);
  s.token.mutable_created_at()->set_nanos(250000);  // whole microseconds survive every backend
  s.token.mutable_expires_at()->set_seconds(expires);
  s.secret_sha256 = std::string(32, '\x01');
  s.secret_sha256[31] = static_cast<char>(id.back());
  return s;
}

std::vector<std::string> Ids(const std::vector<v1::ApiToken>& tokens) {
  std::vector<std::string> out;
  for (const auto& t : tokens) out.push_back(t.id());
  return out;
}

TEST_P(IdentityStoreConformanceTest, ATokenIsStoredWithItsHashAndReadBack) {
  StoredApiToken t = TokenOf("00000000000000a1", "ann", kT0, kT0 + 3600);
  ASSERT_TRUE(store_->AddApiToken(t).ok());
  auto got = store_->GetApiToken("00000000000000a1");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE(MessageDifferencer::Equals((*got)->token, t.token))
      << (*got)->token.DebugString() << " vs " << t.token.DebugString();
  EXPECT_EQ((*got)->secret_sha256, t.secret_sha256);
  auto missing = store_->GetApiToken("00000000000000ff");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  absl::Status again = store_->AddApiToken(TokenOf("00000000000000a1", "bob", kT0, kT0 + 60));
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
}

TEST_P(IdentityStoreConformanceTest, ListingLeavesOutRevokedAndExpiredUnlessAsked) {
  ASSERT_TRUE(store_->AddApiToken(TokenOf("00000000000000b2", "bob", kT0 + 2, kT0 + 3600)).ok());
  ASSERT_TRUE(store_->AddApiToken(TokenOf("00000000000000b1", "ann", kT0 + 1, kT0 + 3600)).ok());
  ASSERT_TRUE(store_->AddApiToken(TokenOf("00000000000000b3", "cy", kT0 + 3, kT0 + 10)).ok());
  ASSERT_TRUE(store_->AddApiToken(TokenOf("00000000000000b4", "di", kT0 + 4, kT0 + 3600)).ok());
  auto revoked = store_->RevokeApiToken("00000000000000b4", "root-admin", "left",
                                        absl::FromUnixSeconds(kT0 + 5));
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(revoked->revoked_by(), "root-admin");
  EXPECT_EQ(revoked->revoked_at().seconds(), kT0 + 5);

  const absl::Time now = absl::FromUnixSeconds(kT0 + 100);
  auto active = store_->ListApiTokens(false, now);
  ASSERT_TRUE(active.ok()) << active.status();
  EXPECT_THAT(Ids(*active), ElementsAre("00000000000000b1", "00000000000000b2"));
  auto all = store_->ListApiTokens(true, now);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Ids(*all), ElementsAre("00000000000000b1", "00000000000000b2", "00000000000000b3",
                                     "00000000000000b4"));
}

TEST_P(IdentityStoreConformanceTest, ATokenIsRevokedOnce) {
  auto unknown = store_->RevokeApiToken("00000000000000c9", "root-admin", "x", absl::Now());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound) << unknown.status();
  ASSERT_TRUE(store_->AddApiToken(TokenOf("00000000000000c1", "ann", kT0, kT0 + 3600)).ok());
  ASSERT_TRUE(store_->RevokeApiToken("00000000000000c1", "root-admin", "x", absl::Now()).ok());
  auto twice = store_->RevokeApiToken("00000000000000c1", "other", "y", absl::Now());
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kFailedPrecondition) << twice.status();
  EXPECT_THAT(twice.status().message(), HasSubstr("root-admin"));
  auto got = store_->GetApiToken("00000000000000c1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_TRUE((*got)->token.has_revoked_at());
}

v1::Revocation RevocationOf(const std::string& serial, const std::string& fingerprint, int64_t at) {
  v1::Revocation r;
  r.set_serial(serial);
  r.set_fingerprint(fingerprint);
  r.set_reason("laptop stolen; O'Brien said \"now\"");  // stored verbatim
  r.set_revoked_by("root-admin");
  r.mutable_revoked_at()->set_seconds(at);
  return r;
}

TEST_P(IdentityStoreConformanceTest, RevocationsAreStoredOnceAndListedOldestFirst) {
  const std::string fp(64, 'a');
  auto first = store_->AddRevocation(RevocationOf("1f", "", kT0));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->serial(), "1f");
  EXPECT_EQ(first->revoked_at().seconds(), kT0);
  ASSERT_TRUE(store_->AddRevocation(RevocationOf("", fp, kT0 + 1)).ok());
  ASSERT_TRUE(store_->AddRevocation(RevocationOf("2a", std::string(64, 'b'), kT0 + 2)).ok());

  EXPECT_EQ(store_->AddRevocation(RevocationOf("1f", "", kT0 + 3)).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->AddRevocation(RevocationOf("3c", fp, kT0 + 3)).status().code(),
            absl::StatusCode::kAlreadyExists);

  auto all = store_->ListRevocations();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].serial(), "1f");
  EXPECT_EQ((*all)[1].fingerprint(), fp);
  EXPECT_EQ((*all)[2].serial(), "2a");
  EXPECT_EQ((*all)[0].reason(), "laptop stolen; O'Brien said \"now\"");
  EXPECT_EQ((*all)[0].revoked_by(), "root-admin");
}

// A host revocation is a row with the host alone; a host named on a certificate revocation is a
// note and does not stand in its way.
TEST_P(IdentityStoreConformanceTest, AHostIsRevokedOnceBesideItsCertificates) {
  v1::Revocation cert = RevocationOf("4d", "", kT0);
  cert.set_host("fs01");
  ASSERT_TRUE(store_->AddRevocation(cert).ok());
  v1::Revocation host = RevocationOf("", "", kT0 + 1);
  host.set_host("fs01");
  auto stored = store_->AddRevocation(host);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->host(), "fs01");
  EXPECT_TRUE(stored->serial().empty());
  EXPECT_TRUE(stored->fingerprint().empty());

  auto twice = store_->AddRevocation(RevocationOf("", "", kT0 + 2));
  EXPECT_FALSE(twice.ok()) << "neither serial, fingerprint nor host: nothing to revoke";
  host.mutable_revoked_at()->set_seconds(kT0 + 3);
  auto again = store_->AddRevocation(host);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr("fs01"));
  v1::Revocation other = host;
  other.set_host("fs02");
  ASSERT_TRUE(store_->AddRevocation(other).ok());

  auto all = store_->ListRevocations();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].serial(), "4d");
  EXPECT_EQ((*all)[1].host(), "fs01");
  EXPECT_TRUE((*all)[1].serial().empty());
  EXPECT_EQ((*all)[1].revoked_at().seconds(), kT0 + 1);
  EXPECT_EQ((*all)[2].host(), "fs02");
}

}  // namespace
}  // namespace smbfleet::collector::store_testing

#include "collector/web/credential_check.h"

#include <string>

#include "collector/auth/api_tokens.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;

class FakeRevocations : public RevocationChecker {
 public:
  bool IsRevoked(absl::string_view serial, absl::string_view fingerprint) const override {
    return fingerprint == revoked;
  }
  bool IsHostRevoked(absl::string_view) const override { return false; }
  std::string revoked;
};

TEST(CredentialCheckTest, TokenStandsUntilRevokedOrGone) {
  std::unique_ptr<IdentityStore> identity = NewMemoryIdentityStore();
  ApiTokens tokens(identity.get());
  auto created = tokens.Create("vera", {"viewer"}, absl::Now() + absl::Hours(1), "admin");
  ASSERT_TRUE(created.ok()) << created.status();
  auto check = CredentialStillStands(identity.get(), nullptr);
  Principal p;
  p.name = "vera";
  p.token_id = created->token.id();
  EXPECT_TRUE(check(p).ok());
  ASSERT_TRUE(identity->RevokeApiToken(p.token_id, "admin", "left", absl::Now()).ok());
  absl::Status s = check(p);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(s.message(), HasSubstr("revoked"));
  p.token_id = "0123456789abcdef";
  EXPECT_THAT(check(p).message(), HasSubstr("no longer exists"));
}

TEST(CredentialCheckTest, CertificateStandsUntilRevoked) {
  FakeRevocations revocations;
  auto check = CredentialStillStands(nullptr, &revocations);
  Principal p;
  p.name = "alice";
  p.serial = "1a";
  p.fingerprint = "ab12";
  EXPECT_TRUE(check(p).ok());
  revocations.revoked = "ab12";
  EXPECT_EQ(check(p).code(), absl::StatusCode::kUnauthenticated);
}

TEST(CredentialCheckTest, ExpiredCredentialDoesNotStand) {
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  auto check = CredentialStillStands(nullptr, nullptr, [&] { return now; });
  Principal p;
  p.expires_unix = 1'800'000'060;
  EXPECT_TRUE(check(p).ok());
  now += absl::Minutes(2);
  EXPECT_THAT(check(p).message(), HasSubstr("expired"));
}

}  // namespace
}  // namespace smbfleet::collector

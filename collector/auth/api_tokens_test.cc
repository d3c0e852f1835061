#include "collector/auth/api_tokens.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

constexpr int64_t kT0 = 1'800'000'000;

TEST(ParseApiTokenTest, AcceptsOnlyTheExactShape) {
  const std::string secret_hex(64, 'a');
  auto ok = ParseApiToken(absl::StrCat("sft_0123456789abcdef_", secret_hex));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->id, "0123456789abcdef");
  EXPECT_EQ(ok->secret.size(), 32u);
  for (const std::string& bad : {
           std::string(""),
           absl::StrCat("xyz_0123456789abcdef_", secret_hex),
           absl::StrCat("sft_0123456789ABCDEF_", secret_hex),
           absl::StrCat("sft_0123456789abcde_", secret_hex),
           absl::StrCat("sft_0123456789abcdef", secret_hex),
           absl::StrCat("sft_0123456789abcdef_", secret_hex.substr(1)),
           absl::StrCat("sft_0123456789abcdef_", secret_hex, "0"),
           absl::StrCat("sft_0123456789abcdef_", std::string(63, 'a'), "g"),
       }) {
    auto r = ParseApiToken(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << bad;
    // Never the secret in the message.
    EXPECT_FALSE(absl::StrContains(r.status().message(), std::string(20, 'a'))) << r.status();
  }
  EXPECT_EQ(FormatApiToken("0123456789abcdef", std::string(32, '\xaa')),
            absl::StrCat("sft_0123456789abcdef_", secret_hex));
}

class ApiTokensTest : public ::testing::Test {
 protected:
  ApiTokensTest()
      : store_(NewMemoryIdentityStore()), tokens_(store_.get(), [this] { return now_; }) {}

  absl::Time now_ = absl::FromUnixSeconds(kT0);
  std::unique_ptr<IdentityStore> store_;
  ApiTokens tokens_;
};

TEST_F(ApiTokensTest, ATokenIsItsOwnersUntilItExpires) {
  auto created = tokens_.Create("Ann", {"viewer", "approver"}, now_ + absl::Hours(1), "root");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->token.name(), "ann");
  EXPECT_TRUE(absl::StartsWith(created->bearer, absl::StrCat("sft_", created->token.id(), "_")));
  // Only the hash is stored.
  auto stored = store_->GetApiToken(created->token.id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->secret_sha256, Sha256(ParseApiToken(created->bearer)->secret));
  EXPECT_FALSE(absl::StrContains((*stored)->token.DebugString(), created->bearer.substr(21)));

  auto p = tokens_.VerifyToken(created->bearer);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "ann");
  EXPECT_EQ(p->kind, PrincipalKind::kOperator);
  EXPECT_EQ(p->roles, (std::vector<std::string>{"viewer", "approver"}));
  EXPECT_EQ(p->token_id, created->token.id());

  now_ += absl::Hours(1);
  auto expired = tokens_.VerifyToken(created->bearer);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(absl::StrContains(expired.status().message(), "expired")) << expired.status();
}

TEST_F(ApiTokensTest, AWrongSecretOrARevokedTokenIsRefused) {
  auto created = tokens_.Create("ann", {"admin"}, now_ + absl::Hours(1), "root");
  ASSERT_TRUE(created.ok()) << created.status();
  std::string wrong = created->bearer;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  auto p = tokens_.VerifyToken(wrong);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(absl::StrContains(p.status().message(), created->token.id())) << p.status();

  auto unknown = tokens_.VerifyToken(absl::StrCat("sft_00000000000000ff_", std::string(64, '0')));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnauthenticated);

  ASSERT_TRUE(store_->RevokeApiToken(created->token.id(), "root", "left", now_).ok());
  auto revoked = tokens_.VerifyToken(created->bearer);
  ASSERT_FALSE(revoked.ok());
  EXPECT_TRUE(absl::StrContains(revoked.status().message(), "revoked")) << revoked.status();
}

TEST_F(ApiTokensTest, CreationChecksEachField) {
  const absl::Time later = now_ + absl::Hours(1);
  EXPECT_TRUE(
      absl::StrContains(tokens_.Create("", {"viewer"}, later, "r").status().message(), "name"));
  EXPECT_TRUE(
      absl::StrContains(tokens_.Create("a\nb", {"viewer"}, later, "r").status().message(), "name"));
  EXPECT_TRUE(absl::StrContains(tokens_.Create("ann", {}, later, "r").status().message(), "roles"));
  EXPECT_TRUE(absl::StrContains(
      tokens_.Create("ann", {"viewer", "root"}, later, "r").status().message(), "roles[1]"));
  EXPECT_TRUE(absl::StrContains(
      tokens_.Create("ann", {"viewer"}, now_ - absl::Seconds(1), "r").status().message(),
      "expires_at"));
  // A far expiry is brought down to the longest lifetime.
  auto capped = tokens_.Create("ann", {"viewer"}, now_ + absl::Hours(24 * 3650), "r");
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->token.expires_at().seconds(),
            absl::ToUnixSeconds(now_ + ApiTokens::kMaxLifetime));
}

}  // namespace
}  // namespace smbfleet::collector

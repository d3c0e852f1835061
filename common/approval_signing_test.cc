#include "common/approval_signing.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet {
namespace {

using ::testing::HasSubstr;

v1::ApprovalPayload SamplePayload() {
  v1::ApprovalPayload p;
  p.set_change_id("c-1");
  p.set_version(1);
  p.set_nonce("n-1");
  p.mutable_not_after()->set_seconds(1'800'000'000);
  p.set_proposed_by("pat");
  p.set_approvals_required(1);
  for (const char* host : {"fs02", "fs01"}) {
    v1::HostOrder* h = p.add_hosts();
    h->set_host(host);
    v1::SettingChange* b = h->add_settings();
    b->set_setting("server.smb1Enabled");
    b->set_expected_current("true");
    b->set_value("false");
    v1::SettingChange* a = h->add_settings();
    a->set_setting("server.requireSigning");
    a->set_expected_current("false");
    a->set_value("true");
  }
  return p;
}

TEST(ApprovalSigningTest, CanonicalEncodingDoesNotDependOnOrder) {
  v1::ApprovalPayload a = SamplePayload();
  v1::ApprovalPayload b = a;
  std::swap(*b.mutable_hosts(0), *b.mutable_hosts(1));
  std::swap(*b.mutable_hosts(0)->mutable_settings(0), *b.mutable_hosts(0)->mutable_settings(1));
  auto ea = CanonicalApprovalPayload(a);
  auto eb = CanonicalApprovalPayload(b);
  ASSERT_TRUE(ea.ok()) << ea.status();
  ASSERT_TRUE(eb.ok()) << eb.status();
  EXPECT_EQ(*ea, *eb);
  auto parsed = ParseApprovalPayload(*ea);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->hosts(0).host(), "fs01");
  EXPECT_EQ(parsed->hosts(0).settings(0).setting(), "server.requireSigning");
  EXPECT_EQ(parsed->format(), kApprovalFormat);
}

TEST(ApprovalSigningTest, RefusesIncompleteOrDuplicatePayloads) {
  v1::ApprovalPayload p = SamplePayload();
  p.clear_nonce();
  EXPECT_THAT(CanonicalApprovalPayload(p).status().message(), HasSubstr("nonce"));
  p = SamplePayload();
  p.clear_not_after();
  EXPECT_THAT(CanonicalApprovalPayload(p).status().message(), HasSubstr("not_after"));
  p = SamplePayload();
  p.mutable_hosts(1)->set_host("fs02");
  EXPECT_THAT(CanonicalApprovalPayload(p).status().message(), HasSubstr("'fs02' appears twice"));
}

TEST(ApprovalSigningTest, ParseRefusesNonCanonicalBytes) {
  v1::ApprovalPayload p = SamplePayload();
  p.set_format(std::string(kApprovalFormat));
  std::string unsorted = p.SerializeAsString();  // fs02 before fs01
  EXPECT_THAT(ParseApprovalPayload(unsorted).status().message(), HasSubstr("canonical"));
  EXPECT_FALSE(ParseApprovalPayload("\xff\xff\xff").ok());
  p.set_format("other");
  EXPECT_THAT(ParseApprovalPayload(p.SerializeAsString()).status().message(),
              HasSubstr("format 'other'"));
}

TEST(ApprovalSigningTest, SignaturesVerifyOnlyForTheSignedBytesAndKey) {
  auto key = GenerateEd25519Key();
  auto other = GenerateEd25519Key();
  ASSERT_TRUE(key.ok() && other.ok());
  auto bytes = CanonicalApprovalPayload(SamplePayload());
  ASSERT_TRUE(bytes.ok());
  auto sig = SignEd25519(key->private_pem, *bytes);
  ASSERT_TRUE(sig.ok()) << sig.status();
  EXPECT_EQ(sig->size(), 64u);
  EXPECT_TRUE(VerifyEd25519(key->public_raw, *bytes, *sig).ok());
  EXPECT_FALSE(VerifyEd25519(other->public_raw, *bytes, *sig).ok());
  std::string tampered = *bytes;
  tampered[tampered.size() / 2] ^= 1;
  EXPECT_EQ(VerifyEd25519(key->public_raw, tampered, *sig).code(),
            absl::StatusCode::kPermissionDenied);
  std::string forged = *sig;
  forged[0] ^= 1;
  EXPECT_FALSE(VerifyEd25519(key->public_raw, *bytes, forged).ok());
  EXPECT_FALSE(VerifyEd25519(key->public_raw, *bytes, sig->substr(1)).ok());
}

TEST(ApprovalSigningTest, KeysRoundTripThroughPemAndText) {
  auto key = GenerateEd25519Key();
  ASSERT_TRUE(key.ok());
  auto again = Ed25519KeyFromPem(key->private_pem);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->public_raw, key->public_raw);
  EXPECT_EQ(KeyId(key->public_raw).size(), 16u);
  auto raw = ParsePublicKeyText(PublicKeyText(key->public_raw));
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(*raw, key->public_raw);
  EXPECT_THAT(ParsePublicKeyText("rsa:AAAA").status().message(), HasSubstr("ed25519:"));
  EXPECT_THAT(ParsePublicKeyText("ed25519:AAAA").status().message(), HasSubstr("3 bytes"));
  EXPECT_FALSE(Ed25519KeyFromPem("-----BEGIN PRIVATE KEY-----\nxx\n").ok());
}

}  // namespace
}  // namespace smbfleet

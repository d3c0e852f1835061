#include "common/approval_signing.h"

#include <string>
#include <vector>

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
  EXPECT_EQ(parsed->format(), kApprovalFormatV1);
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
  p.set_format(std::string(kApprovalFormatV1));
  std::string unsorted = p.SerializeAsString();  // fs02 before fs01
  EXPECT_THAT(ParseApprovalPayload(unsorted).status().message(), HasSubstr("canonical"));
  EXPECT_FALSE(ParseApprovalPayload("\xff\xff\xff").ok());
  p.set_format("other");
  EXPECT_THAT(ParseApprovalPayload(p.SerializeAsString()).status().message(),
              HasSubstr("format 'other'"));
}

// SamplePayload as v2: the hosts moved into the tree, the payload holding its head.
v1::ApprovalPayload SampleV2(const ApprovalHostTree& tree) {
  v1::ApprovalPayload p = SamplePayload();
  p.clear_hosts();
  p.set_format(std::string(kApprovalFormatV2));
  p.set_hosts_root(tree.root());
  p.set_host_count(static_cast<uint32_t>(tree.size()));
  return p;
}

TEST(ApprovalSigningTest, HostTreeSortsHostsAndProvesEachOne) {
  v1::ApprovalPayload sample = SamplePayload();
  auto tree = ApprovalHostTree::Build({sample.hosts().begin(), sample.hosts().end()});
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_EQ(tree->size(), 2U);
  EXPECT_EQ(tree->hosts()[0].host(), "fs01");
  EXPECT_EQ(tree->hosts()[0].settings(0).setting(), "server.requireSigning");  // sorted
  EXPECT_EQ(tree->IndexOf("fs02"), 1U);
  EXPECT_FALSE(tree->IndexOf("fs03").has_value());
  auto canonical = CanonicalHostOrder(sample.hosts(1));  // fs01, settings unsorted
  ASSERT_TRUE(canonical.ok());
  EXPECT_EQ(tree->CanonicalAt(0), *canonical);

  auto bytes = CanonicalApprovalPayload(SampleV2(*tree));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto parsed = ParseApprovalPayload(*bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->format(), kApprovalFormatV2);
  EXPECT_EQ(parsed->hosts_size(), 0);
  for (size_t i = 0; i < tree->size(); ++i) {
    EXPECT_TRUE(VerifyHostOrderInclusion(*parsed, tree->CanonicalAt(i), i, tree->ProofAt(i)).ok());
  }
  // Another host's order at this index, or this order at another index, does not hold.
  EXPECT_FALSE(VerifyHostOrderInclusion(*parsed, tree->CanonicalAt(1), 0, tree->ProofAt(0)).ok());
  EXPECT_FALSE(VerifyHostOrderInclusion(*parsed, tree->CanonicalAt(0), 1, tree->ProofAt(0)).ok());
  // A changed value is another leaf.
  v1::HostOrder widened = tree->hosts()[0];
  widened.mutable_settings(0)->set_value("false");
  auto widened_bytes = CanonicalHostOrder(widened);
  ASSERT_TRUE(widened_bytes.ok());
  EXPECT_FALSE(VerifyHostOrderInclusion(*parsed, *widened_bytes, 0, tree->ProofAt(0)).ok());
}

TEST(ApprovalSigningTest, HostTreeRefusesNoRepeatedOrNamelessHosts) {
  EXPECT_THAT(ApprovalHostTree::Build({}).status().message(), HasSubstr("no hosts"));
  v1::ApprovalPayload sample = SamplePayload();
  std::vector<v1::HostOrder> twice = {sample.hosts(0), sample.hosts(0)};
  EXPECT_THAT(ApprovalHostTree::Build(twice).status().message(), HasSubstr("'fs02' appears twice"));
  std::vector<v1::HostOrder> nameless = {v1::HostOrder()};
  EXPECT_THAT(ApprovalHostTree::Build(nameless).status().message(), HasSubstr("no host"));
  EXPECT_FALSE(CanonicalHostOrder(v1::HostOrder()).ok());
}

TEST(ApprovalSigningTest, FormatsAreNotMixed) {
  v1::ApprovalPayload sample = SamplePayload();
  auto tree = ApprovalHostTree::Build({sample.hosts().begin(), sample.hosts().end()});
  ASSERT_TRUE(tree.ok());
  v1::ApprovalPayload v2 = SampleV2(*tree);
  v2.add_hosts()->set_host("fs01");  // a v2 payload listing hosts
  EXPECT_THAT(CanonicalApprovalPayload(v2).status().message(), HasSubstr("only by hosts_root"));
  v2 = SampleV2(*tree);
  v2.set_hosts_root("short");
  EXPECT_THAT(CanonicalApprovalPayload(v2).status().message(), HasSubstr("hosts_root is 5 bytes"));
  v2 = SampleV2(*tree);
  v2.set_host_count(0);
  EXPECT_THAT(CanonicalApprovalPayload(v2).status().message(), HasSubstr("host_count"));
  v1::ApprovalPayload v1 = SamplePayload();
  v1.set_hosts_root(tree->root());  // a v1 payload with a tree head
  EXPECT_THAT(CanonicalApprovalPayload(v1).status().message(), HasSubstr("v1 payload"));
  v1 = SamplePayload();
  v1.set_format("smbfleet-approval-v9");
  EXPECT_THAT(CanonicalApprovalPayload(v1).status().message(), HasSubstr("format"));
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

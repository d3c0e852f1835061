// OrderVerifier with real Ed25519 keys: each way an order without enough valid approvals is
// refused, and what a verified order carries.

#include "agent/core/order_verifier.h"

#include <string>
#include <vector>

#include "agent/core/testing/test_approvals.h"
#include "common/approval_signing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

using smbfleet::v1::ApprovalPayload;
using smbfleet::v1::ChangeOrder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using testing::TestApprovals;

class OrderVerifierTest : public ::testing::Test {
 protected:
  OrderVerifierTest() {
    raw_.set_change_id("c1");
    raw_.set_version(4);
    raw_.set_nonce("host-nonce");
    auto* s = raw_.add_settings();
    s->set_setting("share.encryptData");
    s->set_share("finance");
    s->set_value("true");
    s->set_expected_current("false");
    raw_.add_options("close-share");
    payload_ = TestApprovals::PayloadOf(raw_, {"fs01", "fs02"}, now_ + absl::Hours(1));
    keys_ = PinnedKeys(approvals_.Trust({"alice", "bob", "carol"}));
    check_.host = "fs01";
    check_.now = now_;
    check_.min_approvals = 1;
  }

  absl::StatusOr<VerifiedOrder> Verify(const ChangeOrder& o) {
    return VerifyOrder(o, keys_, check_);
  }
  ChangeOrder Signed(const std::vector<std::string>& by) {
    return approvals_.Sign(raw_, payload_, by);
  }
  std::string KeyOf(const std::string& name) { return KeyId(approvals_.key(name).public_raw); }

  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  TestApprovals approvals_;
  ChangeOrder raw_;
  ApprovalPayload payload_;
  TrustedKeys keys_;
  OrderCheck check_;
};

TEST_F(OrderVerifierTest, ValidOrderCarriesThePayloadsSettingsForThisHostAndTheOrdersIds) {
  ChangeOrder o = Signed({"alice"});
  o.mutable_settings(0)->set_value("false");  // unsigned: ignored
  o.clear_options();
  o.add_options("kill-client-ip");
  absl::StatusOr<VerifiedOrder> v = Verify(o);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->order.change_id(), "c1");
  EXPECT_EQ(v->order.version(), 4u);
  EXPECT_EQ(v->order.nonce(), "host-nonce");
  ASSERT_THAT(v->order.settings(), SizeIs(1));
  EXPECT_EQ(v->order.settings(0).value(), "true");
  EXPECT_THAT(v->order.options(), ElementsAre("close-share"));
  EXPECT_EQ(v->order.not_after().seconds(), absl::ToUnixSeconds(now_ + absl::Hours(1)));
  EXPECT_EQ(v->payload.nonce(), "approval-c1");
}

TEST_F(OrderVerifierTest, HostIsComparedInLowerCase) {
  check_.host = "FS01";
  EXPECT_TRUE(Verify(Signed({"alice"})).ok());
}

TEST_F(OrderVerifierTest, TamperedPayloadByteDoesNotVerify) {
  ChangeOrder o = Signed({"alice"});
  std::string* bytes = o.mutable_approval_payload();
  (*bytes)[bytes->find("fs02") + 3] = '3';  // another host, same length: still canonical
  absl::Status s = Verify(o).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("signature 1 (approver 'alice', key '" + KeyOf("alice") +
                                     "'): does not verify over the payload"));
  EXPECT_THAT(s.message(), HasSubstr("0 valid signature(s) by distinct approvers of 1 needed"));
}

TEST_F(OrderVerifierTest, NonCanonicalPayloadIsRefused) {
  ChangeOrder o = Signed({"alice"});
  // approvals_required again, first: the same message, not its one canonical encoding.
  o.mutable_approval_payload()->insert(0, "\x38\x01", 2);
  absl::Status s = Verify(o).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("not in canonical encoding"));
}

TEST_F(OrderVerifierTest, ForgedSignatureDoesNotVerify) {
  ChangeOrder o = Signed({});
  v1::OrderSignature forged = approvals_.SignatureBy("mallory", o.approval_payload());
  forged.set_approver("alice");
  forged.set_key_id(KeyOf("alice"));  // claims alice's key, signed with mallory's
  *o.add_signatures() = forged;
  absl::Status s = Verify(o).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("signature 1 (approver 'alice'"));
  EXPECT_THAT(s.message(), HasSubstr("does not verify"));
}

TEST_F(OrderVerifierTest, OneOfTwoRequiredSignaturesDroppedIsRefused) {
  payload_.set_approvals_required(2);
  EXPECT_TRUE(Verify(Signed({"alice", "bob"})).ok());
  absl::Status s = Verify(Signed({"alice"})).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(),
              HasSubstr("1 valid signature(s) by distinct approvers of 2 needed (1 carried)"));
}

TEST_F(OrderVerifierTest, TheAgentsMinimumWinsOverTheOrdersRequirement) {
  check_.min_approvals = 2;  // payload says 1
  absl::Status s = Verify(Signed({"alice"})).status();
  EXPECT_THAT(s.message(), HasSubstr("of 2 needed"));
}

TEST_F(OrderVerifierTest, TheSameApproverSigningTwiceCountsOnce) {
  payload_.set_approvals_required(2);
  absl::Status s = Verify(Signed({"alice", "alice"})).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("signature 2 (approver 'alice'"));
  EXPECT_THAT(s.message(), HasSubstr("the same approver again does not count"));
}

TEST_F(OrderVerifierTest, TheSameApproverWithTwoKeysCountsOnce) {
  keys_[KeyOf("carol")].approver = "alice";  // alice has a second key
  payload_.set_approvals_required(2);
  ChangeOrder o = Signed({"alice"});
  v1::OrderSignature second = approvals_.SignatureBy("carol", o.approval_payload());
  second.set_approver("alice");
  *o.add_signatures() = second;
  absl::Status s = Verify(o).status();
  EXPECT_THAT(s.message(), HasSubstr("the same approver again does not count"));
}

TEST_F(OrderVerifierTest, TheProposersSignatureDoesNotCount) {
  payload_.set_proposed_by("Alice");
  absl::Status s = Verify(Signed({"alice"})).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("the proposer's own approval does not count"));
  EXPECT_TRUE(Verify(Signed({"alice", "bob"})).ok());
}

TEST_F(OrderVerifierTest, KeyNotTrustedDoesNotCount) {
  absl::Status s = Verify(Signed({"mallory"})).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("signature 1 (approver 'mallory', key '" + KeyOf("mallory") +
                                     "'): key not trusted by this host"));
}

TEST_F(OrderVerifierTest, TrustedKeyClaimedByAnotherApproverDoesNotCount) {
  ChangeOrder o = Signed({"bob"});
  o.mutable_signatures(0)->set_approver("carol");
  absl::Status s = Verify(o).status();
  EXPECT_THAT(s.message(), HasSubstr("the key belongs to 'bob'"));
}

TEST_F(OrderVerifierTest, RevokedKeyAbsentFromTheNewestSetDoesNotCount) {
  v1::ApproverSet set;
  set.ParseFromString(approvals_.Set(2, {"alice"}).approver_set());
  keys_ = WithApproverSet(PinnedKeys(approvals_.Trust({})), set);
  EXPECT_TRUE(Verify(Signed({"alice"})).ok());
  absl::Status s = Verify(Signed({"bob"})).status();
  EXPECT_THAT(s.message(), HasSubstr("approver 'bob'"));
  EXPECT_THAT(s.message(), HasSubstr("key not trusted by this host"));
}

TEST_F(OrderVerifierTest, NotAfterPassedIsDeadlineExceeded) {
  check_.now = now_ + absl::Hours(1);  // "at" counts as expired
  absl::Status s = Verify(Signed({"alice"})).status();
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("order expired at 2027-01-15T09:00:00Z"));
}

TEST_F(OrderVerifierTest, HostNotInThePayloadIsRefused) {
  check_.host = "fs03";
  absl::Status s = Verify(Signed({"alice"})).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("this host ('fs03') is not among the 2 host(s)"));
  check_.host = "";
  EXPECT_THAT(Verify(Signed({"alice"})).status().message(),
              HasSubstr("does not know its own host identity"));
}

// "smbfleet-approval-v2": the payload names its hosts by their Merkle tree head; the order
// carries this host's order and the proof that it is one of the signed ones.
TEST_F(OrderVerifierTest, V2OrderCarriesItsOwnHostsSignedSettings) {
  ChangeOrder o = approvals_.SignV2(raw_, payload_, {"alice"}, "fs01");
  o.mutable_settings(0)->set_value("false");  // unsigned: ignored
  absl::StatusOr<VerifiedOrder> v = Verify(o);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->payload.format(), kApprovalFormatV2);
  EXPECT_EQ(v->payload.host_count(), 2U);
  ASSERT_THAT(v->order.settings(), SizeIs(1));
  EXPECT_EQ(v->order.settings(0).value(), "true");
  EXPECT_THAT(v->order.options(), ElementsAre("close-share"));
  // What is journaled verifies again after a restart.
  EXPECT_EQ(v->order.host_order(), o.host_order());
  EXPECT_TRUE(Verify(v->order).ok());
}

TEST_F(OrderVerifierTest, V2OrderOfAnotherHostIsRefused) {
  // fs02's own order and proof, sent to fs01: valid for fs02, not for this host.
  ChangeOrder o = approvals_.SignV2(raw_, payload_, {"alice"}, "fs02");
  EXPECT_THAT(Verify(o).status().message(),
              HasSubstr("the order's host order is for 'fs02', not this host ('fs01')"));
  check_.host = "fs03";  // not in the tree: the collector has no order to give it
  ChangeOrder none = approvals_.SignV2(raw_, payload_, {"alice"}, "fs03");
  EXPECT_THAT(Verify(none).status().message(), HasSubstr("carries no valid host order"));
}

TEST_F(OrderVerifierTest, V2HostOrderNotInTheSignedTreeIsRefused) {
  ChangeOrder o = approvals_.SignV2(raw_, payload_, {"alice"}, "fs01");
  // The same host with a widened setting: a leaf the approvers never signed.
  v1::HostOrder widened;
  ASSERT_TRUE(widened.ParseFromString(o.host_order()));
  widened.mutable_settings(0)->set_value("false");
  ChangeOrder tampered = o;
  tampered.set_host_order(CanonicalHostOrder(widened).value());
  absl::Status s = Verify(tampered).status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("is not among the 2 host(s) the approvers signed for"));
  // The right leaf with a bent proof, or at another index.
  tampered = o;
  (*tampered.mutable_host_proof(0))[0] ^= 1;
  EXPECT_FALSE(Verify(tampered).ok());
  tampered = o;
  tampered.set_host_index(1);
  EXPECT_FALSE(Verify(tampered).ok());
  tampered = o;
  tampered.clear_host_proof();
  EXPECT_FALSE(Verify(tampered).ok());
  // A leaf in another encoding (settings out of order) is refused before the proof.
  v1::HostOrder two;
  ASSERT_TRUE(two.ParseFromString(o.host_order()));
  *two.add_settings() = two.settings(0);
  two.mutable_settings(1)->set_setting("server.requireSigning");  // after share.*
  tampered = o;
  tampered.set_host_order(two.SerializeAsString());
  EXPECT_THAT(Verify(tampered).status().message(), HasSubstr("canonical"));
}

TEST_F(OrderVerifierTest, V2SignaturesCoverTheTreeHead) {
  ChangeOrder o = approvals_.SignV2(raw_, payload_, {"alice"}, "fs01");
  // Another tree (fs01 and fs03): fs01's order and proof hold for it, alice's signature is over
  // the first tree's head.
  ApprovalPayload other = TestApprovals::PayloadOf(raw_, {"fs01", "fs03"}, now_ + absl::Hours(1));
  ChangeOrder swapped = approvals_.SignV2(raw_, other, {"mallory"}, "fs01");
  swapped.mutable_signatures()->CopyFrom(o.signatures());
  EXPECT_THAT(Verify(swapped).status().message(), HasSubstr("does not verify over the payload"));
}

TEST_F(OrderVerifierTest, PayloadOfAnotherChangeOrVersionIsRefused) {
  ChangeOrder o = Signed({"alice"});
  o.set_version(5);
  EXPECT_THAT(Verify(o).status().message(),
              HasSubstr("the payload is for change 'c1' v4, the order is change 'c1' v5"));
  o.set_version(4);
  o.set_change_id("c2");
  EXPECT_TRUE(absl::IsPermissionDenied(Verify(o).status()));
}

TEST_F(OrderVerifierTest, NoKeysOrNoPayloadIsRefused) {
  EXPECT_THAT(Verify(raw_).status().message(), HasSubstr("carries no approval payload"));
  keys_.clear();
  EXPECT_THAT(Verify(Signed({"alice"})).status().message(),
              HasSubstr("no approver keys configured"));
}

TEST_F(OrderVerifierTest, ApproverSetVerifiesOnlyWithTheRoot) {
  absl::StatusOr<v1::ApproverSet> set =
      VerifyApproverSet(approvals_.Set(3, {"alice", "bob"}), approvals_.root().public_raw);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->serial(), 3u);
  EXPECT_THAT(set->approvers(), SizeIs(2));

  absl::Status s =
      VerifyApproverSet(approvals_.Set(3, {"mallory"}, "mallory"), approvals_.root().public_raw)
          .status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("does not verify with this host's trust.root"));

  v1::SignedApproverSet tampered = approvals_.Set(3, {"alice"});
  v1::ApproverSet inner;
  inner.ParseFromString(tampered.approver_set());
  inner.set_serial(99);
  tampered.set_approver_set(inner.SerializeAsString());
  EXPECT_TRUE(
      absl::IsPermissionDenied(VerifyApproverSet(tampered, approvals_.root().public_raw).status()));
  EXPECT_THAT(VerifyApproverSet(approvals_.Set(3, {"alice"}), "").status().message(),
              HasSubstr("no root key is configured"));
}

}  // namespace
}  // namespace smbfleet::agent

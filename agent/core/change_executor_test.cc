// The change executor over a real journal folder, a fake applier (settings in a map) and the fake
// collector: enforcement, allowlist, preconditions, duplicates, expiry, rollback, and a crash at
// each step followed by a new executor over the same journal.

#include "agent/core/change_executor.h"

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent/core/testing/fake_clock.h"
#include "agent/core/testing/fake_collector_client.h"
#include "agent/core/testing/fake_settings_applier.h"
#include "agent/core/testing/test_approvals.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

using smbfleet::v1::AckChangeRequest;
using smbfleet::v1::ChangeOrder;
using smbfleet::v1::SettingChange;
using testing::FakeClock;
using testing::FakeCollectorClient;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing::TestApprovals;

using FakeApplier = testing::FakeSettingsApplier;

class ChangeExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/change_executor_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    options_.changes.enforce = true;
    options_.changes.allow = {"server.requireSigning", "share.encryptData"};
    options_.changes.journal_dir = dir_;
    options_.wall_now = [this] { return now_; };
    options_.host = "fs01";
    trust_ = std::make_unique<ApproverTrust>(approvals_.Trust({"alice", "bob"}),
                                             dir_ + "/approver-set.pb");
    options_.trust = trust_.get();
    applier_.values[{"server.requireSigning", ""}] = "false";
    applier_.values[{"share.encryptData", "finance"}] = "false";
  }

  std::unique_ptr<ChangeExecutor> Open(CrashPoint crash = CrashPoint::kNone) {
    ChangeExecutorOptions o = options_;
    o.crash_after = crash;
    auto e = std::make_unique<ChangeExecutor>(o, &applier_, &client_, &clock_);
    e->set_on_changed([this] { ++changed_; });
    absl::Status s = e->Open();
    EXPECT_TRUE(s.ok()) << s;
    return e;
  }

  static ChangeOrder Order(const std::string& id = "c1", uint64_t version = 1) {
    ChangeOrder o;
    o.set_change_id(id);
    o.set_version(version);
    o.set_nonce("n-" + id);
    SettingChange* s = o.add_settings();
    s->set_setting("server.requireSigning");
    s->set_value("true");
    s->set_expected_current("false");
    s = o.add_settings();
    s->set_setting("share.encryptData");
    s->set_share("finance");
    s->set_value("true");
    s->set_expected_current("false");
    return o;
  }

  // The order as approved by `by` for fs01: what the collector forwards.
  ChangeOrder Signed(const ChangeOrder& o, const std::vector<std::string>& by = {"alice"}) {
    return approvals_.Sign(o, TestApprovals::PayloadOf(o, {"fs01"}, now_ + absl::Hours(1)), by);
  }

  std::vector<AckChangeRequest> Acks() { return client_.acks(); }
  std::string Value(const std::string& setting, const std::string& share = "") {
    return applier_.values[{setting, share}];
  }

  std::string dir_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  ChangeExecutorOptions options_;
  TestApprovals approvals_;
  std::unique_ptr<ApproverTrust> trust_;
  FakeApplier applier_;
  FakeClock clock_;
  FakeCollectorClient client_{&clock_};
  int changed_ = 0;
};

TEST_F(ChangeExecutorTest, AppliesJournalsAcksWithBeforeAndAfterAndAsksForAReport) {
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  const std::vector<AckChangeRequest> acks = Acks();
  const AckChangeRequest& ack = acks[0];
  EXPECT_EQ(ack.result(), AckChangeRequest::RESULT_APPLIED) << ack.message();
  EXPECT_EQ(ack.change_id(), "c1");
  EXPECT_EQ(ack.version(), 1u);
  EXPECT_EQ(ack.nonce(), "n-c1");
  ASSERT_THAT(ack.before(), SizeIs(2));
  EXPECT_EQ(ack.before(0).value(), "false");
  EXPECT_EQ(ack.before(1).share(), "finance");
  ASSERT_THAT(ack.after(), SizeIs(2));
  EXPECT_EQ(ack.after(1).value(), "true");
  EXPECT_EQ(Value("share.encryptData", "finance"), "true");
  EXPECT_EQ(changed_, 1);
  EXPECT_EQ(e->CompletedChangeIds(), std::vector<std::string>{"c1"});
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/c1@1.order.json"));
}

TEST_F(ChangeExecutorTest, EnforcementOffIsRefusedWithTheReasonAndNothingIsTouched) {
  options_.changes.enforce = false;
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("changes.enforce is false"));
  EXPECT_EQ(applier_.applies, 0);
  EXPECT_EQ(Value("server.requireSigning"), "false");
  EXPECT_EQ(changed_, 0);
}

TEST_F(ChangeExecutorTest, SettingNotOnTheLocalAllowlistIsRefusedNamingIt) {
  options_.changes.allow = {"server.requireSigning"};
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("share.encryptData is not on this host's"));
  EXPECT_THAT(Acks()[0].message(), HasSubstr("own config does not allow it"));
  EXPECT_EQ(applier_.applies, 0);
}

TEST_F(ChangeExecutorTest, NoApplierIsRefused) {
  options_.no_applier_reason = "source windows-capture:/x cannot apply changes";
  ChangeExecutor e(options_, nullptr, &client_, &clock_);
  ASSERT_TRUE(e.Open().ok());
  e.Submit(Signed(Order()));
  e.Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("windows-capture"));
}

TEST_F(ChangeExecutorTest, PreconditionMismatchNamesSettingExpectedAndFoundAndNeverApplies) {
  applier_.values[{"share.encryptData", "finance"}] = "true";
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_PRECONDITION_FAILED);
  EXPECT_THAT(Acks()[0].message(),
              HasSubstr("share.encryptData [finance]: expected current value 'false', found "
                        "'true'"));
  EXPECT_EQ(applier_.applies, 0);
  EXPECT_EQ(Value("server.requireSigning"), "false");
}

TEST_F(ChangeExecutorTest, TheSameOrderTwiceIsAppliedOnceAndItsAckSentAgain) {
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Submit(Signed(Order()));
  e->Drain();
  e->Submit(Signed(Order()));
  e->Drain();
  EXPECT_EQ(applier_.applies, 1);
  // The two queued copies share one ack; the later resend gets it again.
  ASSERT_THAT(Acks(), SizeIs(2));
  for (const auto& a : Acks()) {
    EXPECT_EQ(a.result(), AckChangeRequest::RESULT_APPLIED);
    EXPECT_EQ(a.SerializeAsString(), Acks()[0].SerializeAsString());
  }
  // A new version of the change is a new order.
  e->Submit(Signed(Order("c1", 2)));
  e->Drain();
  EXPECT_EQ(applier_.applies, 1);  // preconditions (expected false) no longer hold
  EXPECT_EQ(Acks().back().result(), AckChangeRequest::RESULT_PRECONDITION_FAILED);
}

TEST_F(ChangeExecutorTest, ExpiredOrderIsNeverApplied) {
  auto e = Open();
  ChangeOrder o = Order();
  o.mutable_not_after()->set_seconds(absl::ToUnixSeconds(now_));  // "at" counts as expired
  e->Submit(Signed(o));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_FAILED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("order expired at 2027-01-15T08:00:00Z"));
  EXPECT_EQ(applier_.applies, 0);
  EXPECT_EQ(applier_.reads, 0);

  o.set_change_id("c2");
  o.mutable_not_after()->set_seconds(absl::ToUnixSeconds(now_) + 60);
  e->Submit(Signed(o));
  e->Drain();
  EXPECT_EQ(Acks().back().result(), AckChangeRequest::RESULT_APPLIED);
}

TEST_F(ChangeExecutorTest, FailedApplyIsRolledBackToTheBeforeValues) {
  applier_.fail_at = 1;  // requireSigning is set, then share.encryptData fails
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_ROLLED_BACK);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("Set-SmbShare: access denied"));
  EXPECT_EQ(Value("server.requireSigning"), "false");
  EXPECT_EQ(Value("share.encryptData", "finance"), "false");
  EXPECT_EQ(applier_.applies, 2);  // the apply and the restore
  ASSERT_THAT(Acks()[0].after(), SizeIs(2));
  EXPECT_EQ(Acks()[0].after(0).value(), "false");
}

TEST_F(ChangeExecutorTest, FailedRollbackIsFailedNamingBothErrors) {
  applier_.fail_from = 1;  // the second set fails, and so does every set of the restore
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_FAILED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("apply failed: Set-SmbShare: access denied"));
  EXPECT_THAT(Acks()[0].message(), HasSubstr("restoring the previous values failed too"));
}

TEST_F(ChangeExecutorTest, ApplierThatRestoredItselfIsRolledBackWithoutASecondApply) {
  applier_.fail_at = 0;
  applier_.fail_status = absl::AbortedError("testparm rejected the new files; restored");
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_ROLLED_BACK);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("testparm rejected"));
  EXPECT_EQ(applier_.applies, 1);
}

TEST_F(ChangeExecutorTest, AckIsRetriedUntilDeliveredAndSurvivesARestart) {
  client_.ScriptAcks(
      {absl::UnavailableError("collector down"), absl::UnavailableError("collector down")});
  {
    auto e = Open();
    e->Submit(Signed(Order()));
    e->Drain();  // first try fails
    EXPECT_EQ(changed_, 0);
    EXPECT_EQ(e->CompletedChangeIds(), std::vector<std::string>{"c1"});
  }
  auto e = Open();  // the restarted agent: tries again, fails, then delivers
  e->Drain();
  e->Drain();
  EXPECT_EQ(applier_.applies, 1);
  ASSERT_THAT(Acks(), SizeIs(3));
  EXPECT_EQ(Acks()[2].result(), AckChangeRequest::RESULT_APPLIED);
  EXPECT_EQ(changed_, 1);
  e->Drain();
  EXPECT_THAT(Acks(), SizeIs(3));  // delivered: not sent again
}

// A crash at each step, then a new executor over the same journal; the collector resends the
// order when it has no ack. Each case ends with one ack (per result) and the right values.
struct CrashCase {
  CrashPoint point;
  AckChangeRequest::Result result;
  std::string value_after;  // share.encryptData [finance]
  size_t acks;
};

class ChangeExecutorCrashTest : public ChangeExecutorTest,
                                public ::testing::WithParamInterface<CrashCase> {};

TEST_P(ChangeExecutorCrashTest, RecoversToExactlyOneResult) {
  const CrashCase& c = GetParam();
  {
    auto crashed = Open(c.point);
    crashed->Submit(Signed(Order()));
    crashed->Drain();
    ASSERT_TRUE(crashed->crashed());
  }
  auto e = Open();
  e->Submit(Signed(Order()));  // the collector resends what it has no ack for
  e->Drain();
  std::vector<AckChangeRequest> acks = Acks();
  ASSERT_THAT(acks, SizeIs(c.acks));
  for (const auto& a : acks) {
    EXPECT_EQ(a.result(), c.result) << a.message();
    EXPECT_EQ(a.SerializeAsString(), acks[0].SerializeAsString());
  }
  EXPECT_EQ(Value("share.encryptData", "finance"), c.value_after);
  EXPECT_LE(applier_.applies, 1);
  e->Submit(Signed(Order()));
  e->Drain();
  EXPECT_LE(applier_.applies, 1);  // never applied again
}

INSTANTIATE_TEST_SUITE_P(
    EachStep, ChangeExecutorCrashTest,
    ::testing::Values(
        // Nothing journaled: the resent order is applied normally.
        CrashCase{CrashPoint::kBeforeJournal, AckChangeRequest::RESULT_APPLIED, "true", 1},
        // Journaled, not applied: the host still has the before-values.
        CrashCase{CrashPoint::kAfterJournal, AckChangeRequest::RESULT_ROLLED_BACK, "false", 1},
        // Applied, not recorded: the host has the order's values.
        CrashCase{CrashPoint::kAfterApply, AckChangeRequest::RESULT_APPLIED, "true", 1},
        // Result recorded, ack not sent: the recorded ack is sent, the order not applied again.
        CrashCase{CrashPoint::kAfterFinish, AckChangeRequest::RESULT_APPLIED, "true", 1},
        // Ack sent, not recorded as sent: the one unavoidable duplicate, the same ack twice.
        CrashCase{CrashPoint::kAfterAck, AckChangeRequest::RESULT_APPLIED, "true", 2}));

TEST_F(ChangeExecutorTest, RecoveryOfAHalfAppliedOrderRestoresTheBeforeValues) {
  {
    auto crashed = Open(CrashPoint::kAfterApply);
    applier_.fail_at = 1;  // the crash comes after one of two settings took effect
    applier_.fail_status = absl::InternalError("killed");
    crashed->Submit(Signed(Order()));
    crashed->Drain();
  }
  EXPECT_EQ(Value("server.requireSigning"), "true");
  applier_.fail_at = -1;
  auto e = Open();
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_ROLLED_BACK);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("interrupted by agent restart midway"));
  EXPECT_EQ(Value("server.requireSigning"), "false");
}

TEST_F(ChangeExecutorTest, CompletedIdsAreBoundedAndMostRecentFirst) {
  options_.max_completed_ids = 2;
  auto e = Open();
  for (const char* id : {"a", "b", "c"}) {
    ChangeOrder o = Order(id);
    o.clear_settings();
    e->Submit(Signed(o));  // no settings: finished as FAILED without touching anything
  }
  e->Drain();
  EXPECT_EQ(e->CompletedChangeIds(), (std::vector<std::string>{"c", "b"}));
}

TEST_F(ChangeExecutorTest, MalformedChangeIdIsAckedFailedAndNotJournaled) {
  auto e = Open();
  e->Submit(Signed(Order("../../etc/passwd")));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_FAILED);
  EXPECT_EQ(applier_.applies, 0);
  EXPECT_THAT(e->CompletedChangeIds(), IsEmpty());
}

// --- Approvals (docs/threat-model.md): what the collector or its database cannot make a host do.

TEST_F(ChangeExecutorTest, TamperedUnsignedFieldsAreIgnoredAndThePayloadsValuesApplied) {
  auto e = Open();
  ChangeOrder o = Signed(Order());
  o.mutable_settings(1)->set_value("false");  // the collector rewrites what it sends in clear
  SettingChange* extra = o.add_settings();
  extra->set_setting("server.requireSigning");
  extra->set_value("false");
  o.add_options("kill-client-ip");
  e->Submit(o);
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_APPLIED) << Acks()[0].message();
  EXPECT_EQ(Value("server.requireSigning"), "true");
  EXPECT_EQ(Value("share.encryptData", "finance"), "true");
  EXPECT_THAT(Acks()[0].after(), SizeIs(2));
  EXPECT_THAT(applier_.last_options, IsEmpty());
}

TEST_F(ChangeExecutorTest, TamperedPayloadByteIsRefusedAndNothingIsTouched) {
  auto e = Open();
  ChangeOrder o = Signed(Order());
  std::string* bytes = o.mutable_approval_payload();
  size_t at = bytes->rfind("true");  // share.encryptData's new value
  ASSERT_NE(at, std::string::npos);
  (*bytes)[at] = 'T';
  e->Submit(o);
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("signature 1 (approver 'alice', key '" +
                                             KeyId(approvals_.key("alice").public_raw) +
                                             "'): does not verify over the payload"));
  EXPECT_EQ(applier_.applies, 0);
  EXPECT_EQ(applier_.reads, 0);
  EXPECT_EQ(Value("share.encryptData", "finance"), "false");
}

TEST_F(ChangeExecutorTest, UnsignedOrderIsRefused) {
  auto e = Open();
  e->Submit(Order());
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("the order carries no approval payload"));
  EXPECT_EQ(applier_.applies, 0);
}

TEST_F(ChangeExecutorTest, WithoutTrustConfiguredEveryOrderIsRefused) {
  options_.trust = nullptr;
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("no approver keys configured"));
  EXPECT_EQ(applier_.applies, 0);
}

TEST_F(ChangeExecutorTest, OneOfTwoRequiredSignaturesDroppedIsRefusedCountingThem) {
  trust_ = std::make_unique<ApproverTrust>(approvals_.Trust({"alice", "bob"}, 2),
                                           dir_ + "/approver-set.pb");
  options_.trust = trust_.get();
  auto e = Open();
  ChangeOrder o = Signed(Order(), {"alice", "bob"});
  o.mutable_signatures()->RemoveLast();
  e->Submit(o);
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("1 valid signature(s) by distinct approvers of 2"));
  EXPECT_EQ(applier_.applies, 0);

  e->Submit(Signed(Order("c2"), {"alice", "bob"}));
  e->Drain();
  EXPECT_EQ(Acks().back().result(), AckChangeRequest::RESULT_APPLIED) << Acks().back().message();
}

TEST_F(ChangeExecutorTest, OrderForAnotherHostIsRefused) {
  auto e = Open();
  ChangeOrder o = Order();
  e->Submit(
      approvals_.Sign(o, TestApprovals::PayloadOf(o, {"fs02"}, now_ + absl::Hours(1)), {"alice"}));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("this host ('fs01') is not among the 1 host(s)"));
  EXPECT_EQ(applier_.applies, 0);
}

TEST_F(ChangeExecutorTest, SignedNotAfterPassedIsNeverApplied) {
  auto e = Open();
  ChangeOrder o = Order();
  v1::ApprovalPayload p = TestApprovals::PayloadOf(o, {"fs01"}, now_ - absl::Seconds(1));
  ChangeOrder signed_order = approvals_.Sign(o, p, {"alice"});
  signed_order.mutable_not_after()->set_seconds(absl::ToUnixSeconds(now_) + 3600);  // unsigned
  e->Submit(signed_order);
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_FAILED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("order expired at"));
  EXPECT_EQ(applier_.applies, 0);
}

TEST_F(ChangeExecutorTest, ReplayedAppliedOrderIsRefusedAfterARestartEvenWithoutItsJournalEntry) {
  {
    auto e = Open();
    e->Submit(Signed(Order()));
    e->Drain();
    ASSERT_EQ(Acks().back().result(), AckChangeRequest::RESULT_APPLIED);
  }
  // Someone puts the old values back by hand; the journal entry is gone (pruned).
  applier_.values[{"server.requireSigning", ""}] = "false";
  applier_.values[{"share.encryptData", "finance"}] = "false";
  ASSERT_TRUE(std::filesystem::remove(dir_ + "/c1@1.order.json"));
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(2));
  EXPECT_EQ(Acks()[1].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[1].message(), HasSubstr("replay: change c1 v1"));
  EXPECT_EQ(applier_.applies, 1);
  EXPECT_EQ(Value("share.encryptData", "finance"), "false");
}

TEST_F(ChangeExecutorTest, CrashBetweenApplyAndAckStillRemembersTheOrder) {
  {
    auto crashed = Open(CrashPoint::kAfterApply);
    crashed->Submit(Signed(Order()));
    crashed->Drain();
    ASSERT_TRUE(crashed->crashed());
  }
  { Open()->Drain(); }  // recovers: APPLIED
  ASSERT_TRUE(std::filesystem::remove(dir_ + "/c1@1.order.json"));
  applier_.values[{"share.encryptData", "finance"}] = "false";
  auto e = Open();
  e->Submit(Signed(Order()));
  e->Drain();
  EXPECT_EQ(Acks().back().result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks().back().message(), HasSubstr("replay"));
  EXPECT_EQ(applier_.applies, 1);
}

TEST_F(ChangeExecutorTest, RollbackOrdersAreVerifiedTheSameWay) {
  auto e = Open();
  ChangeOrder rollback = Order("r1");
  rollback.set_rollback_of("c0");
  ChangeOrder forged = Signed(rollback, {"mallory"});
  e->Submit(forged);
  e->Drain();
  ASSERT_THAT(Acks(), SizeIs(1));
  EXPECT_EQ(Acks()[0].result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks()[0].message(), HasSubstr("key not trusted by this host"));
  EXPECT_EQ(applier_.applies, 0);

  e->Submit(Signed(Order("r2")));
  e->Drain();
  EXPECT_EQ(Acks().back().result(), AckChangeRequest::RESULT_APPLIED);
}

TEST_F(ChangeExecutorTest, KeyRevokedByANewerApproverSetNoLongerCounts) {
  trust_ = std::make_unique<ApproverTrust>(approvals_.Trust({}), dir_ + "/approver-set.pb");
  options_.trust = trust_.get();
  auto e = Open();
  ASSERT_TRUE(trust_->Accept(approvals_.Set(1, {"alice", "bob"})).ok());
  e->Submit(Signed(Order("c1"), {"bob"}));
  e->Drain();
  EXPECT_EQ(Acks().back().result(), AckChangeRequest::RESULT_APPLIED) << Acks().back().message();

  ASSERT_TRUE(trust_->Accept(approvals_.Set(2, {"alice"})).ok());  // bob's key revoked
  applier_.values[{"share.encryptData", "finance"}] = "false";
  applier_.values[{"server.requireSigning", ""}] = "false";
  e->Submit(Signed(Order("c2"), {"bob"}));
  e->Drain();
  EXPECT_EQ(Acks().back().result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_THAT(Acks().back().message(), HasSubstr("approver 'bob'"));
  EXPECT_THAT(Acks().back().message(), HasSubstr("key not trusted by this host"));

  // The older set, replayed, does not bring the key back; nor does a restart.
  EXPECT_TRUE(absl::IsFailedPrecondition(trust_->Accept(approvals_.Set(1, {"alice", "bob"}))));
  ApproverTrust restarted(approvals_.Trust({}), dir_ + "/approver-set.pb");
  ASSERT_TRUE(restarted.Open().ok());
  EXPECT_EQ(restarted.serial(), 2u);
  EXPECT_TRUE(absl::IsFailedPrecondition(restarted.Accept(approvals_.Set(1, {"alice", "bob"}))));
  options_.trust = &restarted;
  auto again = Open();
  again->Submit(Signed(Order("c3"), {"bob"}));
  again->Drain();
  EXPECT_EQ(Acks().back().result(), AckChangeRequest::RESULT_REFUSED);
  EXPECT_EQ(applier_.applies, 1);
}

}  // namespace
}  // namespace smbfleet::agent

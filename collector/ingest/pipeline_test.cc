// The report pipeline against the in-memory stores: outcomes, evaluation and its transitions,
// skipping evaluation when nothing it depends on changed, and failures that keep the report.
#include "collector/ingest/pipeline.h"

#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "collector/ingest/digest.h"
#include "collector/metrics/prometheus_text.h"
#include "collector/store/memory/memory_enrollment_store.h"
#include "collector/store/memory/memory_store.h"
#include "collector/testing/flaky_compliance_store.h"
#include "collector/testing/test_policy.h"
#include "common/status_macros.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using google::protobuf::util::TimeUtil;
using ::testing::HasSubstr;

smbfleet::v1::ReportRequest Report(const std::string& id, bool require_signing = false) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id(id);
  auto* p = r.mutable_posture();
  p->mutable_host()->set_hostname("claims-to-be-dc01");
  p->mutable_server()->set_require_signing(require_signing);
  p->mutable_server()->set_encrypt_data(false);
  auto* hr = p->add_shares();
  hr->set_name("HR");
  hr->set_path("/srv/hr");
  hr->set_encrypt_data(true);
  p->add_shares()->set_name("public");
  return r;
}

smbfleet::v1::Waiver Waiver(const std::string& id, absl::Time expires) {
  smbfleet::v1::Waiver w;
  w.set_id(id);
  w.set_rule_id("server-signing-required");
  w.set_host("fs01");
  w.set_justification("legacy scanner");
  w.set_approved_by("carol");
  *w.mutable_created_at() = TimeUtil::SecondsToTimestamp(0);
  *w.mutable_expires_at() = TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(expires));
  return w;
}

class PipelineTest : public ::testing::Test {
 protected:
  ReportPipeline Pipeline(const policy::Policy* p) {
    return ReportPipeline(&hosts_, &compliance_, p, [this] { return now_; });
  }

  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  policy::Policy policy_ = testing::TinyPolicy();
  MemoryHostStore hosts_;
  MemoryComplianceStore compliance_{&hosts_};
};

TEST_F(PipelineTest, StoredUnchangedAndDuplicate) {
  auto pipeline = Pipeline(nullptr);
  auto first = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000001"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->outcome, SaveOutcome::kStored);
  EXPECT_EQ(first->received_at, now_);

  auto later = Report("00000000-0000-4000-8000-000000000002");
  later.mutable_posture()->mutable_collected_at()->set_seconds(42);  // same state, later
  EXPECT_EQ(pipeline.Ingest("fs01", later)->outcome, SaveOutcome::kUnchanged);
  EXPECT_EQ(pipeline.Ingest("fs01", later)->outcome, SaveOutcome::kDuplicate);
  EXPECT_EQ(hosts_.postures_stored(), 1u);

  auto host = hosts_.GetHost("fs01");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((**host).last_report_id, "00000000-0000-4000-8000-000000000002");
  EXPECT_FALSE(first->evaluated);  // no policy
  EXPECT_EQ(compliance_.evaluations_saved(), 0u);
}

TEST_F(PipelineTest, InvalidReportIsRefusedAndNotStored) {
  auto pipeline = Pipeline(&policy_);
  auto result = pipeline.Ingest("fs01", Report("not-a-uuid"));
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("reportId"));
  EXPECT_FALSE(hosts_.Exists("fs01"));
}

TEST_F(PipelineTest, EvaluationWritesResultsTransitionsAndClassifications) {
  auto pipeline = Pipeline(&policy_);
  auto result = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000001"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->evaluated);
  EXPECT_TRUE(result->evaluation.ok());
  EXPECT_EQ(result->transitions, 2u);  // first results: signing (host) and encryption (HR)
  EXPECT_EQ(compliance_.transitions("fs01").size(), 2u);

  auto findings = compliance_.ListFindings("fs01", "", 10);
  ASSERT_TRUE(findings.ok());
  ASSERT_EQ(findings->size(), 1u);
  EXPECT_EQ((*findings)[0].rule_id(), "server-signing-required");

  // Classification is policy's, shown with the stored posture.
  auto host = hosts_.GetHost("fs01");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((**host).posture.shares(0).classification(), "pii");
  EXPECT_EQ((**host).posture.shares(0).classification_rule(), "hr");
  EXPECT_EQ((**host).posture.shares(1).classification(), "general");

  // A fix changes one status: one transition.
  auto fixed = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000002", true));
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->outcome, SaveOutcome::kStored);
  EXPECT_EQ(fixed->transitions, 1u);
  EXPECT_TRUE(compliance_.ListFindings("fs01", "", 10)->empty());
}

TEST_F(PipelineTest, UnchangedReportIsNotEvaluatedAgain) {
  auto pipeline = Pipeline(&policy_);
  ASSERT_TRUE(pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000001")).ok());
  now_ += absl::Hours(1);
  auto again = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000002"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome, SaveOutcome::kUnchanged);
  EXPECT_FALSE(again->evaluated);
  EXPECT_EQ(compliance_.evaluations_saved(), 1u);

  // A duplicate is never evaluated; a new policy version is.
  EXPECT_FALSE(pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000002"))->evaluated);
  policy::Policy next = policy_;
  next.version = "8";
  auto updated = Pipeline(&next).Ingest("fs01", Report("00000000-0000-4000-8000-000000000003"));
  EXPECT_TRUE(updated->evaluated);
  EXPECT_EQ(updated->transitions, 0u);  // same statuses across versions: nothing new

  // An edited policy whose author kept the version is evaluated too.
  policy::Policy edited = next;
  edited.source_digest = "digest of the edited text";
  auto reread = Pipeline(&edited).Ingest("fs01", Report("00000000-0000-4000-8000-000000000004"));
  EXPECT_TRUE(reread->evaluated);
}

TEST_F(PipelineTest, WaiverChangesReEvaluateAnUnchangedHost) {
  auto pipeline = Pipeline(&policy_);
  ASSERT_TRUE(pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000001")).ok());
  compliance_.SetActiveWaivers({Waiver("w1", now_ + absl::Hours(24))});
  auto waived = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000002"));
  ASSERT_TRUE(waived.ok());
  EXPECT_TRUE(waived->evaluated);
  EXPECT_EQ(waived->transitions, 1u);  // NON_COMPLIANT -> WAIVED
  EXPECT_TRUE(compliance_.ListFindings("fs01", "", 10)->empty());

  // A waiver written in the policy counts while it is in force and stops by itself.
  compliance_.SetActiveWaivers({});
  policy_.waivers.push_back(Waiver("p1", now_ + absl::Hours(2)));
  auto by_policy = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000003"));
  EXPECT_TRUE(by_policy->evaluated);
  EXPECT_EQ(by_policy->transitions, 0u);  // still WAIVED, now by p1
  EXPECT_FALSE(pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000004"))->evaluated);
  now_ += absl::Hours(3);
  auto expired = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000005"));
  EXPECT_TRUE(expired->evaluated);
  EXPECT_EQ(expired->transitions, 1u);  // WAIVED -> NON_COMPLIANT
  EXPECT_EQ(compliance_.ListFindings("fs01", "", 10)->size(), 1u);
}

smbfleet::v1::ReportRequest DigestOnly(const std::string& id, const std::string& digest) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id(id);
  r.set_reason("schedule");
  r.set_posture_digest(digest);
  r.mutable_collected_at()->set_seconds(1'800'000'100);
  return r;
}

TEST_F(PipelineTest, DigestOnlyReportOfTheCurrentPostureIsUnchanged) {
  auto pipeline = Pipeline(nullptr);
  const auto full = Report("00000000-0000-4000-8000-000000000001");
  const std::string digest = PostureDigest(full.posture());

  // A host the collector has no posture of: send it.
  auto unknown =
      pipeline.Ingest("fs01", DigestOnly("00000000-0000-4000-8000-000000000001", digest));
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_TRUE(unknown->send_full);
  EXPECT_FALSE(hosts_.Exists("fs01"));

  // The full resend of the same id is stored; then the digest is enough.
  EXPECT_EQ(pipeline.Ingest("fs01", full)->outcome, SaveOutcome::kStored);
  now_ += absl::Minutes(10);
  auto same = pipeline.Ingest("fs01", DigestOnly("00000000-0000-4000-8000-000000000002", digest));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_FALSE(same->send_full);
  EXPECT_EQ(same->outcome, SaveOutcome::kUnchanged);
  EXPECT_EQ(hosts_.postures_stored(), 1u);
  auto host = hosts_.GetHost("fs01");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((**host).last_report_id, "00000000-0000-4000-8000-000000000002");
  EXPECT_EQ(TimeUtil::TimestampToSeconds((**host).summary.last_seen()), absl::ToUnixSeconds(now_));
  EXPECT_EQ((**host).posture.shares_size(), 2);  // the stored posture stays whole
  EXPECT_EQ(
      pipeline.Ingest("fs01", DigestOnly("00000000-0000-4000-8000-000000000002", digest))->outcome,
      SaveOutcome::kDuplicate);

  // Another digest than the current posture's: nothing stored, send the posture.
  const std::string other =
      PostureDigest(Report("00000000-0000-4000-8000-000000000003", true).posture());
  auto changed = pipeline.Ingest("fs01", DigestOnly("00000000-0000-4000-8000-000000000003", other));
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(changed->send_full);
  EXPECT_EQ((**hosts_.GetHost("fs01")).last_report_id, "00000000-0000-4000-8000-000000000002");
}

TEST_F(PipelineTest, DigestOnlyReportAsksForThePostureWhenAnEvaluationIsDue) {
  auto pipeline = Pipeline(&policy_);
  const auto full = Report("00000000-0000-4000-8000-000000000001");
  const std::string digest = PostureDigest(full.posture());
  ASSERT_TRUE(pipeline.Ingest("fs01", full)->evaluated);
  auto same = pipeline.Ingest("fs01", DigestOnly("00000000-0000-4000-8000-000000000002", digest));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_FALSE(same->send_full);
  EXPECT_FALSE(same->evaluated);

  // A waiver changes what the evaluation reads: the posture is needed, and its resend (a
  // duplicate of the stored digest-only report) is evaluated.
  compliance_.SetActiveWaivers({Waiver("w1", now_ + absl::Hours(24))});
  auto due = pipeline.Ingest("fs01", DigestOnly("00000000-0000-4000-8000-000000000003", digest));
  ASSERT_TRUE(due.ok()) << due.status();
  EXPECT_TRUE(due->send_full);
  auto resent = full;
  resent.set_report_id("00000000-0000-4000-8000-000000000003");
  auto evaluated = pipeline.Ingest("fs01", resent);
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  EXPECT_EQ(evaluated->outcome, SaveOutcome::kDuplicate);
  EXPECT_TRUE(evaluated->evaluated);
  EXPECT_EQ(evaluated->transitions, 1u);  // NON_COMPLIANT -> WAIVED
  auto after = pipeline.Ingest("fs01", DigestOnly("00000000-0000-4000-8000-000000000004", digest));
  EXPECT_FALSE(after->send_full);
}

TEST_F(PipelineTest, DigestOnlyReportWithAMalformedDigestIsRefused) {
  auto pipeline = Pipeline(nullptr);
  auto result = pipeline.Ingest("fs01", DigestOnly("00000000-0000-4000-8000-000000000001", "ABC"));
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("postureDigest: 'ABC'"));
  auto empty = pipeline.Ingest("fs01", DigestOnly("00000000-0000-4000-8000-000000000001", ""));
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("posture: missing"));
}

// A transient evaluation failure does not acknowledge the report: the agent keeps it and
// resends, and the resend (a duplicate by then) is evaluated.
TEST_F(PipelineTest, EvaluationFailureIsNotAcknowledgedAndTheResendEvaluates) {
  auto pipeline = Pipeline(&policy_);
  compliance_.FailEvaluations(absl::UnavailableError("database went away"));
  const auto report = Report("00000000-0000-4000-8000-000000000001");
  auto result = pipeline.Ingest("fs01", report);
  EXPECT_TRUE(absl::IsUnavailable(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("send it again"));
  EXPECT_TRUE(hosts_.Exists("fs01"));  // stored, whole
  EXPECT_EQ(compliance_.evaluations_saved(), 0u);

  compliance_.FailEvaluations(absl::OkStatus());
  auto resent = pipeline.Ingest("fs01", report);
  ASSERT_TRUE(resent.ok()) << resent.status();
  EXPECT_EQ(resent->outcome, SaveOutcome::kDuplicate);
  EXPECT_TRUE(resent->evaluated);
  EXPECT_EQ(resent->transitions, 2u);
  EXPECT_EQ(compliance_.evaluations_saved(), 1u);

  auto again = pipeline.Ingest("fs01", report);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->evaluated);
  EXPECT_EQ(compliance_.evaluations_saved(), 1u);
  EXPECT_EQ(compliance_.transitions("fs01").size(), 2u);
}

// Stored, then the collector died before evaluating (or the answer was lost): the resend is a
// duplicate and must still end evaluated.
TEST_F(PipelineTest, DuplicateOfAReportStoredWithoutItsEvaluationIsEvaluated) {
  const auto report = Report("00000000-0000-4000-8000-000000000001");
  IncomingReport stored;
  stored.host = "fs01";
  stored.report_id = report.report_id();
  stored.posture = &report.posture();
  stored.digest = PostureDigest(report.posture());
  stored.received_at = now_;
  ASSERT_EQ(*hosts_.SaveReport(stored), SaveOutcome::kStored);

  auto resent = Pipeline(&policy_).Ingest("fs01", report);
  ASSERT_TRUE(resent.ok()) << resent.status();
  EXPECT_EQ(resent->outcome, SaveOutcome::kDuplicate);
  EXPECT_TRUE(resent->evaluated);
  EXPECT_EQ(compliance_.transitions("fs01").size(), 2u);
}

// The evaluation was saved but its answer lost (the connection dropped during COMMIT): the
// resend does not evaluate a second time.
TEST_F(PipelineTest, InDoubtEvaluationIsNotRecordedTwice) {
  testing::FlakyComplianceStore flaky(&compliance_);
  ReportPipeline pipeline(&hosts_, &flaky, &policy_, [this] { return now_; });
  flaky.FailNextSave(testing::FlakyComplianceStore::When::kAfterSave,
                     absl::UnavailableError("connection lost during COMMIT"));
  const auto report = Report("00000000-0000-4000-8000-000000000001");
  EXPECT_TRUE(absl::IsUnavailable(pipeline.Ingest("fs01", report).status()));
  auto resent = pipeline.Ingest("fs01", report);
  ASSERT_TRUE(resent.ok()) << resent.status();
  EXPECT_EQ(resent->outcome, SaveOutcome::kDuplicate);
  EXPECT_FALSE(resent->evaluated);
  EXPECT_EQ(flaky.saves(), 1u);
  EXPECT_EQ(compliance_.transitions("fs01").size(), 2u);
}

// An error no resend cures does not hold the report: acknowledged, logged, and the host's
// next report evaluates (no key was stored).
TEST_F(PipelineTest, PermanentEvaluationFailureKeepsTheReportAndRetriesNextTime) {
  auto pipeline = Pipeline(&policy_);
  compliance_.FailEvaluations(absl::InternalError("constraint violated"));
  auto result = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000001"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outcome, SaveOutcome::kStored);
  EXPECT_FALSE(result->evaluated);
  EXPECT_TRUE(absl::IsInternal(result->evaluation));

  compliance_.FailEvaluations(absl::OkStatus());
  auto next = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000002"));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->outcome, SaveOutcome::kUnchanged);
  EXPECT_TRUE(next->evaluated);
}

// A report collected before the host's current state, arriving late, is stored in history but
// does not replace the current state or its evaluation.
TEST_F(PipelineTest, OlderReportArrivingLateIsNotEvaluated) {
  auto pipeline = Pipeline(&policy_);
  auto current = Report("00000000-0000-4000-8000-000000000002", /*require_signing=*/true);
  current.mutable_posture()->mutable_collected_at()->set_seconds(600);
  auto r = pipeline.Ingest("fs01", current);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->evaluated);
  EXPECT_TRUE(compliance_.ListFindings("fs01", "", 10)->empty());

  auto late = Report("00000000-0000-4000-8000-000000000001", /*require_signing=*/false);
  late.mutable_posture()->mutable_collected_at()->set_seconds(0);
  late.mutable_posture()->mutable_collected_at()->set_nanos(1);
  r = pipeline.Ingest("fs01", late);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, SaveOutcome::kStored);
  EXPECT_FALSE(r->current);
  EXPECT_FALSE(r->evaluated);
  EXPECT_TRUE(compliance_.ListFindings("fs01", "", 10)->empty());  // still compliant
  EXPECT_EQ(hosts_.postures_stored(), 2u);
  auto host = hosts_.GetHost("fs01");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_TRUE((**host).posture.server().require_signing());
  EXPECT_EQ((**host).last_report_id, current.report_id());
}

// Forwards to a memory store; lets another evaluation of the host happen right after the
// pipeline has read the host's current results, as a second collector could.
class RacingComplianceStore : public testing::ForwardingComplianceStore {
 public:
  RacingComplianceStore(ComplianceStore* inner, std::function<void()> race)
      : ForwardingComplianceStore(inner), race_(std::move(race)) {}

  absl::StatusOr<std::vector<ResultStatus>> CurrentResults(const std::string& host,
                                                           const std::string& policy) override {
    auto results = ForwardingComplianceStore::CurrentResults(host, policy);
    if (race_) std::exchange(race_, nullptr)();
    return results;
  }
  // A report's evaluation reads them here (a page of one).
  absl::StatusOr<std::map<std::string, StoredEvaluation>> StoredEvaluations(
      const std::vector<std::string>& hosts, const std::string& policy_name) override {
    auto stored = ForwardingComplianceStore::StoredEvaluations(hosts, policy_name);
    if (race_) std::exchange(race_, nullptr)();
    return stored;
  }

 private:
  std::function<void()> race_;
};

TEST_F(PipelineTest, ConcurrentEvaluationsRecordEachTransitionOnce) {
  ASSERT_TRUE(
      Pipeline(&policy_).Ingest("fs01", Report("00000000-0000-4000-8000-000000000001")).ok());
  ASSERT_EQ(compliance_.transitions("fs01").size(), 2u);

  // Signing is switched on; two reports of the new state are evaluated at once.
  RacingComplianceStore racing(&compliance_, [this] {
    auto other =
        Pipeline(&policy_).Ingest("fs01", Report("00000000-0000-4000-8000-000000000003", true));
    ASSERT_TRUE(other.ok());
    EXPECT_EQ(other->transitions, 1u);
  });
  ReportPipeline pipeline(&hosts_, &racing, &policy_, [this] { return now_; });
  auto result = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000002", true));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->evaluation.ok()) << result->evaluation;
  EXPECT_EQ(result->transitions, 0u);  // the other one recorded NON_COMPLIANT -> COMPLIANT
  EXPECT_EQ(compliance_.transitions("fs01").size(), 3u);
}

// Host A's certificate says fs01.corp.example; its report claims fs02's FQDN, which a waiver
// covers. The waiver is fs02's: A's finding stays. The real fs02 gets it.
TEST_F(PipelineTest, ClaimingAnotherHostsFqdnDoesNotGetItsWaiver) {
  smbfleet::v1::Waiver w = Waiver("w-fs02", now_ + absl::Hours(24));
  w.set_host("fs02.corp.example");
  policy_.waivers.push_back(w);
  auto pipeline = Pipeline(&policy_);
  auto claim = Report("00000000-0000-4000-8000-000000000001");
  claim.mutable_posture()->mutable_host()->set_hostname("fs02");
  claim.mutable_posture()->mutable_host()->set_fqdn("fs02.corp.example");
  ASSERT_TRUE(pipeline.Ingest("fs01.corp.example", claim).ok());
  auto findings = compliance_.ListFindings("fs01.corp.example", "", 10);
  ASSERT_TRUE(findings.ok());
  ASSERT_EQ(findings->size(), 1u);
  EXPECT_EQ((*findings)[0].rule_id(), "server-signing-required");

  ASSERT_TRUE(
      pipeline.Ingest("fs02.corp.example", Report("00000000-0000-4000-8000-000000000002")).ok());
  EXPECT_TRUE(compliance_.ListFindings("fs02.corp.example", "", 10)->empty());
}

// Classification by host label: a lab host's shares are "general", every other host's "pii".
// The agent saying tier=lab changes nothing; the collector's label (enrollment or an admin)
// does.
TEST_F(PipelineTest, SelfReportedLabelDoesNotChangeTheClass) {
  auto lax = policy::ParsePolicy("lax.yaml", R"(apiVersion: smbfleet/policy/v1
name: labels
version: "1"
classification:
  classes: [general, pii]
  default: pii
  rules: [{name: lab, classification: general, hostLabels: {tier: lab}}]
rules:
  - {id: pii-encrypted, title: E, shares: {classifications: [pii]},
     expect: {share.encrypted: true}}
)");
  ASSERT_TRUE(lax.ok()) << lax.status();
  MemoryEnrollmentStore trusted;
  auto pipeline = Pipeline(&*lax);
  pipeline.SetTrustedLabels(&trusted);
  auto claim = Report("00000000-0000-4000-8000-000000000001");
  (*claim.mutable_posture()->mutable_host()->mutable_labels())["tier"] = "lab";
  claim.mutable_posture()->mutable_shares(1)->set_encrypt_data(false);
  ASSERT_TRUE(pipeline.Ingest("fs01", claim).ok());
  auto host = hosts_.GetHost("fs01");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((**host).posture.shares(1).classification(), "pii");
  EXPECT_EQ((**host).summary.reported_labels().at("tier"), "lab");
  EXPECT_EQ(compliance_.ListFindings("fs01", "", 10)->size(), 1u);  // "public" is not encrypted

  // The same report once the collector trusts tier=lab: evaluated again, now general.
  ASSERT_TRUE(trusted.SetHostLabels("fs01", {{"tier", "lab"}}, "root-admin", now_).ok());
  claim.set_report_id("00000000-0000-4000-8000-000000000002");
  auto again = pipeline.Ingest("fs01", claim);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->evaluated);
  EXPECT_EQ((**hosts_.GetHost("fs01")).posture.shares(1).classification(), "general");
  EXPECT_TRUE(compliance_.ListFindings("fs01", "", 10)->empty());
}

TEST(TrustedSubjectTest, IdentityAndLabelsAreTheCollectors) {
  smbfleet::v1::Posture reported;
  reported.mutable_host()->set_hostname("dc01");
  reported.mutable_host()->set_fqdn("dc01.corp.example");
  (*reported.mutable_host()->mutable_labels())["class"] = "lax";
  auto subject = TrustedSubject("fs01", {{"site", "ams"}}, reported);
  EXPECT_EQ(subject.host().hostname(), "fs01");
  EXPECT_EQ(subject.host().fqdn(), "");
  EXPECT_EQ(subject.host().labels().size(), 1u);
  EXPECT_EQ(subject.host().labels().at("site"), "ams");
  EXPECT_EQ(TrustedSubject("fs01.corp.example", {}, reported).host().fqdn(), "fs01.corp.example");
}

// The memory store behind a gate: once HoldNext is called, the next batch (of digest-only
// reports or of reports with a posture) waits until released (later reports queue behind it),
// and a batch fails with `fail` while it is set. A report of a host set by Refuse fails with the
// given error (as PostgreSQL refuses a value, or meets an error of that report), alone or in a
// batch (which it fails whole).
class GatedHostStore : public HostStore {
 public:
  explicit GatedHostStore(MemoryHostStore* hosts) : hosts_(hosts) {}
  absl::StatusOr<SavedReport> StoreReport(const IncomingReport& report) override {
    {
      absl::MutexLock lock(&mu_);
      auto refused = refused_.find(report.host);
      if (refused != refused_.end()) return refused->second;
    }
    return hosts_->StoreReport(report);
  }
  absl::StatusOr<std::vector<SavedDigestReport>> StoreDigestReports(
      const std::vector<IncomingReport>& reports) override {
    RETURN_IF_ERROR(Gate(reports, &digest_sizes_));
    return HostStore::StoreDigestReports(reports);
  }
  absl::StatusOr<std::vector<SavedReport>> StoreReports(
      const std::vector<IncomingReport>& reports) override {
    RETURN_IF_ERROR(Gate(reports, &posture_sizes_));
    return HostStore::StoreReports(reports);
  }
  void HoldNext() {
    absl::MutexLock lock(&mu_);
    hold_ = true;
  }
  void Refuse(const std::string& host, absl::Status error) {
    absl::MutexLock lock(&mu_);
    refused_[host] = std::move(error);
  }
  absl::StatusOr<std::vector<smbfleet::v1::HostSummary>> ListHosts(const HostQuery& q) override {
    return hosts_->ListHosts(q);
  }
  absl::StatusOr<std::optional<HostRecord>> GetHost(const std::string& name) override {
    return hosts_->GetHost(name);
  }
  void Fail(absl::Status status) {
    absl::MutexLock lock(&mu_);
    fail_ = std::move(status);
  }
  // The sizes of the batches of digest-only reports, and of reports with a posture.
  std::vector<size_t> sizes() {
    absl::MutexLock lock(&mu_);
    return digest_sizes_;
  }
  std::vector<size_t> posture_sizes() {
    absl::MutexLock lock(&mu_);
    return posture_sizes_;
  }

  absl::Notification entered_;
  absl::Notification release_;

 private:
  // Counts the batch in `sizes`, holds it until released when asked to; the batch's error, if
  // any.
  absl::Status Gate(const std::vector<IncomingReport>& reports, std::vector<size_t>* sizes) {
    bool first = false;
    absl::Status fail;
    {
      absl::MutexLock lock(&mu_);
      first = std::exchange(hold_, false);
      sizes->push_back(reports.size());
      fail = fail_;
      for (const IncomingReport& r : reports) {
        auto refused = refused_.find(r.host);
        if (refused != refused_.end()) fail = refused->second;
      }
    }
    if (first) {
      entered_.Notify();
      release_.WaitForNotification();
    }
    return fail;
  }

  MemoryHostStore* hosts_;
  absl::Mutex mu_;
  std::vector<size_t> digest_sizes_ ABSL_GUARDED_BY(mu_);
  std::vector<size_t> posture_sizes_ ABSL_GUARDED_BY(mu_);
  absl::Status fail_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> refused_ ABSL_GUARDED_BY(mu_);
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
};

// Reports queued behind a held batch, sent with IngestAsync (which returns at once while another
// thread stores); Run releases the held batch and collects every answer. The held batch is of
// digest-only reports, or with `full` of reports with a posture.
class HeldBatch {
 public:
  HeldBatch(ReportPipeline& pipeline, GatedHostStore& gate, bool full = false)
      : pipeline_(pipeline), gate_(gate) {
    gate_.HoldNext();
    held_ = std::thread([this, full] {
      // Its answer is not the point (digest-only: SEND_FULL for an unknown host, or the error of
      // a failing store).
      const std::string id = "00000000-0000-4000-8000-0000000000ff";
      pipeline_.Ingest("gate", full ? Report(id) : DigestOnly(id, std::string(64, '0')))
          .IgnoreError();
    });
    gate_.entered_.WaitForNotification();
  }
  void Send(const std::string& host, smbfleet::v1::ReportRequest request) {
    requests_.push_back(std::make_unique<smbfleet::v1::ReportRequest>(std::move(request)));
    const size_t i = answers_.size();
    answers_.emplace_back(absl::UnknownError("not answered"));
    pipeline_.IngestAsync(host, *requests_.back(), [this, i](absl::StatusOr<IngestResult> r) {
      answers_[i] = std::move(r);
    });
  }
  std::vector<absl::StatusOr<IngestResult>> Run() {
    gate_.release_.Notify();
    held_.join();  // the held thread stores the queued batch before it returns
    return answers_;
  }

 private:
  ReportPipeline& pipeline_;
  GatedHostStore& gate_;
  std::thread held_;
  std::vector<std::unique_ptr<smbfleet::v1::ReportRequest>> requests_;
  std::vector<absl::StatusOr<IngestResult>> answers_;
};

// One batch with a host whose digest is current, one with another digest, one whose
// evaluation is due (its trusted labels changed), and one the collector does not know.
TEST_F(PipelineTest, DigestOnlyReportsOfOneBatchEachGetTheirOwnAnswer) {
  GatedHostStore gate(&hosts_);
  ReportPipeline pipeline(&gate, &compliance_, &policy_, [this] { return now_; });
  MemoryEnrollmentStore trusted;
  pipeline.SetTrustedLabels(&trusted);
  const auto full = Report("00000000-0000-4000-8000-000000000001");
  const std::string digest = PostureDigest(full.posture());
  for (const char* host : {"fs01", "fs02", "fs03"}) {
    ASSERT_TRUE(pipeline.Ingest(host, full)->evaluated) << host;
  }
  ASSERT_TRUE(trusted.SetHostLabels("fs03", {{"tier", "lab"}}, "alice", now_).ok());
  const std::string other =
      PostureDigest(Report("00000000-0000-4000-8000-000000000009", true).posture());

  HeldBatch batch(pipeline, gate);
  batch.Send("fs01", DigestOnly("00000000-0000-4000-8000-000000000011", digest));
  batch.Send("fs02", DigestOnly("00000000-0000-4000-8000-000000000012", other));
  batch.Send("fs03", DigestOnly("00000000-0000-4000-8000-000000000013", digest));
  batch.Send("fs04", DigestOnly("00000000-0000-4000-8000-000000000014", digest));
  auto answers = batch.Run();

  EXPECT_EQ(gate.sizes(), (std::vector<size_t>{1, 4}));
  ASSERT_EQ(answers.size(), 4u);
  for (const auto& a : answers) ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(answers[0]->send_full);
  EXPECT_EQ(answers[0]->outcome, SaveOutcome::kUnchanged);
  EXPECT_TRUE(answers[1]->send_full);  // another digest: nothing stored
  EXPECT_TRUE(answers[2]->send_full);  // stored, but its evaluation is due
  EXPECT_TRUE(answers[3]->send_full);  // no posture of fs04
  auto last_report = [&](const std::string& host) {
    return (**hosts_.GetHost(host)).last_report_id;
  };
  EXPECT_EQ(last_report("fs01"), "00000000-0000-4000-8000-000000000011");
  EXPECT_EQ(last_report("fs02"), "00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(last_report("fs03"), "00000000-0000-4000-8000-000000000013");
  EXPECT_FALSE(hosts_.Exists("fs04"));
}

// A database error fails every report of the batch as retryable and stores none; their resends
// are stored.
TEST_F(PipelineTest, StoreErrorFailsEveryDigestOnlyReportOfTheBatch) {
  GatedHostStore gate(&hosts_);
  ReportPipeline pipeline(&gate, &compliance_, &policy_, [this] { return now_; });
  const auto full = Report("00000000-0000-4000-8000-000000000001");
  const std::string digest = PostureDigest(full.posture());
  const std::vector<std::string> hosts = {"fs01", "fs02", "fs03"};
  for (const auto& host : hosts) ASSERT_TRUE(pipeline.Ingest(host, full).ok()) << host;

  gate.Fail(absl::UnavailableError("database unreachable"));
  HeldBatch batch(pipeline, gate);
  for (size_t i = 0; i < hosts.size(); ++i) {
    batch.Send(hosts[i],
               DigestOnly(absl::StrCat("00000000-0000-4000-8000-00000000002", i), digest));
  }
  auto answers = batch.Run();
  ASSERT_EQ(answers.size(), hosts.size());
  for (const auto& a : answers) {
    EXPECT_TRUE(absl::IsUnavailable(a.status())) << a.status();
    EXPECT_THAT(std::string(a.status().message()), HasSubstr("retry"));
  }
  for (const auto& host : hosts) {
    EXPECT_EQ((**hosts_.GetHost(host)).last_report_id, "00000000-0000-4000-8000-000000000001");
  }

  gate.Fail(absl::OkStatus());
  for (size_t i = 0; i < hosts.size(); ++i) {
    const std::string id = absl::StrCat("00000000-0000-4000-8000-00000000002", i);
    auto resent = pipeline.Ingest(hosts[i], DigestOnly(id, digest));
    ASSERT_TRUE(resent.ok()) << resent.status();
    EXPECT_EQ(resent->outcome, SaveOutcome::kUnchanged);
    EXPECT_FALSE(resent->send_full);
    EXPECT_EQ((**hosts_.GetHost(hosts[i])).last_report_id, id);
  }
}

// Forwards to a memory store; counts the evaluations each SaveEvaluations writes.
class PageCountingComplianceStore : public testing::ForwardingComplianceStore {
 public:
  using ForwardingComplianceStore::ForwardingComplianceStore;
  absl::StatusOr<std::vector<absl::Status>> SaveEvaluations(
      const std::vector<EvaluationWrite>& writes) override {
    pages_.push_back(writes.size());
    return ForwardingComplianceStore::SaveEvaluations(writes);
  }
  std::vector<size_t> pages_;  // written by the thread storing the batch only
};

// Reports with a posture that arrive together are stored in one batch and evaluated in one
// page, each answered as alone: a changed posture, an unchanged one, a duplicate and a new host.
TEST_F(PipelineTest, ReportsWithAPostureOfOneBatchAreStoredAndEvaluatedTogether) {
  GatedHostStore gate(&hosts_);
  PageCountingComplianceStore counting(&compliance_);
  ReportBatchLimits one_at_once;  // so that the reports queue behind the held batch
  one_at_once.posture_batches_at_once = 1;
  ReportPipeline pipeline(
      &gate, &counting, &policy_, [this] { return now_; }, {}, one_at_once);
  const auto first = Report("00000000-0000-4000-8000-000000000001");
  for (const char* host : {"fs01", "fs02", "fs03"}) {
    ASSERT_TRUE(pipeline.Ingest(host, first)->evaluated) << host;
    ASSERT_EQ(compliance_.transitions(host).size(), 2u) << host;
  }

  counting.pages_.clear();
  HeldBatch batch(pipeline, gate, /*full=*/true);
  batch.Send("fs01", Report("00000000-0000-4000-8000-000000000011", /*require_signing=*/true));
  batch.Send("fs02", Report("00000000-0000-4000-8000-000000000012"));
  batch.Send("fs03", first);
  batch.Send("fs04", Report("00000000-0000-4000-8000-000000000014"));
  auto answers = batch.Run();

  EXPECT_EQ(gate.posture_sizes(), (std::vector<size_t>{1, 1, 1, 1, 4}));  // firsts, held, batch
  // The held report's page (a new host), then the batch's: fs01's new state and new fs04.
  EXPECT_EQ(counting.pages_, (std::vector<size_t>{1, 2}));
  ASSERT_EQ(answers.size(), 4u);
  for (const auto& a : answers) ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(answers[0]->outcome, SaveOutcome::kStored);
  EXPECT_TRUE(answers[0]->evaluated);
  EXPECT_EQ(answers[0]->transitions, 1u);  // signing: NON_COMPLIANT -> COMPLIANT
  EXPECT_EQ(answers[1]->outcome, SaveOutcome::kUnchanged);
  EXPECT_FALSE(answers[1]->evaluated);
  EXPECT_EQ(answers[2]->outcome, SaveOutcome::kDuplicate);
  EXPECT_FALSE(answers[2]->evaluated);
  EXPECT_EQ(answers[3]->outcome, SaveOutcome::kStored);
  EXPECT_TRUE(answers[3]->evaluated);
  EXPECT_EQ(answers[3]->transitions, 2u);
  EXPECT_EQ(compliance_.transitions("fs01").size(), 3u);
  EXPECT_EQ(compliance_.transitions("fs02").size(), 2u);
  EXPECT_EQ(compliance_.transitions("fs04").size(), 2u);
  EXPECT_TRUE((**hosts_.GetHost("fs01")).posture.server().require_signing());
  EXPECT_TRUE(compliance_.ListFindings("fs01", "", 10)->empty());
}

// A value the database refuses in one report of a batch: that report alone is refused
// (INVALID_ARGUMENT, not to be resent), the others are stored and evaluated. So with another
// error of one report that a resend of the batch would meet again: that one is answered
// UNAVAILABLE (keep it), the others are stored.
TEST_F(PipelineTest, AReportTheDatabaseRefusesFailsAloneInItsBatch) {
  GatedHostStore gate(&hosts_);
  ReportBatchLimits one_at_once;
  one_at_once.posture_batches_at_once = 1;
  ReportPipeline pipeline(
      &gate, &compliance_, &policy_, [this] { return now_; }, {}, one_at_once);
  gate.Refuse("fs02", absl::InvalidArgumentError("refused (SQLSTATE 22P05)"));
  gate.Refuse("fs04", absl::InternalError("database error: index row size exceeds maximum"));
  HeldBatch batch(pipeline, gate, /*full=*/true);
  batch.Send("fs01", Report("00000000-0000-4000-8000-000000000021"));
  batch.Send("fs02", Report("00000000-0000-4000-8000-000000000022"));
  batch.Send("fs03", Report("00000000-0000-4000-8000-000000000023"));
  batch.Send("fs04", Report("00000000-0000-4000-8000-000000000024"));
  auto answers = batch.Run();
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_TRUE(absl::IsInvalidArgument(answers[1].status())) << answers[1].status();
  EXPECT_TRUE(absl::IsUnavailable(answers[3].status())) << answers[3].status();
  EXPECT_FALSE(hosts_.Exists("fs04"));
  for (size_t i : {0u, 2u}) {
    ASSERT_TRUE(answers[i].ok()) << answers[i].status();
    EXPECT_EQ(answers[i]->outcome, SaveOutcome::kStored);
    EXPECT_TRUE(answers[i]->evaluated);
  }
  EXPECT_FALSE(hosts_.Exists("fs02"));
  EXPECT_EQ(compliance_.transitions("fs03").size(), 2u);
}

class BrokenHostStore : public HostStore {
 public:
  explicit BrokenHostStore(absl::Status error = absl::InternalError("database error: disk full"))
      : error_(std::move(error)) {}
  absl::StatusOr<SavedReport> StoreReport(const IncomingReport&) override { return error_; }
  absl::StatusOr<std::vector<smbfleet::v1::HostSummary>> ListHosts(const HostQuery&) override {
    return absl::InternalError("unused");
  }
  absl::StatusOr<std::optional<HostRecord>> GetHost(const std::string&) override {
    return absl::InternalError("unused");
  }

 private:
  absl::Status error_;
};

// A poison report (a value no resend can store) must not hold up the host's later reports:
// refused as invalid before the store, and a data error of the store is passed on as such.
TEST_F(PipelineTest, PoisonReportIsInvalidNotUnavailable) {
  auto pipeline = Pipeline(&policy_);
  auto nul = Report("00000000-0000-4000-8000-000000000001");
  nul.mutable_posture()->mutable_shares(1)->set_name(std::string("pub\0lic", 7));
  auto result = pipeline.Ingest("fs01", nul);
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("posture.shares[1].name: contains U+0000"));
  EXPECT_FALSE(hosts_.Exists("fs01"));

  BrokenHostStore refusing(
      absl::InvalidArgumentError("PostgreSQL refuses a value (SQLSTATE 22P05)"));
  ReportPipeline second_net(&refusing, &compliance_, &policy_);
  result = second_net.Ingest("fs01", Report("00000000-0000-4000-8000-000000000002"));
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("22P05"));
}

TEST_F(PipelineTest, StoreFailureAsksTheAgentToRetry) {
  BrokenHostStore broken;
  ReportPipeline pipeline(&broken, &compliance_, &policy_);
  auto result = pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000001"));
  EXPECT_TRUE(absl::IsUnavailable(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("retry"));
}

TEST_F(PipelineTest, MetricsCountEachOutcomeRefusalAndEvaluation) {
  Metrics metrics;
  auto pipeline = Pipeline(&policy_);
  pipeline.SetMetrics(&metrics);
  auto reports = [&](const char* result) {
    return SampleIn(metrics.Text(), "smbfleet_reports_total", {{"result", result}});
  };
  auto refused = [&](const char* reason) {
    return SampleIn(metrics.Text(), "smbfleet_reports_refused_total", {{"reason", reason}});
  };
  auto evaluations = [&] {
    return SampleIn(metrics.Text(), "smbfleet_policy_evaluation_seconds_count");
  };

  ASSERT_TRUE(pipeline.Ingest("fs01", Report("00000000-0000-4000-8000-000000000001")).ok());
  EXPECT_EQ(reports("stored"), 1);
  EXPECT_EQ(reports("unchanged"), 0);
  EXPECT_EQ(reports("duplicate"), 0);
  EXPECT_EQ(evaluations(), 1);

  auto later = Report("00000000-0000-4000-8000-000000000002");
  ASSERT_TRUE(pipeline.Ingest("fs01", later).ok());
  EXPECT_EQ(reports("unchanged"), 1);
  EXPECT_EQ(evaluations(), 1);  // the evaluation key says nothing changed
  ASSERT_TRUE(pipeline.Ingest("fs01", later).ok());
  EXPECT_EQ(reports("duplicate"), 1);
  EXPECT_EQ(reports("stored"), 1);

  EXPECT_FALSE(pipeline.Ingest("fs01", Report("not-a-uuid")).ok());
  EXPECT_EQ(refused("invalid"), 1);
  EXPECT_EQ(refused("database"), 0);
  // The pipeline does not count arrivals: the agent service does, before the queue.
  EXPECT_EQ(reports("received"), 0);

  BrokenHostStore broken;
  ReportPipeline failing(&broken, &compliance_, &policy_);
  failing.SetMetrics(&metrics);
  EXPECT_FALSE(failing.Ingest("fs01", Report("00000000-0000-4000-8000-000000000003")).ok());
  EXPECT_EQ(refused("database"), 1);
  EXPECT_EQ(refused("invalid"), 1);
  EXPECT_EQ(reports("stored"), 1);
}

}  // namespace
}  // namespace smbfleet::collector

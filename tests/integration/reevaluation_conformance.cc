// Hosts reported under policy A, then re-evaluated under policy B from their stored postures
// (reevaluation_conformance.h).
#include "tests/integration/reevaluation_conformance.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "collector/ingest/pipeline.h"
#include "collector/ingest/reevaluate.h"
#include "collector/testing/flaky_compliance_store.h"
#include "collector/testing/test_policy.h"
#include "gmock/gmock.h"

namespace smbfleet::collector::store_testing {
namespace {

namespace v1 = smbfleet::v1;
using ::testing::ElementsAre;

constexpr int kHosts = 23;  // more than two pages of 10

// Policy B: the signing rule stays, pii-encrypted is gone, smb1-disabled is new.
policy::Policy PolicyB() {
  auto p = policy::ParsePolicy("b.yaml", R"(apiVersion: smbfleet/policy/v1
name: baseline
version: "8"
classification:
  classes: [general, pii]
  default: general
  rules: [{name: hr, classification: pii, shareNames: ["hr"]}]
rules:
  - {id: server-signing-required, title: S, expect: {server.requireSigning: true}}
  - {id: smb1-disabled, title: O, expect: {server.smb1Enabled: false}}
)");
  EXPECT_TRUE(p.ok()) << p.status();
  policy::Policy out = p.ok() ? *std::move(p) : policy::Policy();
  out.source_digest = "b";
  return out;
}

policy::Policy PolicyA() {
  policy::Policy p = testing::TinyPolicy();
  p.source_digest = "a";
  return p;
}

std::string Host(int i) { return absl::StrFormat("fs%02d", i); }

// Host i: signing required on even hosts, SMB1 on every third.
v1::ReportRequest Report(int i, int serial) {
  v1::ReportRequest r;
  r.set_report_id(absl::StrFormat("00000000-0000-4000-8000-%06d%06d", serial, i));
  auto* p = r.mutable_posture();
  p->mutable_host()->set_hostname(Host(i));
  p->mutable_collected_at()->set_seconds(1'800'000'000 + serial);
  p->mutable_server()->set_require_signing(i % 2 == 0);
  p->mutable_server()->set_smb1_enabled(i % 3 == 0);
  auto* hr = p->add_shares();
  hr->set_name("hr");
  hr->set_path("/srv/hr");
  hr->set_encrypt_data(false);
  return r;
}

// Rule id -> {compliant, non-compliant} of the active policy.
std::map<std::string, std::pair<uint32_t, uint32_t>> Counts(ComplianceStore& store,
                                                            std::string* version) {
  auto c = store.GetCompliance();
  EXPECT_TRUE(c.ok()) << c.status();
  std::map<std::string, std::pair<uint32_t, uint32_t>> out;
  if (!c.ok()) return out;
  *version = c->policy_version();
  for (const auto& r : c->rules()) out[r.rule_id()] = {r.compliant(), r.non_compliant()};
  return out;
}

class Fixture {
 public:
  explicit Fixture(ReevaluationUnderTest& t) : t_(t) {}

  // Every host reported once and evaluated under `policy`, activated first.
  void ReportAll(const policy::Policy& policy, int serial,
                 ReportPipeline::Clock clock = absl::Now) {
    ASSERT_TRUE(t_.compliance->ActivatePolicy(policy.name, policy.version, policy.version).ok());
    ReportPipeline pipeline(t_.hosts.get(), t_.compliance.get(), &policy, std::move(clock));
    for (int i = 0; i < kHosts; ++i) {
      auto r = pipeline.Ingest(Host(i), Report(i, serial));
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE(r->evaluated) << Host(i);
    }
  }

  // A pass of pages of 10 hosts, three at once, through `compliance` (default: the store's).
  ReevaluationPass Pass(const policy::Policy& policy, JobClaims* claims,
                        ReportPipeline::Clock clock = absl::Now,
                        ComplianceStore* compliance = nullptr) {
    if (compliance == nullptr) compliance = t_.compliance.get();
    ReportPipeline pipeline(t_.hosts.get(), compliance, &policy, std::move(clock));
    ReevaluationOptions options;
    options.page_hosts = 10;
    options.threads = 3;
    Reevaluator job(&pipeline, compliance, claims, options);
    auto pass = job.RunPass();
    EXPECT_TRUE(pass.ok()) << pass.status();
    return pass.ok() ? *pass : ReevaluationPass();
  }

 private:
  ReevaluationUnderTest& t_;
};

// Runs `race` once, just before the first SaveEvaluations that writes `host`: as if a report
// of that host were evaluated while its page was being evaluated.
class RacingStore : public testing::ForwardingComplianceStore {
 public:
  RacingStore(ComplianceStore* inner, std::string host, std::function<void()> race)
      : ForwardingComplianceStore(inner), host_(std::move(host)), race_(std::move(race)) {}

  absl::StatusOr<std::vector<absl::Status>> SaveEvaluations(
      const std::vector<EvaluationWrite>& writes) override {
    for (const EvaluationWrite& w : writes) {
      if (w.host != host_) continue;
      absl::MutexLock lock(&mu_);
      if (!raced_) race_();
      raced_ = true;
    }
    return ForwardingComplianceStore::SaveEvaluations(writes);
  }

  bool raced() const {
    absl::MutexLock lock(&mu_);
    return raced_;
  }

 private:
  const std::string host_;
  std::function<void()> race_;
  mutable absl::Mutex mu_;
  bool raced_ ABSL_GUARDED_BY(mu_) = false;
};

// A fixed clock: the results and transitions of two runs can be compared row for row.
ReportPipeline::Clock At(int64_t seconds) {
  return [seconds] { return absl::FromUnixSeconds(seconds); };
}

// What a host's evaluation wrote, as comparable lines: its key, current results, findings,
// transitions and share classifications.
std::vector<std::string> Written(ReevaluationUnderTest& t, const std::string& host) {
  std::vector<std::string> out;
  auto key = t.compliance->EvaluationKey(host);
  EXPECT_TRUE(key.ok()) << key.status();
  out.push_back(absl::StrCat("key ", key.ok() ? *key : ""));
  auto results = t.compliance->CurrentResults(host, "baseline");
  EXPECT_TRUE(results.ok()) << results.status();
  std::vector<std::string> rows;
  if (results.ok()) {
    for (const ResultStatus& r : *results) {
      rows.push_back(absl::StrCat("result ", r.rule_id, " ", r.share, " ", r.policy_version, " ",
                                  v1::ComplianceStatus_Name(r.status)));
    }
  }
  std::sort(rows.begin(), rows.end());
  out.insert(out.end(), rows.begin(), rows.end());
  auto findings = t.compliance->ListFindings(host, "", 1000);
  EXPECT_TRUE(findings.ok()) << findings.status();
  if (findings.ok()) {
    for (const v1::Finding& f : *findings) out.push_back("finding " + f.ShortDebugString());
  }
  if (t.transitions) {
    for (const std::string& line : t.transitions(host)) out.push_back("transition " + line);
  }
  auto record = t.hosts->GetHost(host);
  EXPECT_TRUE(record.ok() && record->has_value()) << host;
  if (record.ok() && record->has_value()) {
    for (const auto& share : (*record)->posture.shares()) {
      out.push_back(absl::StrCat("share ", share.name(), " ", share.classification(), " ",
                                 share.classification_rule()));
    }
  }
  return out;
}

// Hosts whose posture changed after their last evaluation (stored without a policy): i % 4 == 1.
void ChangeSomePosturesUnevaluated(ReevaluationUnderTest& t) {
  ReportPipeline no_policy(t.hosts.get(), t.compliance.get(), nullptr, At(1'800'000'100));
  for (int i = 1; i < kHosts; i += 4) {
    v1::ReportRequest r = Report(i, 5);
    r.mutable_posture()->mutable_server()->set_require_signing(i % 2 != 0);
    auto stored = no_policy.Ingest(Host(i), r);
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_EQ(stored->outcome, SaveOutcome::kStored) << Host(i);
  }
}

}  // namespace

void ReevaluationConformanceTest::SetUp() {
  under_test_ = GetParam().make();
  if (!under_test_.skip.empty()) GTEST_SKIP() << under_test_.skip;
  ASSERT_NE(under_test_.hosts, nullptr);
  ASSERT_NE(under_test_.compliance, nullptr);
  ASSERT_NE(under_test_.claims, nullptr);
}

void ReevaluationConformanceTest::TearDown() {
  under_test_.compliance.reset();
  under_test_.hosts.reset();
}

TEST_P(ReevaluationConformanceTest, EvaluationStatesPageByNameWithDigestAndKey) {
  Fixture f(under_test_);
  const policy::Policy a = PolicyA();
  f.ReportAll(a, 1);
  std::vector<std::string> names;
  std::string after;
  for (int pages = 0; pages < 10; ++pages) {
    auto page = under_test_.compliance->EvaluationStates(after, 10);
    ASSERT_TRUE(page.ok()) << page.status();
    if (page->empty()) break;
    EXPECT_LE(page->size(), 10u);
    for (const EvaluationState& s : *page) {
      names.push_back(s.host);
      auto record = under_test_.hosts->GetHost(s.host);
      ASSERT_TRUE(record.ok() && record->has_value()) << s.host;
      EXPECT_EQ(s.posture_digest, (*record)->posture_digest) << s.host;
      EXPECT_EQ(s.posture_digest.size(), 64u) << s.host;
      EXPECT_EQ(s.evaluation_key, *under_test_.compliance->EvaluationKey(s.host)) << s.host;
      EXPECT_FALSE(s.evaluation_key.empty()) << s.host;
    }
    after = page->back().host;
  }
  ASSERT_EQ(names.size(), static_cast<size_t>(kHosts));
  for (int i = 0; i < kHosts; ++i) EXPECT_EQ(names[i], Host(i));
}

TEST_P(ReevaluationConformanceTest, PolicyChangeReevaluatesEveryStoredPostureWithoutAReport) {
  Fixture f(under_test_);
  const policy::Policy a = PolicyA();
  f.ReportAll(a, 1);
  std::string version;
  auto before = Counts(*under_test_.compliance, &version);
  EXPECT_EQ(version, "7");
  EXPECT_EQ(before.count("pii-encrypted"), 1u);

  const policy::Policy b = PolicyB();
  ASSERT_TRUE(under_test_.compliance->ActivatePolicy(b.name, b.version, "b").ok());
  ReevaluationPass pass = f.Pass(b, under_test_.claims.get());
  EXPECT_TRUE(pass.claimed);
  EXPECT_EQ(pass.checked, static_cast<size_t>(kHosts));
  EXPECT_EQ(pass.evaluated, static_cast<size_t>(kHosts));
  EXPECT_EQ(pass.failed, 0u);

  // Every host's results are B's, as its report would have made them.
  int signing = 0;
  int smb1 = 0;
  for (int i = 0; i < kHosts; ++i) {
    signing += i % 2 == 0 ? 1 : 0;
    smb1 += i % 3 == 0 ? 1 : 0;
    auto results = under_test_.compliance->CurrentResults(Host(i), "baseline");
    ASSERT_TRUE(results.ok()) << results.status();
    std::set<std::string> rules;
    for (const ResultStatus& r : *results) {
      EXPECT_EQ(r.policy_version, "8") << Host(i) << " " << r.rule_id;
      rules.insert(r.rule_id);
    }
    EXPECT_THAT(rules, ElementsAre("server-signing-required", "smb1-disabled")) << Host(i);
  }
  auto after = Counts(*under_test_.compliance, &version);
  EXPECT_EQ(version, "8");
  EXPECT_EQ(after.count("pii-encrypted"), 0u);
  using Pair = std::pair<uint32_t, uint32_t>;
  EXPECT_EQ(after["server-signing-required"], Pair(signing, kHosts - signing));
  EXPECT_EQ(after["smb1-disabled"], Pair(kHosts - smb1, smb1));

  // The keys are the ones the report path computes: the agents' next (unchanged) reports do not
  // evaluate again, and neither does another pass.
  ReportPipeline pipeline(under_test_.hosts.get(), under_test_.compliance.get(), &b);
  for (int i = 0; i < kHosts; ++i) {
    auto r = pipeline.Ingest(Host(i), Report(i, 2));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->outcome, SaveOutcome::kUnchanged) << Host(i);
    EXPECT_FALSE(r->evaluated) << Host(i);
  }
  ReevaluationPass again = f.Pass(b, under_test_.claims.get());
  EXPECT_EQ(again.checked, static_cast<size_t>(kHosts));
  EXPECT_EQ(again.evaluated, 0u);
}

TEST_P(ReevaluationConformanceTest, HostsAlreadyEvaluatedUnderTheNewPolicyAreSkipped) {
  Fixture f(under_test_);
  const policy::Policy a = PolicyA();
  f.ReportAll(a, 1);
  const policy::Policy b = PolicyB();
  ASSERT_TRUE(under_test_.compliance->ActivatePolicy(b.name, b.version, "b").ok());
  // Five hosts reported (a new posture) under B before the pass, as after an interrupted pass.
  ReportPipeline pipeline(under_test_.hosts.get(), under_test_.compliance.get(), &b);
  for (int i = 0; i < 5; ++i) {
    v1::ReportRequest r = Report(i, 3);
    r.mutable_posture()->mutable_server()->set_encrypt_data(true);
    auto stored = pipeline.Ingest(Host(i), r);
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_TRUE(stored->evaluated);
  }
  ReevaluationPass pass = f.Pass(b, under_test_.claims.get());
  EXPECT_EQ(pass.checked, static_cast<size_t>(kHosts));
  EXPECT_EQ(pass.evaluated, static_cast<size_t>(kHosts - 5));
}

TEST_P(ReevaluationConformanceTest, OneProcessAtATime) {
  Fixture f(under_test_);
  const policy::Policy a = PolicyA();
  f.ReportAll(a, 1);
  const policy::Policy b = PolicyB();
  ASSERT_TRUE(under_test_.compliance->ActivatePolicy(b.name, b.version, "b").ok());
  JobClaims* other = under_test_.other_process_claims != nullptr
                         ? under_test_.other_process_claims.get()
                         : under_test_.claims.get();
  {
    auto held = under_test_.claims->TryClaim("reevaluate");
    ASSERT_TRUE(held.ok()) << held.status();
    ASSERT_NE(*held, nullptr);
    auto second = other->TryClaim("reevaluate");
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_EQ(*second, nullptr);
    auto another_job = other->TryClaim("another-job");
    ASSERT_TRUE(another_job.ok()) << another_job.status();
    EXPECT_NE(*another_job, nullptr);

    ReevaluationPass waiting = f.Pass(b, other);
    EXPECT_FALSE(waiting.claimed);
    EXPECT_EQ(waiting.evaluated, 0u);
    auto results = under_test_.compliance->CurrentResults(Host(0), "baseline");
    ASSERT_TRUE(results.ok());
    for (const ResultStatus& r : *results) EXPECT_EQ(r.policy_version, "7");
  }
  // Released: the other process runs the pass.
  ReevaluationPass pass = f.Pass(b, other);
  EXPECT_TRUE(pass.claimed);
  EXPECT_EQ(pass.evaluated, static_cast<size_t>(kHosts));
}

TEST_P(ReevaluationConformanceTest, BackgroundJobWaitsForTheClaimThenFinishes) {
  Fixture f(under_test_);
  const policy::Policy a = PolicyA();
  f.ReportAll(a, 1);
  const policy::Policy b = PolicyB();
  ASSERT_TRUE(under_test_.compliance->ActivatePolicy(b.name, b.version, "b").ok());
  auto held = under_test_.claims->TryClaim("reevaluate");
  ASSERT_TRUE(held.ok() && *held != nullptr);

  ReportPipeline pipeline(under_test_.hosts.get(), under_test_.compliance.get(), &b);
  ReevaluationOptions options;
  options.retry = absl::Milliseconds(50);
  JobClaims* other = under_test_.other_process_claims != nullptr
                         ? under_test_.other_process_claims.get()
                         : under_test_.claims.get();
  Reevaluator job(&pipeline, under_test_.compliance.get(), other, options);
  job.Start();
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(job.done());  // waiting for the claim
  held->reset();
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (!job.done() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_TRUE(job.done());
  for (int i = 0; i < kHosts; ++i) {
    auto results = under_test_.compliance->CurrentResults(Host(i), "baseline");
    ASSERT_TRUE(results.ok());
    ASSERT_FALSE(results->empty());
    for (const ResultStatus& r : *results) EXPECT_EQ(r.policy_version, "8") << Host(i);
  }
}

TEST_P(ReevaluationConformanceTest, APageWritesWhatEachHostEvaluatedAloneWrites) {
  // Two stores with the same history: hosts reported under A, some postures changed since
  // (their results change under B), then B: results new (smb1-disabled), removed
  // (pii-encrypted), changed and unchanged (server-signing-required). One is re-evaluated host
  // by host (EvaluateStored), the other by the pass's pages; both at the same time. In both, a
  // report of fs04 is evaluated after its page was read (before its host's evaluation alone).
  ReevaluationUnderTest alone = GetParam().make();
  ASSERT_NE(alone.compliance, nullptr);
  const policy::Policy a = PolicyA();
  const policy::Policy b = PolicyB();
  for (ReevaluationUnderTest* t : {&under_test_, &alone}) {
    Fixture f(*t);
    f.ReportAll(a, 1, At(1'800'000'010));
    ChangeSomePosturesUnevaluated(*t);
    ASSERT_TRUE(t->compliance->ActivatePolicy(b.name, b.version, "b").ok());
  }
  const std::string raced_host = Host(4);
  auto report_raced_host = [&](ReevaluationUnderTest& t) {
    ReportPipeline reports(t.hosts.get(), t.compliance.get(), &b, At(1'800'000'150));
    v1::ReportRequest r = Report(4, 6);
    r.mutable_posture()->mutable_server()->set_require_signing(false);
    auto stored = reports.Ingest(raced_host, r);
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_TRUE(stored->evaluated);
  };
  ReportPipeline pipeline(alone.hosts.get(), alone.compliance.get(), &b, At(1'800'000'200));
  for (int i = 0; i < kHosts; ++i) {
    if (Host(i) == raced_host) report_raced_host(alone);
    auto evaluated = pipeline.EvaluateStored(Host(i));
    ASSERT_TRUE(evaluated.ok()) << evaluated.status();
    EXPECT_EQ(evaluated->has_value(), Host(i) != raced_host) << Host(i);
  }
  RacingStore racing(under_test_.compliance.get(), raced_host,
                     [&] { report_raced_host(under_test_); });
  ReevaluationPass pass =
      Fixture(under_test_).Pass(b, under_test_.claims.get(), At(1'800'000'200), &racing);
  ASSERT_TRUE(racing.raced());
  EXPECT_EQ(pass.evaluated, static_cast<size_t>(kHosts - 1));
  EXPECT_EQ(pass.failed, 0u);

  for (int i = 0; i < kHosts; ++i) {
    std::vector<std::string> paged = Written(under_test_, Host(i));
    EXPECT_EQ(paged, Written(alone, Host(i))) << Host(i);
    // The page's results are B's, from the posture stored last (fs04's: the report's).
    const bool signing =
        Host(i) == raced_host ? false : ((i % 4 == 1) ? (i % 2 != 0) : (i % 2 == 0));
    EXPECT_THAT(paged,
                ::testing::Contains(absl::StrCat(
                    "result server-signing-required  8 ",
                    signing ? "COMPLIANCE_STATUS_COMPLIANT" : "COMPLIANCE_STATUS_NON_COMPLIANT")))
        << Host(i);
    EXPECT_THAT(paged, ::testing::Contains(::testing::StartsWith("result smb1-disabled  8 ")))
        << Host(i);
    EXPECT_THAT(paged, ::testing::Not(::testing::Contains(::testing::HasSubstr("pii-encrypted  "))))
        << Host(i);
  }
  // The counts read from both: per rule, and the overview (classifications, trend, the hosts
  // failing longest).
  auto paged_compliance = under_test_.compliance->GetCompliance();
  auto alone_compliance = alone.compliance->GetCompliance();
  ASSERT_TRUE(paged_compliance.ok() && alone_compliance.ok());
  EXPECT_EQ(paged_compliance->ShortDebugString(), alone_compliance->ShortDebugString());
  EXPECT_EQ(paged_compliance->policy_version(), "8");
  OverviewQuery query;
  query.now = absl::FromUnixSeconds(1'800'000'300);
  query.stale_before = absl::FromUnixSeconds(0);
  auto paged_overview = under_test_.compliance->GetFleetOverview(query);
  auto alone_overview = alone.compliance->GetFleetOverview(query);
  ASSERT_TRUE(paged_overview.ok()) << paged_overview.status();
  ASSERT_TRUE(alone_overview.ok()) << alone_overview.status();
  EXPECT_EQ(paged_overview->ShortDebugString(), alone_overview->ShortDebugString());
  EXPECT_FALSE(paged_overview->failing_longest().empty());
  alone.compliance.reset();
  alone.hosts.reset();
}

TEST_P(ReevaluationConformanceTest, AHostAReportEvaluatedDuringItsPageKeepsTheReportsResults) {
  Fixture f(under_test_);
  const policy::Policy a = PolicyA();
  f.ReportAll(a, 1);
  const policy::Policy b = PolicyB();
  ASSERT_TRUE(under_test_.compliance->ActivatePolicy(b.name, b.version, "b").ok());
  // fs04 (signing required) reports signing off while its page is evaluated from the old
  // posture: the page must not overwrite the report's results or add its transitions.
  const std::string raced_host = Host(4);
  std::vector<std::string> after_report;
  RacingStore racing(under_test_.compliance.get(), raced_host, [&] {
    ReportPipeline reports(under_test_.hosts.get(), under_test_.compliance.get(), &b);
    v1::ReportRequest r = Report(4, 6);
    r.mutable_posture()->mutable_server()->set_require_signing(false);
    auto stored = reports.Ingest(raced_host, r);
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_TRUE(stored->evaluated);
    after_report = Written(under_test_, raced_host);
  });
  ReevaluationPass pass = f.Pass(b, under_test_.claims.get(), absl::Now, &racing);
  ASSERT_TRUE(racing.raced());
  EXPECT_EQ(pass.checked, static_cast<size_t>(kHosts));
  EXPECT_EQ(pass.evaluated, static_cast<size_t>(kHosts - 1));  // fs04 was current
  EXPECT_EQ(pass.failed, 0u);
  EXPECT_EQ(Written(under_test_, raced_host), after_report);
  EXPECT_THAT(after_report, ::testing::Contains("result server-signing-required  8 "
                                                "COMPLIANCE_STATUS_NON_COMPLIANT"));
  // The other hosts of its page were written by the page.
  for (int i = 0; i < kHosts; ++i) {
    auto results = under_test_.compliance->CurrentResults(Host(i), "baseline");
    ASSERT_TRUE(results.ok()) << results.status();
    ASSERT_FALSE(results->empty()) << Host(i);
    for (const ResultStatus& r : *results) EXPECT_EQ(r.policy_version, "8") << Host(i);
  }
  ReevaluationPass again = f.Pass(b, under_test_.claims.get());
  EXPECT_EQ(again.evaluated, 0u);
}

}  // namespace smbfleet::collector::store_testing

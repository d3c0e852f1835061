// Hosts reported under policy A, then re-evaluated under policy B from their stored postures
// (reevaluation_conformance.h).
#include "tests/integration/reevaluation_conformance.h"

#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "collector/ingest/pipeline.h"
#include "collector/ingest/reevaluate.h"
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
  void ReportAll(const policy::Policy& policy, int serial) {
    ASSERT_TRUE(t_.compliance->ActivatePolicy(policy.name, policy.version, policy.version).ok());
    ReportPipeline pipeline(t_.hosts.get(), t_.compliance.get(), &policy);
    for (int i = 0; i < kHosts; ++i) {
      auto r = pipeline.Ingest(Host(i), Report(i, serial));
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE(r->evaluated) << Host(i);
    }
  }

  ReevaluationPass Pass(const policy::Policy& policy, JobClaims* claims) {
    ReportPipeline pipeline(t_.hosts.get(), t_.compliance.get(), &policy);
    ReevaluationOptions options;
    options.page_hosts = 10;
    options.threads = 3;
    Reevaluator job(&pipeline, t_.compliance.get(), claims, options);
    auto pass = job.RunPass();
    EXPECT_TRUE(pass.ok()) << pass.status();
    return pass.ok() ? *pass : ReevaluationPass();
  }

 private:
  ReevaluationUnderTest& t_;
};

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

}  // namespace smbfleet::collector::store_testing

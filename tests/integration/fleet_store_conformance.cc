// The console's reads (fleet_store_conformance.h) on one hand-built fleet of three hosts, and
// how reports of that fleet are stored: per-host report ids, one row per report under
// concurrency, and order by collection time.
#include "tests/integration/fleet_store_conformance.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector::store_testing {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// Noon, so that "an hour ago" is the same UTC day.
const absl::Time kNow = absl::FromUnixSeconds(1773144000);  // 2026-03-10T12:00:00Z

google::protobuf::Timestamp Ts(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

v1::Session Session(const std::string& id, v1::Dialect dialect, v1::Protection signing,
                    v1::Protection encryption) {
  v1::Session s;
  s.set_session_id(id);
  s.set_client_address("10.0.0.7");
  s.set_client_name("<img src=x onerror=alert(1)>");
  s.set_user("CORP\\alice");
  s.set_dialect(dialect);
  s.set_signing(signing);
  s.set_encryption(encryption);
  return s;
}

v1::Share Share(const std::string& name, std::optional<bool> encrypt) {
  v1::Share s;
  s.set_name(name);
  s.set_path(absl::StrCat("/srv/", name));
  if (encrypt.has_value()) s.set_encrypt_data(*encrypt);
  return s;
}

v1::RuleResult Result(const std::string& rule, v1::ComplianceStatus status,
                      const std::string& share = "", const std::string& classification = "") {
  v1::RuleResult r;
  r.set_rule_id(rule);
  r.set_status(status);
  r.set_share(share);
  r.set_classification(classification);
  return r;
}

v1::StatusTransition Transition(const std::string& host, const std::string& rule,
                                const std::string& share, v1::ComplianceStatus from,
                                v1::ComplianceStatus to) {
  v1::StatusTransition t;
  t.set_hostname(host);
  t.set_rule_id(rule);
  t.set_share(share);
  t.set_policy_version("1");
  t.set_from_status(from);
  t.set_to_status(to);
  return t;
}

constexpr auto kC = v1::COMPLIANCE_STATUS_COMPLIANT;
constexpr auto kNc = v1::COMPLIANCE_STATUS_NON_COMPLIANT;
constexpr auto kW = v1::COMPLIANCE_STATUS_WAIVED;
constexpr auto kU = v1::COMPLIANCE_STATUS_UNKNOWN;
constexpr auto kNa = v1::COMPLIANCE_STATUS_NOT_APPLICABLE;
constexpr auto kNone = v1::COMPLIANCE_STATUS_UNSPECIFIED;

std::vector<std::string> Names(const HostPage& page) {
  std::vector<std::string> out;
  for (const auto& h : page.hosts) out.push_back(h.name());
  return out;
}

}  // namespace

void FleetStoreConformanceTest::SetUp() {
  under_test_ = GetParam().make();
  if (!under_test_.skip.empty()) GTEST_SKIP() << under_test_.skip;
  HostStore& hosts = *under_test_.hosts;
  ComplianceStore& compliance = *under_test_.compliance;
  ASSERT_TRUE(compliance.ActivatePolicy("baseline", "1", "rules: []").ok());

  struct Seed {
    std::string name;
    v1::Platform platform;
    std::string os_name, os_version;
    absl::Duration seen_ago;
    std::map<std::string, std::string> reported, trusted;
  };
  const std::vector<Seed> seeds = {
      // fs01 claims site=oslo for itself: only the trusted site=paris counts.
      {"fs01",
       v1::PLATFORM_WINDOWS,
       "Windows Server 2022",
       "10.0.20348",
       absl::Minutes(10),
       {{"site", "oslo"}},
       {{"site", "paris"}}},
      {"fs02",
       v1::PLATFORM_SAMBA,
       "Debian 12",
       "Samba 4.19.4",
       absl::Hours(5),
       {},
       {{"site", "paris"}, {"tier", "gold"}}},
      {"web03",
       v1::PLATFORM_SAMBA,
       "Ubuntu 24.04",
       "Samba 4.19.5",
       absl::Hours(3),
       {},
       {{"site", "oslo"}}},
  };
  int n = 0;
  for (const Seed& s : seeds) {
    v1::Posture p;
    p.mutable_host()->set_hostname(s.name);
    p.mutable_host()->set_platform(s.platform);
    p.mutable_host()->set_os_name(s.os_name);
    p.mutable_host()->set_os_version(s.os_version);
    for (const auto& [k, v] : s.reported) (*p.mutable_host()->mutable_labels())[k] = v;
    if (s.name == "fs01") {
      *p.add_shares() = Share("finance", true);
      *p.add_shares() = Share("public", false);
      *p.add_sessions() =
          Session("1", v1::DIALECT_SMB_3_1_1, v1::PROTECTION_FULL, v1::PROTECTION_FULL);
      *p.add_sessions() =
          Session("2", v1::DIALECT_SMB_2_1, v1::PROTECTION_NONE, v1::PROTECTION_NONE);
    } else if (s.name == "fs02") {
      p.mutable_server()->set_encrypt_data(true);  // covers its unset share
      *p.add_shares() = Share("hr", std::nullopt);
      *p.add_sessions() = Session("3", v1::DIALECT_SMB1, v1::PROTECTION_NONE, v1::PROTECTION_NONE);
    }
    IncomingReport report;
    report.host = s.name;
    report.report_id = absl::StrCat("6a1b2c3d-0000-4000-8000-00000000000", ++n);
    report.posture = &p;
    report.digest = absl::StrCat("d1ce5e0", n);  // hex, as PostureDigest
    report.received_at = kNow - s.seen_ago;
    auto saved = hosts.SaveReport(report);
    ASSERT_TRUE(saved.ok()) << s.name << ": " << saved.status();
    ASSERT_TRUE(under_test_.enrollment->SetHostLabels(s.name, s.trusted, "admin", kNow).ok());
  }

  // Each evaluation stores its transitions at its own time, as the pipeline does.
  std::map<std::string, std::string> keys;
  auto save = [&](const std::string& host, absl::Time at, std::vector<v1::RuleResult> results,
                  std::vector<std::pair<std::string, std::string>> classes,
                  std::vector<v1::StatusTransition> transitions) {
    v1::HostEvaluation e;
    e.set_hostname(host);
    e.set_policy_name("baseline");
    e.set_policy_version("1");
    *e.mutable_evaluated_at() = Ts(at);
    for (auto& r : results) *e.add_results() = r;
    for (const auto& [share, c] : classes) {
      auto* sc = e.add_classifications();
      sc->set_share(share);
      sc->set_classification(c);
      sc->set_rule("by-name");
    }
    for (auto& t : transitions) *t.mutable_at() = Ts(at);
    EvaluationWrite w;
    w.host = host;
    w.evaluation = &e;
    w.transitions = std::move(transitions);
    w.expected_key = keys[host];
    w.evaluation_key = keys[host] + "k";
    keys[host] = w.evaluation_key;
    absl::Status saved = compliance.SaveEvaluation(w);
    ASSERT_TRUE(saved.ok()) << saved;
  };
  const absl::Duration day = absl::Hours(24);
  const std::vector<std::pair<std::string, std::string>> fs01_classes = {
      {"finance", "confidential"}, {"public", "public"}};
  save("fs01", kNow - 3 * day,
       {Result("signing", kC), Result("encrypt", kC, "finance", "confidential"),
        Result("encrypt", kNa, "public", "public")},
       fs01_classes,
       {Transition("fs01", "signing", "", kNone, kC),
        Transition("fs01", "encrypt", "finance", kNone, kC),
        Transition("fs01", "encrypt", "public", kNone, kNa)});
  save("fs01", kNow - 2 * day,
       {Result("signing", kNc), Result("encrypt", kC, "finance", "confidential"),
        Result("encrypt", kNa, "public", "public")},
       fs01_classes, {Transition("fs01", "signing", "", kC, kNc)});
  save("fs02", kNow - day,
       {Result("signing", kC), Result("smb1", kNc), Result("encrypt", kW, "hr", "confidential")},
       {{"hr", "confidential"}},
       {Transition("fs02", "signing", "", kNone, kC), Transition("fs02", "smb1", "", kNone, kNc),
        Transition("fs02", "encrypt", "hr", kNone, kW)});
  save("web03", kNow - absl::Hours(1), {Result("signing", kU)}, {},
       {Transition("web03", "signing", "", kNone, kU)});
}

void FleetStoreConformanceTest::TearDown() {}

TEST_P(FleetStoreConformanceTest, FindHostsFiltersAndCountsEveryPage) {
  HostStore& hosts = *under_test_.hosts;
  auto find = [&](HostQuery q) {
    auto page = hosts.FindHosts(q);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? *page : HostPage{};
  };
  HostQuery all;
  auto everything = find(all);
  EXPECT_THAT(Names(everything), ElementsAre("fs01", "fs02", "web03"));
  EXPECT_EQ(everything.total, 3u);

  HostQuery q;
  q.query = "S0";  // case-insensitive substring
  q.limit = 1;
  auto first = find(q);
  EXPECT_THAT(Names(first), ElementsAre("fs01"));
  EXPECT_EQ(first.total, 2u);  // all pages
  q.after_name = "fs01";
  auto second = find(q);
  EXPECT_THAT(Names(second), ElementsAre("fs02"));
  EXPECT_EQ(second.total, 2u);
  q.after_name = "fs02";
  EXPECT_THAT(Names(find(q)), IsEmpty());

  HostQuery labels;
  labels.labels = {{"site", "paris"}};
  EXPECT_THAT(Names(find(labels)), ElementsAre("fs01", "fs02"));
  labels.labels = {{"site", "paris"}, {"tier", "gold"}};
  EXPECT_THAT(Names(find(labels)), ElementsAre("fs02"));
  labels.labels = {{"site", "oslo"}};  // what fs01 reports is not trusted
  EXPECT_THAT(Names(find(labels)), ElementsAre("web03"));
  labels.labels = {{"site", "rome"}};
  EXPECT_EQ(find(labels).total, 0u);

  HostQuery os;
  os.os = "DEBIAN";
  EXPECT_THAT(Names(find(os)), ElementsAre("fs02"));
  os.os = "4.19";  // the version too
  EXPECT_THAT(Names(find(os)), ElementsAre("fs02", "web03"));

  HostQuery platform;
  platform.platform = v1::PLATFORM_WINDOWS;
  EXPECT_THAT(Names(find(platform)), ElementsAre("fs01"));

  HostQuery failing;
  failing.failing_rule = "signing";
  EXPECT_THAT(Names(find(failing)), ElementsAre("fs01"));
  failing.failing_rule = "*";
  EXPECT_THAT(Names(find(failing)), ElementsAre("fs01", "fs02"));
  failing.failing_rule = "encrypt";  // waived is not failing
  EXPECT_THAT(Names(find(failing)), IsEmpty());

  HostQuery stale;
  stale.seen_before = kNow - absl::Hours(2);
  EXPECT_THAT(Names(find(stale)), ElementsAre("fs02", "web03"));
  stale.platform = v1::PLATFORM_SAMBA;
  stale.failing_rule = "*";
  stale.labels = {{"site", "paris"}};
  stale.name_prefix = "fs";
  EXPECT_THAT(Names(find(stale)), ElementsAre("fs02"));

  // Filter text is data: no pattern characters, no SQL.
  for (const char* hostile : {"%", "_s0_", "'; DROP TABLE hosts; --", "\\"}) {
    HostQuery h;
    h.query = hostile;
    h.os = hostile;
    h.failing_rule = hostile;
    h.labels = {{hostile, hostile}};
    auto page = find(h);
    EXPECT_EQ(page.total, 0u) << hostile;
  }
  EXPECT_EQ(find(all).total, 3u);
}

TEST_P(FleetStoreConformanceTest, OverviewAggregatesTheFleet) {
  OverviewQuery q;
  q.trend_days = 4;
  q.top = 10;
  q.now = kNow;
  q.stale_before = kNow - absl::Hours(2);
  auto got = under_test_.compliance->GetFleetOverview(q);
  ASSERT_TRUE(got.ok()) << got.status();
  const v1::GetFleetOverviewResponse& o = *got;
  EXPECT_EQ(o.policy_name(), "baseline");
  EXPECT_EQ(o.policy_version(), "1");
  EXPECT_EQ(o.hosts(), 3u);

  ASSERT_EQ(o.by_rule_size(), 3);  // encrypt, signing, smb1
  EXPECT_EQ(o.by_rule(1).rule_id(), "signing");
  EXPECT_EQ(o.by_rule(1).compliant(), 1u);
  EXPECT_EQ(o.by_rule(1).non_compliant(), 1u);
  EXPECT_EQ(o.by_rule(1).unknown(), 1u);

  ASSERT_EQ(o.by_classification_size(), 2);
  EXPECT_EQ(o.by_classification(0).key(), "confidential");
  EXPECT_EQ(o.by_classification(0).compliant(), 1u);
  EXPECT_EQ(o.by_classification(0).waived(), 1u);
  EXPECT_DOUBLE_EQ(o.by_classification(0).compliant_pct(), 100);
  EXPECT_EQ(o.by_classification(1).key(), "public");
  EXPECT_DOUBLE_EQ(o.by_classification(1).compliant_pct(), -1);  // only not-applicable

  ASSERT_EQ(o.by_label_size(), 3);  // trusted labels only
  EXPECT_EQ(o.by_label(0).key(), "site=oslo");
  EXPECT_EQ(o.by_label(0).unknown(), 1u);
  EXPECT_DOUBLE_EQ(o.by_label(0).compliant_pct(), 0);
  EXPECT_EQ(o.by_label(1).key(), "site=paris");
  EXPECT_EQ(o.by_label(1).compliant(), 2u);
  EXPECT_EQ(o.by_label(1).non_compliant(), 2u);
  EXPECT_EQ(o.by_label(1).waived(), 1u);
  EXPECT_DOUBLE_EQ(o.by_label(1).compliant_pct(), 60);
  EXPECT_EQ(o.by_label(2).key(), "tier=gold");
  EXPECT_NEAR(o.by_label(2).compliant_pct(), 200.0 / 3, 1e-9);

  ASSERT_EQ(o.trend_size(), 4);
  EXPECT_EQ(o.trend(0).day(), "2026-03-07");
  EXPECT_EQ(o.trend(0).compliant(), 2u);
  EXPECT_DOUBLE_EQ(o.trend(0).compliant_pct(), 100);
  EXPECT_EQ(o.trend(1).day(), "2026-03-08");
  EXPECT_DOUBLE_EQ(o.trend(1).compliant_pct(), 50);
  EXPECT_EQ(o.trend(1).non_compliant(), 1u);
  EXPECT_DOUBLE_EQ(o.trend(2).compliant_pct(), 60);
  EXPECT_EQ(o.trend(3).day(), "2026-03-10");
  EXPECT_DOUBLE_EQ(o.trend(3).compliant_pct(), 50);
  EXPECT_EQ(o.trend(3).compliant(), 2u);
  EXPECT_EQ(o.trend(3).non_compliant(), 2u);

  ASSERT_EQ(o.failing_longest_size(), 2);
  EXPECT_EQ(o.failing_longest(0).name(), "fs01");
  EXPECT_EQ(o.failing_longest(0).since().seconds(), absl::ToUnixSeconds(kNow) - 2 * 86400);
  EXPECT_EQ(o.failing_longest(0).count(), 1u);
  EXPECT_EQ(o.failing_longest(1).name(), "fs02");

  EXPECT_EQ(o.stale_count(), 2u);
  ASSERT_EQ(o.stale_size(), 2);
  EXPECT_EQ(o.stale(0).name(), "fs02");  // oldest first
  EXPECT_EQ(o.stale(0).since().seconds(), absl::ToUnixSeconds(kNow - absl::Hours(5)));
  EXPECT_EQ(o.stale(1).name(), "web03");

  ASSERT_EQ(o.encryption_size(), 2);
  EXPECT_EQ(o.encryption(0).classification(), "confidential");
  EXPECT_EQ(o.encryption(0).shares(), 2u);
  EXPECT_EQ(o.encryption(0).encrypted(), 2u);  // hr by its server's EncryptData
  EXPECT_EQ(o.encryption(1).classification(), "public");
  EXPECT_EQ(o.encryption(1).encrypted(), 0u);
  EXPECT_DOUBLE_EQ(o.encryption(1).encrypted_pct(), 0);

  const auto& s = o.sessions();
  EXPECT_EQ(s.sessions(), 3u);
  EXPECT_EQ(s.unsigned_sessions(), 2u);
  EXPECT_EQ(s.unencrypted_sessions(), 2u);
  EXPECT_EQ(s.legacy_dialect_sessions(), 2u);
  EXPECT_THAT(s.by_dialect(),
              UnorderedElementsAre(Pair("DIALECT_SMB_3_1_1", 1u), Pair("DIALECT_SMB_2_1", 1u),
                                   Pair("DIALECT_SMB1", 1u)));
  ASSERT_EQ(s.top_hosts_size(), 2);
  EXPECT_EQ(s.top_hosts(0).name(), "fs01");
  EXPECT_EQ(s.top_hosts(0).count(), 1u);
  EXPECT_EQ(s.top_hosts(1).name(), "fs02");

  q.top = 1;  // the lists are bounded, the counts are not
  auto small = under_test_.compliance->GetFleetOverview(q);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->stale_size(), 1);
  EXPECT_EQ(small->stale_count(), 2u);
  EXPECT_EQ(small->failing_longest_size(), 1);
  EXPECT_EQ(small->sessions().top_hosts_size(), 1);
}

// A report as an agent sends it: the posture's collection time and a digest standing for its
// content (hex, as PostureDigest).
struct Sent {
  v1::Posture posture;
  IncomingReport report;
};

Sent Report(const std::string& host, const std::string& id, const std::string& digest,
            const std::string& share, absl::Time collected) {
  Sent s;
  s.posture.mutable_host()->set_hostname(host);
  *s.posture.mutable_collected_at() = Ts(collected);
  *s.posture.add_shares() = Share(share, true);
  s.report.host = host;
  s.report.report_id = id;
  s.report.digest = digest;
  s.report.received_at = kNow;
  return s;
}

absl::StatusOr<SavedReport> Store(HostStore& hosts, Sent& sent) {
  sent.report.posture = &sent.posture;
  return hosts.StoreReport(sent.report);
}

// GetHosts (a change's hosts in one read) answers each host as GetHost does.
TEST_P(FleetStoreConformanceTest, GetHostsReadsEachHostAsGetHostDoes) {
  HostStore& hosts = *under_test_.hosts;
  const std::vector<std::string> names = {"fs01", "fs02", "web03", "nobody"};
  auto many = hosts.GetHosts(names);
  ASSERT_TRUE(many.ok()) << many.status();
  EXPECT_EQ(many->count("nobody"), 0u);
  EXPECT_EQ(many->size(), 3u);
  for (const std::string& name : names) {
    auto one = hosts.GetHost(name);
    ASSERT_TRUE(one.ok()) << one.status();
    if (!one->has_value()) continue;
    ASSERT_EQ(many->count(name), 1u) << name;
    const HostRecord& got = many->at(name);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got.summary, (*one)->summary))
        << name;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got.posture, (*one)->posture))
        << name;
    EXPECT_EQ(got.last_report_id, (*one)->last_report_id);
    EXPECT_EQ(got.posture_digest, (*one)->posture_digest);
  }
  // The shares carry the classification of the latest evaluation.
  const v1::Posture& fs01 = many->at("fs01").posture;
  ASSERT_GE(fs01.shares_size(), 1);
  EXPECT_EQ(fs01.shares(0).name(), "finance");
  EXPECT_EQ(fs01.shares(0).classification(), "confidential");
  EXPECT_THAT(*hosts.GetHosts({}), IsEmpty());
}

// Report ids are the agent's: another host may use the same one.
TEST_P(FleetStoreConformanceTest, ReportIdsAreKeyedByHost) {
  HostStore& hosts = *under_test_.hosts;
  const std::string fs01_id = "6a1b2c3d-0000-4000-8000-000000000001";  // fs01's seed report
  Sent reuse = Report("fs02", fs01_id, "0bad1d", "reused", kNow);
  auto saved = Store(hosts, reuse);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->outcome, SaveOutcome::kStored);
  auto fs02 = hosts.GetHost("fs02");
  ASSERT_TRUE(fs02.ok() && fs02->has_value());
  EXPECT_EQ((**fs02).last_report_id, fs01_id);
  ASSERT_EQ((**fs02).posture.shares_size(), 1);
  EXPECT_EQ((**fs02).posture.shares(0).name(), "reused");

  Sent resend = Report("fs01", fs01_id, "0bad1d", "other", kNow);
  saved = Store(hosts, resend);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->outcome, SaveOutcome::kDuplicate);
  auto fs01 = hosts.GetHost("fs01");
  ASSERT_TRUE(fs01.ok() && fs01->has_value());
  EXPECT_EQ((**fs01).posture.shares(0).name(), "finance");  // not overwritten
}

// The same report on two connections at once (an agent retrying while the first attempt is
// still being stored): both calls return, one stores it, the other is a duplicate.
TEST_P(FleetStoreConformanceTest, SameReportSentTwiceAtOnceIsStoredOnce) {
  HostStore& hosts = *under_test_.hosts;
  for (int i = 0; i < 10; ++i) {
    const std::string id = absl::StrCat("7e000000-0000-4000-8000-0000000000", 10 + i);
    Sent a = Report("fs01", id, absl::StrCat("c0ffee", 10 + i), "s", kNow + absl::Seconds(i));
    Sent b = a;
    absl::StatusOr<SavedReport> first, second;
    std::thread t1([&] { first = Store(hosts, a); });
    std::thread t2([&] { second = Store(hosts, b); });
    t1.join();
    t2.join();
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_EQ(
        (first->outcome == SaveOutcome::kDuplicate) + (second->outcome == SaveOutcome::kDuplicate),
        1)
        << "attempt " << i;
  }
}

// An older report that arrives late is kept in history but does not replace the current state.
TEST_P(FleetStoreConformanceTest, OlderReportArrivingLateDoesNotReplaceTheCurrentState) {
  HostStore& hosts = *under_test_.hosts;
  const absl::Time t = kNow - absl::Hours(1);
  Sent newer = Report("web03", "8f000000-0000-4000-8000-000000000002", "beef02", "new", t);
  auto saved = Store(hosts, newer);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->outcome, SaveOutcome::kStored);
  EXPECT_TRUE(saved->current);

  Sent late = Report("web03", "8f000000-0000-4000-8000-000000000001", "beef01", "old",
                     t - absl::Minutes(5));
  saved = Store(hosts, late);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->outcome, SaveOutcome::kStored);  // in history
  EXPECT_FALSE(saved->current);
  auto host = hosts.GetHost("web03");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((**host).last_report_id, newer.report.report_id);
  ASSERT_EQ((**host).posture.shares_size(), 1);
  EXPECT_EQ((**host).posture.shares(0).name(), "new");
  EXPECT_EQ((**host).summary.shares(), 1u);

  // Its resend is a duplicate the host has moved on from.
  saved = Store(hosts, late);
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->outcome, SaveOutcome::kDuplicate);
  EXPECT_FALSE(saved->current);

  // A late report of the current state is unchanged and current; a newer one replaces it.
  Sent same = Report("web03", "8f000000-0000-4000-8000-000000000003", "beef02", "new",
                     t - absl::Minutes(1));
  saved = Store(hosts, same);
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->outcome, SaveOutcome::kUnchanged);
  EXPECT_TRUE(saved->current);
  Sent next = Report("web03", "8f000000-0000-4000-8000-000000000004", "beef04", "next",
                     t + absl::Minutes(1));
  saved = Store(hosts, next);
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->outcome, SaveOutcome::kStored);
  EXPECT_TRUE(saved->current);
  host = hosts.GetHost("web03");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((**host).posture.shares(0).name(), "next");
}

// A digest-only report (no posture) stands for the host's current posture only.
TEST_P(FleetStoreConformanceTest, DigestOnlyReportIsUnchangedOnlyWhenItsDigestIsCurrent) {
  HostStore& hosts = *under_test_.hosts;
  Sent full =
      Report("web04", "9a000000-0000-4000-8000-000000000001", "beef10", "a", kNow - absl::Hours(1));
  ASSERT_EQ(Store(hosts, full)->outcome, SaveOutcome::kStored);
  auto digest_only = [](const std::string& host, const std::string& id, const std::string& digest) {
    IncomingReport r;
    r.host = host;
    r.report_id = id;
    r.reason = "schedule";
    r.digest = digest;
    r.collected_at = Ts(kNow);
    r.received_at = kNow;
    return r;
  };

  auto other =
      hosts.StoreReport(digest_only("web04", "9a000000-0000-4000-8000-000000000002", "beef11"));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(other->unknown_digest);
  auto stranger =
      hosts.StoreReport(digest_only("web05", "9a000000-0000-4000-8000-000000000003", "beef10"));
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  EXPECT_TRUE(stranger->unknown_digest);
  auto web05 = hosts.GetHost("web05");
  ASSERT_TRUE(web05.ok());
  EXPECT_FALSE(web05->has_value());  // nothing written

  auto same =
      hosts.StoreReport(digest_only("web04", "9a000000-0000-4000-8000-000000000002", "beef10"));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_FALSE(same->unknown_digest);
  EXPECT_EQ(same->outcome, SaveOutcome::kUnchanged);
  EXPECT_TRUE(same->current);
  auto host = hosts.GetHost("web04");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((**host).last_report_id, "9a000000-0000-4000-8000-000000000002");
  ASSERT_EQ((**host).posture.shares_size(), 1);
  EXPECT_EQ((**host).posture.shares(0).name(), "a");

  auto again =
      hosts.StoreReport(digest_only("web04", "9a000000-0000-4000-8000-000000000002", "beef10"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->outcome, SaveOutcome::kDuplicate);
}

// Digest-only reports stored together answer each as StoreReport would answer it alone.
TEST_P(FleetStoreConformanceTest, DigestOnlyBatchAnswersEachReportAsAloneWould) {
  HostStore& hosts = *under_test_.hosts;
  const absl::Time t = kNow - absl::Hours(1);
  Sent a = Report("batch-a", "9b000000-0000-4000-8000-000000000001", "beef20", "a", t);
  Sent b = Report("batch-b", "9b000000-0000-4000-8000-000000000002", "beef21", "b", t);
  // Quotes, backslashes, braces and commas: PostgreSQL's array syntax must not split them.
  const std::string odd_name = "batch-c \"q\" \\ {x},y NULL";
  Sent c = Report(odd_name, "9b000000-0000-4000-8000-000000000003", "beef22", "c", t);
  Sent d = Report("batch-d", "9b000000-0000-4000-8000-000000000004", "beef23", "d", t);
  for (Sent* s : {&a, &b, &c, &d}) ASSERT_EQ(Store(hosts, *s)->outcome, SaveOutcome::kStored);
  auto digest_only = [](const std::string& host, const std::string& id, const std::string& digest,
                        absl::Time collected) {
    IncomingReport r;
    r.host = host;
    r.report_id = id;
    r.reason = "schedule";
    r.digest = digest;
    r.collected_at = Ts(collected);
    r.received_at = kNow;
    return r;
  };
  const std::vector<IncomingReport> batch = {
      digest_only("batch-a", "9b000000-0000-4000-8000-000000000011", "beef20", t),  // current
      digest_only("batch-b", "9b000000-0000-4000-8000-000000000012", "beef99", t),  // other
      digest_only("batch-x", "9b000000-0000-4000-8000-000000000013", "beef20", t),  // no host
      digest_only(odd_name, c.report.report_id, "beef22", t),                       // duplicate
      digest_only("batch-d", "9b000000-0000-4000-8000-000000000015", "beef23",
                  t - absl::Minutes(5)),  // collected before the current state
  };
  auto saved = hosts.StoreDigestReports(batch);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_EQ(saved->size(), batch.size());
  const auto& answers = *saved;
  EXPECT_FALSE(answers[0].saved.unknown_digest);
  EXPECT_EQ(answers[0].saved.outcome, SaveOutcome::kUnchanged);
  EXPECT_TRUE(answers[0].saved.current);
  EXPECT_TRUE(answers[1].saved.unknown_digest);
  EXPECT_TRUE(answers[2].saved.unknown_digest);
  EXPECT_FALSE(answers[3].saved.unknown_digest);
  EXPECT_EQ(answers[3].saved.outcome, SaveOutcome::kDuplicate);
  EXPECT_FALSE(answers[4].saved.unknown_digest);
  EXPECT_EQ(answers[4].saved.outcome, SaveOutcome::kUnchanged);
  EXPECT_TRUE(answers[4].saved.current);  // it says what the current state says

  auto last_report = [&](const std::string& host) {
    auto h = hosts.GetHost(host);
    EXPECT_TRUE(h.ok() && h->has_value()) << host;
    return h.ok() && h->has_value() ? (**h).last_report_id : std::string();
  };
  EXPECT_EQ(last_report("batch-a"), batch[0].report_id);
  EXPECT_EQ(last_report("batch-b"), b.report.report_id);
  EXPECT_EQ(last_report(odd_name), c.report.report_id);
  EXPECT_EQ(last_report("batch-d"), d.report.report_id);  // history only
  auto x = hosts.GetHost("batch-x");
  ASSERT_TRUE(x.ok());
  EXPECT_FALSE(x->has_value());

  // The same batch again: each stored one is now a duplicate.
  saved = hosts.StoreDigestReports(batch);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ((*saved)[0].saved.outcome, SaveOutcome::kDuplicate);
  EXPECT_EQ((*saved)[4].saved.outcome, SaveOutcome::kDuplicate);
  EXPECT_TRUE((*saved)[1].saved.unknown_digest);
}

// Reports with a posture stored together answer each as StoreReport would answer it alone,
// and leave each host as it would.
TEST_P(FleetStoreConformanceTest, PostureBatchAnswersEachReportAsAloneWould) {
  HostStore& hosts = *under_test_.hosts;
  const absl::Time t = kNow - absl::Hours(1);
  Sent a = Report("pbatch-a", "9c000000-0000-4000-8000-000000000001", "beef30", "a", t);
  Sent b = Report("pbatch-b", "9c000000-0000-4000-8000-000000000002", "beef31", "b", t);
  Sent c = Report("pbatch-c", "9c000000-0000-4000-8000-000000000003", "beef32", "c", t);
  Sent d = Report("pbatch-d", "9c000000-0000-4000-8000-000000000004", "beef33", "d", t);
  for (Sent* s : {&a, &b, &c, &d}) ASSERT_EQ(Store(hosts, *s)->outcome, SaveOutcome::kStored);

  // Quotes, backslashes, braces and commas in a new host's name, listed first so that the batch
  // is not in name order.
  const std::string odd_name = "pbatch-x \"q\" \\ {x},y";
  std::vector<Sent> sent = {
      Report(odd_name, "9c000000-0000-4000-8000-000000000015", "beef35", "x", t),  // new host
      Report("pbatch-a", "9c000000-0000-4000-8000-000000000011", "beef40", "a2",
             t + absl::Minutes(1)),  // changed
      Report("pbatch-b", "9c000000-0000-4000-8000-000000000012", "beef31", "b",
             t + absl::Minutes(1)),                              // unchanged
      Report("pbatch-c", c.report.report_id, "beef32", "c", t),  // duplicate
      Report("pbatch-d", "9c000000-0000-4000-8000-000000000014", "beef44", "d0",
             t - absl::Minutes(5)),  // collected before the current state: history only
  };
  std::vector<IncomingReport> batch;
  for (Sent& s : sent) {
    s.report.posture = &s.posture;
    batch.push_back(s.report);
  }
  auto saved = hosts.StoreReports(batch);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_EQ(saved->size(), batch.size());
  const auto& answers = *saved;
  EXPECT_EQ(answers[0].outcome, SaveOutcome::kStored);
  EXPECT_TRUE(answers[0].current);
  EXPECT_EQ(answers[1].outcome, SaveOutcome::kStored);
  EXPECT_TRUE(answers[1].current);
  EXPECT_EQ(answers[2].outcome, SaveOutcome::kUnchanged);
  EXPECT_TRUE(answers[2].current);
  EXPECT_EQ(answers[3].outcome, SaveOutcome::kDuplicate);
  EXPECT_TRUE(answers[3].current);
  EXPECT_EQ(answers[4].outcome, SaveOutcome::kStored);
  EXPECT_FALSE(answers[4].current);

  auto host = [&](const std::string& name) {
    auto h = hosts.GetHost(name);
    EXPECT_TRUE(h.ok() && h->has_value()) << name;
    return h.ok() && h->has_value() ? **h : HostRecord();
  };
  const HostRecord x = host(odd_name);
  EXPECT_EQ(x.last_report_id, sent[0].report.report_id);
  ASSERT_EQ(x.posture.shares_size(), 1);
  EXPECT_EQ(x.posture.shares(0).name(), "x");
  const HostRecord ha = host("pbatch-a");
  EXPECT_EQ(ha.last_report_id, sent[1].report.report_id);
  EXPECT_EQ(ha.posture_digest, "beef40");
  ASSERT_EQ(ha.posture.shares_size(), 1);
  EXPECT_EQ(ha.posture.shares(0).name(), "a2");
  EXPECT_EQ(host("pbatch-b").last_report_id, sent[2].report.report_id);
  EXPECT_EQ(host("pbatch-c").last_report_id, c.report.report_id);
  const HostRecord hd = host("pbatch-d");
  EXPECT_EQ(hd.last_report_id, d.report.report_id);  // history only
  ASSERT_EQ(hd.posture.shares_size(), 1);
  EXPECT_EQ(hd.posture.shares(0).name(), "d");

  // The same batch again: each is now a duplicate, and nothing moves.
  saved = hosts.StoreReports(batch);
  ASSERT_TRUE(saved.ok()) << saved.status();
  for (const SavedReport& r : *saved) EXPECT_EQ(r.outcome, SaveOutcome::kDuplicate);
  EXPECT_EQ(host("pbatch-a").posture.shares(0).name(), "a2");
}

}  // namespace smbfleet::collector::store_testing

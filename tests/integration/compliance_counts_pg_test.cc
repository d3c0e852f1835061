// The compliance counts kept by migration 0015 against a recount of the stored results and
// transitions, after every kind of write that changes them: new hosts, changed results, waivers
// coming and going, a policy version change, trusted labels, a host deleted, and two collectors
// (two stores, two connections each) saving at once. And a page of evaluations written at once
// (SaveEvaluations) against the same evaluations written host by host, row for row.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/ingest/digest.h"
#include "collector/ingest/pipeline.h"
#include "collector/store/postgres/pg_store.h"
#include "gtest/gtest.h"
#include "policy/evaluate.h"
#include "policy/policy.h"
#include "policy/transitions.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

using ::smbfleet::testing::CreateTestDatabase;
using ::smbfleet::testing::QueryValue;

smbfleet::policy::Policy Baseline(const std::string& version) {
  std::string path = std::string(SMBFLEET_SOURCE_DIR) + "/policy/policies/baseline.yaml";
  FILE* f = std::fopen(path.c_str(), "r");
  std::string text;
  char buf[4096];
  size_t n;
  while (f != nullptr && (n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  if (f != nullptr) std::fclose(f);
  auto p = smbfleet::policy::ParsePolicy(path, text);
  EXPECT_TRUE(p.ok()) << p.status();
  p->version = version;
  return *p;
}

// A posture that differs with `variant`: SMB1, signing, shares and their names.
smbfleet::v1::Posture PostureOf(const std::string& host, int variant) {
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname(host);
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  p.mutable_server()->set_smb1_enabled(variant % 2 == 1);
  p.mutable_server()->set_require_signing(variant % 3 == 0);
  for (int i = 0; i < variant % 4; ++i) {
    auto* share = p.add_shares();
    share->set_name(i == 0 ? "finance" : absl::StrCat("data", i));
    share->set_path(absl::StrCat("/srv/", share->name()));
  }
  return p;
}

// Rows in one query's answer and not the other's, either way (0: the same rows).
std::string Difference(const std::string& dsn, const std::string& a, const std::string& b) {
  return QueryValue(dsn, absl::StrCat("SELECT count(*) FROM ((", a, " EXCEPT ALL ", b,
                                      ") UNION ALL (", b, " EXCEPT ALL ", a, ")) d"));
}

// What migration 0002's views computed from every current result.
constexpr char kRecountByRule[] = R"sql(
  SELECT policy_name, rule_id,
         count(*) FILTER (WHERE status = 'COMPLIANT') AS compliant,
         count(*) FILTER (WHERE status = 'NON_COMPLIANT') AS non_compliant,
         count(*) FILTER (WHERE status = 'WAIVED') AS waived,
         count(*) FILTER (WHERE status = 'UNKNOWN') AS unknown,
         count(*) FILTER (WHERE status = 'ERROR') AS errors,
         count(*) FILTER (WHERE status = 'NOT_APPLICABLE') AS not_applicable,
         round(100.0 * count(*) FILTER (WHERE status IN ('COMPLIANT', 'WAIVED'))
               / NULLIF(count(*) FILTER (WHERE status <> 'NOT_APPLICABLE'), 0), 2) AS compliant_pct
  FROM compliance_current GROUP BY policy_name, rule_id)sql";
constexpr char kRecountByClassification[] = R"sql(
  SELECT policy_name, classification,
         count(*) FILTER (WHERE status = 'COMPLIANT') AS compliant,
         count(*) FILTER (WHERE status = 'NON_COMPLIANT') AS non_compliant,
         count(*) FILTER (WHERE status = 'WAIVED') AS waived,
         round(100.0 * count(*) FILTER (WHERE status IN ('COMPLIANT', 'WAIVED'))
               / NULLIF(count(*) FILTER (WHERE status <> 'NOT_APPLICABLE'), 0), 2) AS compliant_pct
  FROM compliance_current WHERE share_name <> '' GROUP BY policy_name, classification)sql";
constexpr char kRecountByLabel[] = R"sql(
  SELECT c.policy_name, l.key, l.value,
         count(*) FILTER (WHERE c.status = 'COMPLIANT') AS compliant,
         count(*) FILTER (WHERE c.status = 'NON_COMPLIANT') AS non_compliant,
         count(*) FILTER (WHERE c.status = 'WAIVED') AS waived,
         round(100.0 * count(*) FILTER (WHERE c.status IN ('COMPLIANT', 'WAIVED'))
               / NULLIF(count(*) FILTER (WHERE c.status <> 'NOT_APPLICABLE'), 0), 2)
  FROM compliance_current c CROSS JOIN LATERAL jsonb_each_text(c.labels) l
  GROUP BY c.policy_name, l.key, l.value)sql";
constexpr char kRecountByHost[] = R"sql(
  SELECT host_id, policy_name, policy_version, status, count(*)
  FROM compliance_results GROUP BY 1, 2, 3, 4)sql";
constexpr char kRecountFailing[] = R"sql(
  SELECT host_id, policy_name, policy_version, min(failing_since), count(DISTINCT rule_id)
  FROM compliance_failing_since GROUP BY 1, 2, 3)sql";
constexpr char kKeptFailing[] = R"sql(
  SELECT f.host_id, f.policy_name, f.policy_version, f.since, f.rules
  FROM compliance_host_failing f JOIN policy_versions v
    ON v.policy_name = f.policy_name AND v.version = f.policy_version AND v.active)sql";
// Each day's status of every key, from its transitions (0002's compliance_daily_status), and the
// same from the kept day changes: the running sum up to each day.
constexpr char kRecountDaily[] = R"sql(
  SELECT (day AT TIME ZONE 'UTC')::date, policy_name, status, count(*)
  FROM compliance_daily_status GROUP BY 1, 2, 3)sql";
constexpr char kKeptDaily[] = R"sql(
  SELECT d.day, s.policy_name, s.status, s.n FROM
    (SELECT DISTINCT (day AT TIME ZONE 'UTC')::date AS day FROM compliance_daily_status) d
    CROSS JOIN LATERAL (
      SELECT policy_name, status, sum(n)::bigint AS n FROM compliance_trend_counts
      WHERE day <= d.day GROUP BY 1, 2 HAVING sum(n) <> 0) s)sql";

// Every row that writing evaluations leaves, by host name, and the kept counts summed over their
// slots, one line a row: what writing the same evaluations host by host or as a page must leave
// alike. NULL and "" differ (`ROW(...)::text`).
std::string Dump(const std::string& dsn) {
  const char* const kTables[] = {
      R"sql(SELECT (h.name, r.policy_name, r.policy_version, r.rule_id, r.share_name,
                    r.classification, r.status, r.severity, r.message, r.evidence, r.waiver_id,
                    r.cis_ws2022, r.cis_ws2025, r.evaluated_at)::text AS x,
                    h.name || r.rule_id || r.share_name AS o
            FROM compliance_results r JOIN hosts h ON h.id = r.host_id)sql",
      R"sql(SELECT (h.name, t.policy_name, t.policy_version, t.rule_id, t.share_name,
                    t.classification, t.from_status, t.to_status, t.at, t.labels)::text AS x,
                    h.name || lpad(rank() OVER (PARTITION BY h.id ORDER BY t.id)::text, 6, '0')
                      AS o
            FROM compliance_transitions t JOIN hosts h ON h.id = t.host_id)sql",
      R"sql(SELECT (h.name, s.name, s.classification, s.classification_rule)::text AS x,
                    h.name || s.name AS o
            FROM host_shares s JOIN hosts h ON h.id = s.host_id)sql",
      "SELECT (name, evaluation_key)::text AS x, name AS o FROM hosts",
      R"sql(SELECT c::text AS x, c::text AS o FROM (
              SELECT policy_name, policy_version, rule_id, on_share, classification, status,
                     sum(n) AS n
              FROM compliance_counts GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0) c)sql",
      R"sql(SELECT (h.name, c.policy_name, c.policy_version, c.status, c.n)::text AS x,
                    h.name || c.policy_version || c.status AS o
            FROM compliance_host_counts c JOIN hosts h ON h.id = c.host_id)sql",
      R"sql(SELECT (h.name, f.policy_name, f.policy_version, f.since, f.rules)::text AS x,
                    h.name || f.policy_version AS o
            FROM compliance_host_failing f JOIN hosts h ON h.id = f.host_id)sql",
      R"sql(SELECT c::text AS x, c::text AS o FROM (
              SELECT policy_name, day, status, sum(n) AS n FROM compliance_trend_counts
              GROUP BY 1, 2, 3 HAVING sum(n) <> 0) c)sql",
  };
  std::string out;
  for (const char* table : kTables) {
    absl::StrAppend(&out,
                    QueryValue(dsn, absl::StrCat("SELECT COALESCE(string_agg(x, E'\\n' "
                                                 "ORDER BY o COLLATE \"C\"), '') FROM (",
                                                 table, ") d")),
                    "\n--\n");
  }
  return out;
}

class ComplianceCountsPgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    for (auto* s : {&a_, &b_}) {
      auto stores = NewPgStore(dsn_, 2);
      ASSERT_TRUE(stores.ok()) << stores.status();
      *s = *std::move(stores);
    }
  }

  // Stores a report of `host` and records its evaluation under `policy`.
  void Report(Stores& stores, const std::string& host, int variant,
              const smbfleet::policy::Policy& policy,
              const std::vector<smbfleet::v1::Waiver>& waivers, absl::Time at) {
    auto posture = PostureOf(host, variant);
    IncomingReport r;
    r.host = host;
    r.report_id = absl::StrCat("00000000-0000-4000-8000-", absl::Dec(++reports_, absl::kZeroPad12));
    r.reason = "test";
    r.posture = &posture;
    r.digest = PostureDigest(posture);
    r.size_bytes = posture.ByteSizeLong();
    r.received_at = absl::Now();
    ASSERT_TRUE(stores.hosts->SaveReport(r).ok()) << host;
    auto eval = smbfleet::policy::EvaluateHost(policy, posture, waivers, at);
    auto n = RecordEvaluation(*stores.compliance, host, eval);
    ASSERT_TRUE(n.ok()) << host << ": " << n.status();
  }

  void ExpectKeptEqualsRecount(const std::string& when) {
    EXPECT_EQ(Difference(dsn_, kRecountByRule, "SELECT * FROM compliance_now_by_rule"), "0")
        << when;
    EXPECT_EQ(Difference(dsn_, kRecountByClassification,
                         "SELECT * FROM compliance_now_by_classification"),
              "0")
        << when;
    EXPECT_EQ(Difference(dsn_, kRecountByLabel, "SELECT * FROM compliance_now_by_label"), "0")
        << when;
    EXPECT_EQ(Difference(dsn_, kRecountByHost,
                         "SELECT host_id, policy_name, policy_version, status, n "
                         "FROM compliance_host_counts"),
              "0")
        << when;
    EXPECT_EQ(Difference(dsn_, kRecountFailing, kKeptFailing), "0") << when;
    EXPECT_EQ(Difference(dsn_, kRecountDaily, kKeptDaily), "0") << when;
  }

  std::string dsn_;
  Stores a_;
  Stores b_;
  std::atomic<int> reports_{0};
};

TEST_F(ComplianceCountsPgTest, KeptCountsEqualARecountAfterMixedWrites) {
  auto v1 = Baseline("1");
  ASSERT_TRUE(a_.compliance->ActivatePolicy(v1.name, v1.version, "text").ok());
  // Days before now: the daily recount reaches up to today.
  const absl::Time t0 = absl::Now() - absl::Hours(24 * 10);
  for (int i = 0; i < 8; ++i) {
    Report(a_, absl::StrCat("fs", i), i, v1, {}, t0 + absl::Hours(i));
  }
  ExpectKeptEqualsRecount("new hosts");
  EXPECT_NE(QueryValue(dsn_, "SELECT count(*) FROM compliance_daily_status"), "0");
  EXPECT_NE(QueryValue(dsn_, "SELECT sum(non_compliant) FROM compliance_now_by_rule"), "0");

  // Changed results, on later days.
  for (int i = 0; i < 8; i += 2) {
    Report(a_, absl::StrCat("fs", i), i + 1, v1, {}, t0 + absl::Hours(30 + i));
  }
  ExpectKeptEqualsRecount("changed results");

  // A waiver for SMB1 on fs1, then its expiry (the next evaluation without it).
  QueryValue(dsn_,
             "INSERT INTO waivers (id, rule_id, host_name, justification, approved_by, "
             "created_by, created_at, expires_at) VALUES ('w1', 'smb1-server-disabled', 'fs1', "
             "'legacy scanner', "
             "'carol', 'bob', now() - interval '20 days', now() + interval '1 day') RETURNING id");
  auto waivers = a_.compliance->ActiveWaivers();
  ASSERT_TRUE(waivers.ok()) << waivers.status();
  Report(a_, "fs1", 1, v1, *waivers, t0 + absl::Hours(50));
  EXPECT_NE(QueryValue(dsn_, "SELECT sum(waived) FROM compliance_now_by_rule"), "0");
  ExpectKeptEqualsRecount("waiver added");
  Report(a_, "fs1", 1, v1, {}, t0 + absl::Hours(75));
  EXPECT_EQ(QueryValue(dsn_, "SELECT sum(waived) FROM compliance_now_by_rule"), "0");
  ExpectKeptEqualsRecount("waiver expired");

  // Labels as reported (the 0002 view) and trusted ones (the overview).
  QueryValue(dsn_,
             "UPDATE hosts SET labels = jsonb_build_object('site', CASE WHEN id % 2 = 0 THEN "
             "'paris' ELSE 'oslo' END) RETURNING id");
  ASSERT_TRUE(a_.enrollment == nullptr ||
              a_.enrollment->SetHostLabels("fs2", {{"tier", "gold"}}, "carol", absl::Now()).ok());
  ExpectKeptEqualsRecount("labels");

  // Two collectors at once, each with two connections, on interleaved hosts.
  std::vector<std::thread> writers;
  writers.reserve(4);
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      Stores& stores = w % 2 == 0 ? a_ : b_;
      for (int round = 0; round < 6; ++round) {
        for (int i = w; i < 16; i += 4) {
          Report(stores, absl::StrCat(i % 2 == 0 ? "fs" : "web", i), i + round, v1, {},
                 t0 + absl::Hours(80 + round));
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  ExpectKeptEqualsRecount("concurrent saves");

  // A new version: results of version 1 stop counting until each host is evaluated again.
  auto v2 = Baseline("2");
  ASSERT_TRUE(b_.compliance->ActivatePolicy(v2.name, v2.version, "text").ok());
  ExpectKeptEqualsRecount("version 2 active, nothing evaluated under it");
  for (int i = 0; i < 8; i += 3) {
    Report(b_, absl::StrCat("fs", i), i, v2, {}, t0 + absl::Hours(100));
  }
  EXPECT_NE(QueryValue(dsn_, "SELECT count(*) FROM compliance_now_by_rule"), "0");
  ExpectKeptEqualsRecount("some hosts under version 2");

  // A host deleted takes its results and transitions with it.
  QueryValue(dsn_, "DELETE FROM hosts WHERE name = 'fs3' RETURNING id");
  ExpectKeptEqualsRecount("host deleted");

  // The connections that wrote are closed; their counts fold into one slot, unchanged.
  a_ = Stores{};
  b_ = Stores{};
  auto c = NewPgStore(dsn_, 1);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->compliance->ActivatePolicy(v2.name, v2.version, "text").ok());
  ExpectKeptEqualsRecount("folded");
  // A closed connection's backend may take a moment to leave pg_stat_activity.
  for (int i = 0; i < 100 && QueryValue(dsn_,
                                        "SELECT count(*) FROM compliance_counts "
                                        "WHERE slot <> 0") != "0";
       ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    QueryValue(dsn_, "SELECT 1 FROM compliance_counts_fold()");
  }
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM compliance_counts WHERE slot <> 0"), "0");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM compliance_trend_counts WHERE slot <> 0"), "0");
  ExpectKeptEqualsRecount("folded, every connection closed");
}

// The same evaluations written to two databases with the same history: host by host
// (SaveEvaluation) in one, as one page (SaveEvaluations) in the other. The page has hosts with
// new, changed, unchanged and removed results, a waived result, labels, a host whose results a
// report replaced after they were read (refused in both) and a host that does not exist.
TEST_F(ComplianceCountsPgTest, APageWritesWhatEachHostWrittenAloneWrites) {
  const std::string alone_dsn = CreateTestDatabase();
  ASSERT_TRUE(ApplyMigrations(alone_dsn, BuiltinMigrations()).ok());
  auto alone_stores = NewPgStore(alone_dsn, 2);
  ASSERT_TRUE(alone_stores.ok()) << alone_stores.status();
  Stores alone = *std::move(alone_stores);

  auto v1 = Baseline("1");
  auto v2 = Baseline("2");
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()) - 86400 * 3);
  const absl::Time t1 = t0 + absl::Hours(26);
  const absl::Time t2 = t0 + absl::Hours(50);
  constexpr int kHosts = 10;
  const std::string raced = "fs5";
  const std::vector<std::pair<Stores*, std::string>> both = {{&a_, dsn_}, {&alone, alone_dsn}};
  for (const auto& [stores, dsn] : both) {
    ASSERT_TRUE(stores->compliance->ActivatePolicy(v1.name, v1.version, "text").ok());
    for (int i = 0; i < kHosts; ++i) Report(*stores, absl::StrCat("fs", i), i, v1, {}, t0);
    QueryValue(dsn,
               "UPDATE hosts SET labels = jsonb_build_object('site', CASE WHEN id % 2 = 0 THEN "
               "'paris' ELSE 'oslo' END) RETURNING id");
    QueryValue(dsn,
               "INSERT INTO waivers (id, rule_id, host_name, justification, approved_by, "
               "created_by, created_at, expires_at) VALUES ('w1', 'smb1-server-disabled', 'fs1', "
               "'legacy scanner', 'carol', 'bob', now() - interval '20 days', "
               "now() + interval '1 day') RETURNING id");
    ASSERT_TRUE(stores->compliance->ActivatePolicy(v2.name, v2.version, "text").ok());
    // Every third host's posture changed (other SMB1, signing and shares): its results change,
    // and the results of shares it no longer has are removed.
    for (int i = 0; i < kHosts; i += 3) {
      auto posture = PostureOf(absl::StrCat("fs", i), i + 1);
      IncomingReport r;
      r.host = absl::StrCat("fs", i);
      r.report_id = absl::StrCat("00000000-0000-4000-9000-", absl::Dec(i, absl::kZeroPad12));
      r.reason = "test";
      r.posture = &posture;
      r.digest = PostureDigest(posture);
      r.size_bytes = posture.ByteSizeLong();
      r.received_at = t1;
      ASSERT_TRUE(stores->hosts->SaveReport(r).ok());
    }
  }
  auto waivers = a_.compliance->ActiveWaivers();
  ASSERT_TRUE(waivers.ok()) << waivers.status();
  ASSERT_EQ(waivers->size(), 1u);

  // The page: each host's evaluation under v2 and its transitions against what is stored (the
  // two databases hold the same).
  std::vector<smbfleet::v1::HostEvaluation> evaluations;
  evaluations.reserve(kHosts + 1);
  std::vector<EvaluationWrite> writes;
  for (int i = 0; i < kHosts + 1; ++i) {
    const std::string host = absl::StrCat("fs", i);  // fs10 does not exist
    const int variant = i % 3 == 0 ? i + 1 : i;
    evaluations.push_back(
        smbfleet::policy::EvaluateHost(v2, PostureOf(host, variant), *waivers, t1));
    auto stored = a_.compliance->CurrentResults(host, v2.name);
    ASSERT_TRUE(stored.ok()) << stored.status();
    std::vector<smbfleet::policy::StoredResult> previous;
    for (const ResultStatus& r : *stored) {
      previous.push_back({r.rule_id, r.share, r.policy_version, r.status});
    }
    EvaluationWrite& w = writes.emplace_back();
    w.host = host;
    w.evaluation = &evaluations.back();
    w.transitions = smbfleet::policy::ComputeTransitions(previous, evaluations.back());
    w.evaluation_key = absl::StrCat("key-2-", host);
    auto key = a_.compliance->EvaluationKey(host);
    ASSERT_TRUE(key.ok()) << key.status();
    w.expected_key = *key;
  }
  // A report of fs5 evaluated after the page was read, in both.
  for (Stores* stores : {&a_, &alone}) {
    auto report = smbfleet::policy::EvaluateHost(v2, PostureOf(raced, 7), *waivers, t2);
    ASSERT_TRUE(RecordEvaluation(*stores->compliance, raced, report, "key-report").ok());
  }

  std::vector<absl::StatusCode> alone_codes;
  alone_codes.reserve(writes.size());
  for (const EvaluationWrite& w : writes) {
    alone_codes.push_back(alone.compliance->SaveEvaluation(w).code());
  }
  auto paged = a_.compliance->SaveEvaluations(writes);
  ASSERT_TRUE(paged.ok()) << paged.status();
  std::vector<absl::StatusCode> paged_codes;
  paged_codes.reserve(paged->size());
  for (const absl::Status& s : *paged) paged_codes.push_back(s.code());
  EXPECT_EQ(paged_codes, alone_codes);
  EXPECT_EQ(paged_codes[5], absl::StatusCode::kAborted);
  EXPECT_EQ(paged_codes[kHosts], absl::StatusCode::kNotFound);
  EXPECT_EQ(std::count(paged_codes.begin(), paged_codes.end(), absl::StatusCode::kOk), kHosts - 1);

  const std::string dump = Dump(dsn_);
  EXPECT_EQ(dump, Dump(alone_dsn));
  // What the page had to write is in it: removed shares' results, a waiver, the raced report.
  EXPECT_NE(QueryValue(dsn_, absl::StrCat("SELECT count(*) FROM compliance_transitions WHERE "
                                          "to_status IS NULL AND at = to_timestamp(",
                                          absl::ToUnixSeconds(t1), ")")),
            "0");
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT count(*) FROM compliance_results r JOIN hosts h ON h.id = "
                       "r.host_id WHERE h.name = 'fs1' AND r.status = 'WAIVED' "
                       "AND r.waiver_id = 'w1'"),
            "1");
  EXPECT_EQ(QueryValue(dsn_, "SELECT evaluation_key FROM hosts WHERE name = 'fs5'"), "key-report");
  EXPECT_EQ(QueryValue(dsn_, "SELECT evaluation_key FROM hosts WHERE name = 'fs4'"), "key-2-fs4");
  ExpectKeptEqualsRecount("a page written at once");
}

// Writing an evaluation over stored results keeps those that did not change in place, setting
// only their policy version and evaluation time (WriteEvaluations). Under a new version, hosts
// whose results are unchanged, changed in each column, removed, new and written twice: every
// row must be what writing the same evaluations into a database without stored results (every
// row inserted) leaves, and every kept count what a recount gives, trusted labels included.
TEST_F(ComplianceCountsPgTest, ResultsKeptInPlaceAreTheRowsAnInsertWrites) {
  const std::string fresh_dsn = CreateTestDatabase();
  ASSERT_TRUE(ApplyMigrations(fresh_dsn, BuiltinMigrations()).ok());
  auto fresh_stores = NewPgStore(fresh_dsn, 2);
  ASSERT_TRUE(fresh_stores.ok()) << fresh_stores.status();
  Stores fresh = *std::move(fresh_stores);

  auto v1 = Baseline("1");
  auto v2 = Baseline("2");
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()) - 86400 * 2);
  const absl::Time t1 = t0 + absl::Hours(25);
  constexpr int kHosts = 4;
  // Stored: every host evaluated under version 1 (none in `fresh`), a trusted label on two.
  ASSERT_TRUE(a_.compliance->ActivatePolicy(v1.name, v1.version, "text").ok());
  for (int i = 0; i < kHosts; ++i) Report(a_, absl::StrCat("fs", i), i + 3, v1, {}, t0);
  for (Stores* stores : {&a_, &fresh}) {
    if (stores == &fresh) {
      for (int i = 0; i < kHosts; ++i) {
        auto posture = PostureOf(absl::StrCat("fs", i), i + 3);
        IncomingReport r;
        r.host = absl::StrCat("fs", i);
        r.report_id = absl::StrCat("00000000-0000-4000-a000-", absl::Dec(i, absl::kZeroPad12));
        r.reason = "test";
        r.posture = &posture;
        r.digest = PostureDigest(posture);
        r.size_bytes = posture.ByteSizeLong();
        r.received_at = t0;
        ASSERT_TRUE(stores->hosts->SaveReport(r).ok());
      }
    }
    for (const char* host : {"fs1", "fs2"}) {
      ASSERT_TRUE(stores->enrollment == nullptr ||
                  stores->enrollment->SetHostLabels(host, {{"tier", "gold"}}, "carol", t0).ok());
    }
    ASSERT_TRUE(stores->compliance->ActivatePolicy(v2.name, v2.version, "text").ok());
  }
  ASSERT_NE(QueryValue(dsn_, "SELECT count(*) FROM compliance_results"), "0");

  // Version 2's evaluations: fs0 as before but for the version; fs1, fs2 and fs3 with results
  // changed one column each, one removed, one new and one written twice (the first counts).
  std::vector<smbfleet::v1::HostEvaluation> evaluations;
  evaluations.reserve(kHosts);
  for (int i = 0; i < kHosts; ++i) {
    auto& eval = evaluations.emplace_back(
        smbfleet::policy::EvaluateHost(v2, PostureOf(absl::StrCat("fs", i), i + 3), {}, t1));
    if (i == 0) continue;
    ASSERT_GE(eval.results_size(), 10);
    auto* results = eval.mutable_results();
    for (int k = 0; k < results->size(); ++k) {
      auto& r = (*results)[k];
      switch ((k + i) % 9) {
        case 1:
          r.set_status(r.status() == smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT
                           ? smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT
                           : smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
          break;
        case 2:
          r.set_message(r.message() + " (changed)");
          break;
        case 3:
          r.add_evidence()->set_field("added");
          break;
        case 4:
          r.set_waiver_id("w9");
          break;
        case 5:
          r.set_severity(smbfleet::v1::SEVERITY_LOW);
          break;
        case 6:
          r.set_classification("changed");
          break;
        case 7:
          r.mutable_cis()->set_ws2025("9.9.9");
          break;
        default:
          break;  // unchanged
      }
    }
    smbfleet::v1::RuleResult added = (*results)[0];
    added.set_rule_id("added-rule");
    smbfleet::v1::RuleResult twice = (*results)[1];
    twice.set_message("the second of two, not stored");
    results->DeleteSubrange(results->size() - 1, 1);  // removed
    *results->Add() = added;
    *results->Add() = twice;
  }

  for (Stores* stores : {&a_, &fresh}) {
    std::vector<EvaluationWrite> page;
    for (int i = 0; i < kHosts; ++i) {
      const std::string host = absl::StrCat("fs", i);
      auto stored = stores->compliance->CurrentResults(host, v2.name);
      ASSERT_TRUE(stored.ok()) << stored.status();
      std::vector<smbfleet::policy::StoredResult> previous;
      for (const ResultStatus& r : *stored) {
        previous.push_back({r.rule_id, r.share, r.policy_version, r.status});
      }
      auto key = stores->compliance->EvaluationKey(host);
      ASSERT_TRUE(key.ok()) << key.status();
      EvaluationWrite w;
      w.host = host;
      w.evaluation = &evaluations[i];
      w.transitions = smbfleet::policy::ComputeTransitions(previous, evaluations[i]);
      w.evaluation_key = absl::StrCat("key-2-", host);
      w.expected_key = *key;
      if (i == kHosts - 1) {  // one host as a report writes it, the others as a page
        ASSERT_TRUE(stores->compliance->SaveEvaluation(w).ok()) << host;
      } else {
        page.push_back(std::move(w));
      }
    }
    auto saved = stores->compliance->SaveEvaluations(page);
    ASSERT_TRUE(saved.ok()) << saved.status();
    for (const absl::Status& s : *saved) EXPECT_TRUE(s.ok()) << s;
  }

  constexpr char kResults[] = R"sql(
    SELECT COALESCE(string_agg(x, E'\n' ORDER BY x COLLATE "C"), '') FROM (
      SELECT (h.name, r.policy_name, r.policy_version, r.rule_id, r.share_name,
              r.classification, r.status, r.severity, r.message, r.evidence, r.waiver_id,
              r.cis_ws2022, r.cis_ws2025, r.evaluated_at)::text AS x
      FROM compliance_results r JOIN hosts h ON h.id = r.host_id) d)sql";
  const std::string rows = QueryValue(dsn_, kResults);
  EXPECT_EQ(rows, QueryValue(fresh_dsn, kResults));
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM compliance_results WHERE policy_version <> '2'"),
            "0");
  EXPECT_NE(rows.find("added-rule"), std::string::npos);
  EXPECT_EQ(rows.find("the second of two"), std::string::npos);
  ExpectKeptEqualsRecount("results kept in place under a new version");
  // The trusted labels' counts (migration 0017) against a recount.
  EXPECT_EQ(Difference(dsn_,
                       "SELECT r.policy_name, r.policy_version, l.key, l.value, r.status, "
                       "count(*) FROM compliance_results r JOIN hosts h ON h.id = r.host_id "
                       "JOIN host_labels l ON l.host = h.name GROUP BY 1, 2, 3, 4, 5",
                       "SELECT policy_name, policy_version, key, value, status, sum(n) "
                       "FROM compliance_label_counts GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0"),
            "0");
  // The counts are those of the database where every row was inserted.
  for (const char* counts :
       {"SELECT COALESCE(string_agg(c::text, E'\\n' ORDER BY c::text), '') FROM (SELECT "
        "policy_name, policy_version, rule_id, on_share, classification, status, sum(n) FROM "
        "compliance_counts GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0) c",
        "SELECT COALESCE(string_agg(c::text, E'\\n' ORDER BY c::text), '') FROM (SELECT h.name, "
        "c.policy_name, c.policy_version, c.status, c.n FROM compliance_host_counts c JOIN hosts "
        "h ON h.id = c.host_id) c"}) {
    EXPECT_EQ(QueryValue(dsn_, counts), QueryValue(fresh_dsn, counts)) << counts;
  }
}

// Each result names a loaded policy version, checked once per statement since migration 0021 (a
// foreign key before): a result of a version never loaded is refused, and so is deleting or
// renaming a version that results still name; a version without results may go.
TEST_F(ComplianceCountsPgTest, AResultNamesALoadedPolicyVersion) {
  auto v1 = Baseline("1");
  ASSERT_TRUE(a_.compliance->ActivatePolicy(v1.name, v1.version, "text").ok());
  Report(a_, "fs0", 1, v1, {}, absl::Now());
  EXPECT_THROW(QueryValue(dsn_, absl::StrCat("INSERT INTO compliance_results (host_id, "
                                             "policy_name, policy_version, rule_id, status, "
                                             "evaluated_at) SELECT id, '",
                                             v1.name,
                                             "', 'never', 'x', 'COMPLIANT', now() FROM hosts "
                                             "RETURNING 1")),
               pqxx::foreign_key_violation);
  EXPECT_THROW(
      QueryValue(dsn_, "UPDATE compliance_results SET policy_version = 'never' RETURNING 1"),
      pqxx::foreign_key_violation);
  EXPECT_THROW(QueryValue(dsn_, "DELETE FROM policy_versions RETURNING 1"),
               pqxx::foreign_key_violation);
  EXPECT_THROW(QueryValue(dsn_, "UPDATE policy_versions SET version = 'renamed' RETURNING 1"),
               pqxx::foreign_key_violation);
  ASSERT_TRUE(a_.compliance->ActivatePolicy(v1.name, "2", "text").ok());
  EXPECT_EQ(QueryValue(dsn_,
                       "WITH d AS (DELETE FROM policy_versions WHERE version = '2' RETURNING 1) "
                       "SELECT count(*) FROM d"),
            "1");
  EXPECT_NE(QueryValue(dsn_, "SELECT count(*) FROM compliance_results"), "0");
}

}  // namespace
}  // namespace smbfleet::collector

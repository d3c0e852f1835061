// The count of hosts kept by migration 0018 and the hosts failing longest read in the order of
// its index, against a recount of hosts and of the failing results (the queries the overview
// and host search ran before), after hosts added by reports and in bulk, an insert rolled
// back, hosts deleted one by one and in bulk, two collectors writing at once, a fold and a
// truncation; and the figures 0018 fills in for a database written before it.
#include <atomic>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/ingest/digest.h"
#include "collector/ingest/pipeline.h"
#include "collector/store/postgres/migrations.h"
#include "collector/store/postgres/pg_store.h"
#include "gtest/gtest.h"
#include "policy/evaluate.h"
#include "policy/policy.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using ::smbfleet::testing::CreateTestDatabase;
using ::smbfleet::testing::QueryValue;

constexpr char kPolicy[] = R"yaml(
apiVersion: smbfleet/policy/v1
name: counts
version: "1"
rules:
  - id: smb1-server-disabled
    title: SMB1 server protocol is disabled
    severity: critical
    expect:
      server.smb1Enabled: false
  - id: signing-required
    title: Signing is required
    severity: high
    expect:
      server.requireSigning: true
)yaml";

// The hosts failing longest as the overview read them before 0018: from every failing result
// of the active version, joined with the hosts and sorted, ties on `since` by name.
std::string ScanFailingLongest(const std::string& dsn, uint32_t top) {
  return QueryValue(dsn, absl::StrCat(R"sql(
    SELECT COALESCE(string_agg(host || '=' || rules, ';' ORDER BY since, host COLLATE "C"), '')
    FROM (SELECT f.host, min(f.failing_since) AS since, count(DISTINCT f.rule_id) AS rules
          FROM compliance_failing_since f JOIN policy_versions v
            ON v.policy_name = f.policy_name AND v.version = f.policy_version AND v.active
          GROUP BY f.host ORDER BY min(f.failing_since), f.host COLLATE "C" LIMIT )sql",
                                      top, ") x"));
}

class HostCountsPgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    dsn_ = CreateTestDatabase();
    policy_ = smbfleet::policy::ParsePolicy("counts.yaml", kPolicy);
    ASSERT_TRUE(policy_.ok()) << policy_.status();
  }

  void OpenStores() {
    for (auto* s : {&a_, &b_}) {
      auto stores = NewPgStore(dsn_, 2);
      ASSERT_TRUE(stores.ok()) << stores.status();
      *s = *std::move(stores);
    }
  }

  // Stores a report of `host` and records its evaluation at `evaluated`: hosts evaluated at
  // one time and failing fail since that time, a tie broken by their names.
  void Report(Stores& stores, const std::string& host, int variant, absl::Time evaluated) {
    v1::Posture posture;
    posture.mutable_host()->set_hostname(host);
    posture.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
    posture.mutable_server()->set_smb1_enabled(variant % 2 == 1);
    posture.mutable_server()->set_require_signing(variant % 3 != 0);
    posture.mutable_collected_at()->set_seconds(absl::ToUnixSeconds(evaluated));
    IncomingReport r;
    r.host = host;
    r.report_id = absl::StrCat("00000000-0000-4000-8000-", absl::Dec(++reports_, absl::kZeroPad12));
    r.reason = "test";
    r.posture = &posture;
    r.digest = PostureDigest(posture);
    r.size_bytes = posture.ByteSizeLong();
    r.received_at = absl::Now();
    auto saved = stores.hosts->SaveReport(r);
    ASSERT_TRUE(saved.ok()) << host << ": " << saved.status();
    auto eval = smbfleet::policy::EvaluateHost(*policy_, posture, {}, evaluated);
    auto n = RecordEvaluation(*stores.compliance, host, eval);
    ASSERT_TRUE(n.ok()) << host << ": " << n.status();
  }

  // The kept count, the overview's and host search's figures against a recount.
  void ExpectKeptEqualsScan(const std::string& when) {
    const std::string hosts = QueryValue(dsn_, "SELECT count(*) FROM hosts");
    EXPECT_EQ(QueryValue(dsn_, "SELECT COALESCE(sum(n), 0) FROM host_counts"), hosts) << when;
    EXPECT_EQ(QueryValue(dsn_,
                         "SELECT count(*) FROM compliance_host_failing f JOIN hosts h "
                         "ON h.id = f.host_id WHERE f.host_name IS DISTINCT FROM h.name"),
              "0")
        << when;
    for (uint32_t top : {3u, 100u}) {
      OverviewQuery q;
      q.top = top;
      q.trend_days = 1;
      q.now = absl::Now();
      q.stale_before = q.now - absl::Hours(1);
      auto o = a_.compliance->GetFleetOverview(q);
      ASSERT_TRUE(o.ok()) << o.status();
      EXPECT_EQ(absl::StrCat(o->hosts()), hosts) << when;
      std::string failing;
      for (const auto& h : o->failing_longest()) {
        absl::StrAppend(&failing, failing.empty() ? "" : ";", h.name(), "=", h.count());
      }
      EXPECT_EQ(failing, ScanFailingLongest(dsn_, top)) << when << ", top " << top;
    }
    HostQuery all;
    all.limit = 5;
    auto page = b_.hosts->FindHosts(all);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(absl::StrCat(page->total), hosts) << when;
    HostQuery some = all;
    some.query = "S-1";
    page = b_.hosts->FindHosts(some);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(absl::StrCat(page->total),
              QueryValue(dsn_, "SELECT count(*) FROM hosts WHERE name LIKE '%s-1%'"))
        << when;
  }

  std::string dsn_;
  absl::StatusOr<smbfleet::policy::Policy> policy_;
  Stores a_;
  Stores b_;
  std::atomic<int> reports_{0};
};

TEST_F(HostCountsPgTest, KeptCountAndFailingOrderEqualARecountAfterMixedWrites) {
  ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
  OpenStores();
  ASSERT_TRUE(a_.compliance->ActivatePolicy(policy_->name, policy_->version, "text").ok());
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now())) - absl::Hours(24);

  // Hosts by reports, the failing ones evaluated at one time: `since` ties, broken by name.
  for (int i = 0; i < 12; ++i) Report(a_, absl::StrCat("fs-", i), i, t0);
  ExpectKeptEqualsScan("hosts reported");
  EXPECT_NE(QueryValue(dsn_, "SELECT count(*) FROM compliance_host_failing"), "0");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(DISTINCT since) FROM compliance_host_failing"), "1");

  // Hosts added in bulk by SQL, some failing for longer, in one statement each.
  QueryValue(dsn_, R"sql(
    WITH h AS (INSERT INTO hosts (name, first_seen, last_seen)
               SELECT 'bulk-' || i, now(), now() FROM generate_series(1, 40) i RETURNING 1)
    SELECT count(*) FROM h)sql");
  QueryValue(dsn_, R"sql(
    WITH r AS (
      INSERT INTO compliance_results (host_id, policy_name, policy_version, rule_id, status,
                                      evaluated_at)
      SELECT id, 'counts', '1', 'smb1-server-disabled',
             CASE WHEN id % 3 = 0 THEN 'NON_COMPLIANT' ELSE 'COMPLIANT' END,
             now() - interval '3 days' + (id % 2) * interval '1 hour'
      FROM hosts WHERE name LIKE 'bulk-%' RETURNING 1)
    SELECT count(*) FROM r)sql");
  ExpectKeptEqualsScan("hosts added in bulk");

  // An insert rolled back counts nothing.
  {
    pqxx::connection c(dsn_);
    pqxx::work w(c);
    w.exec(
        "INSERT INTO hosts (name, first_seen, last_seen) "
        "SELECT 'gone-' || i, now(), now() FROM generate_series(1, 7) i");
    w.abort();
  }
  ExpectKeptEqualsScan("insert rolled back");

  // Hosts deleted, one failing and one not, then in bulk.
  QueryValue(dsn_, "DELETE FROM hosts WHERE name IN ('fs-1', 'fs-2') RETURNING 1");
  QueryValue(dsn_,
             "WITH d AS (DELETE FROM hosts WHERE name LIKE 'bulk-1%' RETURNING 1) "
             "SELECT count(*) FROM d");
  ExpectKeptEqualsScan("hosts deleted");

  // Two collectors at once, each with two connections, adding hosts and reporting again, while
  // hosts are deleted.
  std::vector<std::thread> writers;
  writers.reserve(5);
  writers.emplace_back([&] {
    for (int i = 20; i < 40; ++i) {
      QueryValue(dsn_, absl::StrCat("WITH d AS (DELETE FROM hosts WHERE name = 'bulk-", i,
                                    "' RETURNING 1) SELECT count(*) FROM d"));
    }
  });
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      Stores& stores = w % 2 == 0 ? a_ : b_;
      for (int round = 0; round < 4; ++round) {
        for (int i = w; i < 24; i += 4) {
          Report(stores, absl::StrCat(round % 2 == 0 ? "fs-" : "web-", i), i + round,
                 t0 + absl::Hours(1 + round));
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  ExpectKeptEqualsScan("concurrent reports and deletions");

  // The connections that wrote are closed; their counts fold into slot 0, unchanged.
  a_ = Stores{};
  b_ = Stores{};
  OpenStores();
  ASSERT_TRUE(a_.compliance->ActivatePolicy(policy_->name, policy_->version, "text").ok());
  // A closed connection's backend may take a moment to leave pg_stat_activity.
  for (int i = 0;
       i < 100 && QueryValue(dsn_, "SELECT count(*) FROM host_counts WHERE slot <> 0") != "0";
       ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    QueryValue(dsn_, "SELECT 1 FROM host_counts_fold()");
  }
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM host_counts"), "1");
  ExpectKeptEqualsScan("folded");

  // Added again after the fold, then every host gone at once.
  Report(b_, "fs-1", 1, t0);
  ExpectKeptEqualsScan("a host after the fold");
  QueryValue(dsn_, "TRUNCATE hosts CASCADE; SELECT 1");
  ExpectKeptEqualsScan("truncated");
  Report(a_, "fs-3", 3, t0);
  ExpectKeptEqualsScan("a host after the truncation");
}

// A database written before 0018: the migration counts its hosts and names its failing rows.
TEST_F(HostCountsPgTest, MigrationFillsTheFiguresOfAnExistingDatabase) {
  std::vector<Migration> before;
  for (const Migration& m : BuiltinMigrations()) {
    if (m.version < "0018") before.push_back(m);
  }
  ASSERT_LT(before.size(), BuiltinMigrations().size());
  ASSERT_TRUE(ApplyMigrations(dsn_, before).ok());
  QueryValue(dsn_, R"sql(
    WITH h AS (INSERT INTO hosts (name, first_seen, last_seen)
               SELECT 'old-' || i, now(), now() FROM generate_series(1, 30) i RETURNING 1)
    SELECT count(*) FROM h)sql");
  QueryValue(dsn_, R"sql(
    WITH v AS (INSERT INTO policy_versions (policy_name, version, active)
               VALUES ('counts', '1', true) RETURNING 1),
    r AS (
      INSERT INTO compliance_results (host_id, policy_name, policy_version, rule_id, status,
                                      evaluated_at)
      SELECT h.id, 'counts', '1', rule,
             CASE WHEN (h.id + length(rule)) % 3 = 0 THEN 'NON_COMPLIANT' ELSE 'COMPLIANT' END,
             date_trunc('day', now()) - (h.id % 3) * interval '1 day'
      FROM hosts h CROSS JOIN (VALUES ('a'), ('bb'), ('ccc')) x(rule) RETURNING 1)
    SELECT count(*) FROM r)sql");
  ASSERT_NE(QueryValue(dsn_, "SELECT count(*) FROM compliance_host_failing"), "0");
  ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM host_counts WHERE slot = 0 AND n = 30"), "1");
  OpenStores();
  ExpectKeptEqualsScan("migrated");
}

}  // namespace
}  // namespace smbfleet::collector

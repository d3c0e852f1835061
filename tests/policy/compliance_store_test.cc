// The compliance history schema (collector/store/migrations/0002_compliance.sql) in a real
// PostgreSQL, fed by the collector's own code: evaluate, ComputeTransitions against the stored
// results, store transitions and results (collector::RecordEvaluation); then read "failing
// since" and compliance % over time from the views Grafana reads.

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "collector/ingest/pipeline.h"
#include "collector/store/postgres/pg_store.h"
#include "collector/testing/test_policy.h"
#include "gtest/gtest.h"
#include "policy/evaluate.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::policy {
namespace {

// The schema as the collector creates it.
void Migrate(const std::string& dsn) {
  auto s = collector::ApplyMigrations(dsn, collector::BuiltinMigrations());
  ASSERT_TRUE(s.ok()) << s;
}

// What the collector does after evaluating one host: transitions against the stored results,
// then the results, through its compliance store.
void Store(collector::ComplianceStore& store, const smbfleet::v1::HostEvaluation& e) {
  auto transitions = collector::RecordEvaluation(store, "fs01", e);
  ASSERT_TRUE(transitions.ok()) << transitions.status();
}

TEST(ComplianceStoreTest, HistoryGivesFailingSinceAndCompliancePerDay) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = smbfleet::testing::CreateTestDatabase();
  Migrate(dsn);
  {
    pqxx::connection c(dsn);
    pqxx::work tx(c);
    tx.exec(
        "INSERT INTO hosts (name, labels, first_seen, last_seen) VALUES "
        "('fs01', '{\"site\": \"hq\"}', now(), now())");
    tx.exec(
        "INSERT INTO policy_versions (policy_name, version, active) VALUES "
        "('baseline', '6', false), ('baseline', '7', true)");
    tx.commit();
  }
  auto stores = collector::NewPgStore(dsn, 1);
  ASSERT_TRUE(stores.ok()) << stores.status();
  Policy policy = collector::testing::TinyPolicy();
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname("fs01");
  (*p.mutable_host()->mutable_labels())["site"] = "hq";
  p.mutable_server()->set_require_signing(true);
  p.mutable_server()->set_encrypt_data(false);
  auto* hr = p.add_shares();
  hr->set_name("HR");
  hr->set_encrypt_data(true);

  // Three days ago compliant; two days ago signing was switched off; since then failing.
  absl::Time today = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()) / 86400 * 86400);
  absl::Time d3 = today - absl::Hours(72) + absl::Hours(10);
  absl::Time d2 = today - absl::Hours(48) + absl::Hours(10);
  absl::Time d1 = today - absl::Hours(24) + absl::Hours(10);
  Store(*stores->compliance, EvaluateHost(policy, p, {}, d3));
  p.mutable_server()->set_require_signing(false);
  Store(*stores->compliance, EvaluateHost(policy, p, {}, d2));
  Store(*stores->compliance, EvaluateHost(policy, p, {}, d1));

  EXPECT_EQ(smbfleet::testing::QueryValue(dsn, "SELECT count(*) FROM compliance_transitions"),
            "3");  // two first results, one change; the unchanged third evaluation adds none
  std::string since = smbfleet::testing::QueryValue(
      dsn,
      "SELECT to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') "
      "FROM compliance_failing_since WHERE rule_id = 'server-signing-required'");
  EXPECT_EQ(since, absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", d2, absl::UTCTimeZone()));

  auto pct = [&](const std::string& view, const std::string& where, absl::Time day) {
    return smbfleet::testing::QueryValue(
        dsn, absl::StrCat("SELECT compliant_pct FROM ", view, " WHERE ", where, " AND day = '",
                          absl::FormatTime("%Y-%m-%d", day, absl::UTCTimeZone()), "T00:00:00Z'"));
  };
  EXPECT_EQ(pct("compliance_daily_by_rule", "rule_id = 'server-signing-required'", d3), "100.00");
  EXPECT_EQ(pct("compliance_daily_by_rule", "rule_id = 'server-signing-required'", d2), "0.00");
  EXPECT_EQ(pct("compliance_daily_by_rule", "rule_id = 'server-signing-required'", d1), "0.00");
  EXPECT_EQ(pct("compliance_daily_by_classification", "classification = 'pii'", d2), "100.00");
  EXPECT_EQ(pct("compliance_daily_by_label", "label_key = 'site' AND label_value = 'hq'", d3),
            "100.00");
  EXPECT_EQ(pct("compliance_daily_by_label", "label_key = 'site' AND label_value = 'hq'", d2),
            "50.00");

  // Results of an inactive policy version are stale: not counted now.
  {
    pqxx::connection c(dsn);
    pqxx::work tx(c);
    // Deactivate first: at most one active version per policy at any moment.
    tx.exec("UPDATE policy_versions SET active = false WHERE version = '7'");
    tx.exec("UPDATE policy_versions SET active = true WHERE version = '6'");
    tx.commit();
  }
  EXPECT_EQ(smbfleet::testing::QueryValue(dsn, "SELECT count(*) FROM compliance_current"), "0");
}

TEST(ComplianceStoreTest, WaivedFindingsShowWhatTheWaiverHidesAndSinceWhen) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = smbfleet::testing::CreateTestDatabase();
  Migrate(dsn);
  {
    pqxx::connection c(dsn);
    pqxx::work tx(c);
    tx.exec(
        "INSERT INTO hosts (name, labels, first_seen, last_seen) VALUES "
        "('fs01', '{}', now(), now())");
    tx.exec(
        "INSERT INTO policy_versions (policy_name, version, active) VALUES "
        "('baseline', '7', true)");
    tx.commit();
  }
  auto stores = collector::NewPgStore(dsn, 1);
  ASSERT_TRUE(stores.ok()) << stores.status();
  Policy policy = collector::testing::TinyPolicy();
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname("fs01");
  p.mutable_server()->set_require_signing(false);

  smbfleet::v1::Waiver w;
  w.set_id("w-signing");
  w.set_rule_id("server-signing-required");
  w.set_host("fs01");
  w.set_state(smbfleet::v1::WAIVER_STATE_APPROVED);
  w.set_justification("legacy scanner until March");
  w.set_approved_by("bob");
  absl::Time failing = absl::FromUnixSeconds(1'780'000'000);
  w.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(failing + absl::Hours(24 * 30)));
  Store(*stores->compliance, EvaluateHost(policy, p, {}, failing));
  Store(*stores->compliance, EvaluateHost(policy, p, {w}, failing + absl::Hours(5)));

  auto failing_now = stores->compliance->ListFindings("fs01", "server-signing-required", 10);
  ASSERT_TRUE(failing_now.ok()) << failing_now.status();
  EXPECT_TRUE(failing_now->empty());  // the waiver hides it from the plain findings

  auto waived = stores->compliance->ListWaivedFindings("", "", 10);
  ASSERT_TRUE(waived.ok()) << waived.status();
  ASSERT_EQ(waived->size(), 1u);
  EXPECT_EQ((*waived)[0].host(), "fs01");
  EXPECT_EQ((*waived)[0].rule_id(), "server-signing-required");
  EXPECT_EQ((*waived)[0].waiver_id(), "w-signing");
  EXPECT_EQ((*waived)[0].failing_since().seconds(), absl::ToUnixSeconds(failing));
  auto other_host = stores->compliance->ListWaivedFindings("fs02", "", 10);
  ASSERT_TRUE(other_host.ok());
  EXPECT_TRUE(other_host->empty());
}

TEST(ComplianceStoreTest, WaiversNeedApproverExpiryAndFourEyes) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = smbfleet::testing::CreateTestDatabase();
  Migrate(dsn);
  auto insert = [&](const std::string& values) {
    try {
      pqxx::connection c(dsn);
      pqxx::work tx(c);
      tx.exec(
          absl::StrCat("INSERT INTO waivers (id, rule_id, host_name, label_key, label_value, "
                       "share_name, justification, approved_by, created_by, created_at, "
                       "expires_at) VALUES (",
                       values, ")"));
      tx.commit();
      return true;
    } catch (const pqxx::sql_error&) {
      return false;
    }
  };
  EXPECT_TRUE(
      insert("'W-1', 'server-signing-required', 'fs01', NULL, NULL, NULL, 'scanner', "
             "'ciso', 'ops', now() - interval '1 day', now() + interval '7 days'"));
  EXPECT_TRUE(
      insert("'W-2', '*', NULL, 'site', 'lab', NULL, 'lab network', 'ciso', '', "
             "now() - interval '10 days', now() - interval '1 day'"));
  EXPECT_FALSE(
      insert("'W-3', '*', 'fs01', NULL, NULL, NULL, ' ', 'ciso', '', now(), "
             "now() + interval '1 day'"));  // no justification
  EXPECT_FALSE(
      insert("'W-4', '*', 'fs01', NULL, NULL, NULL, 'x', 'ops', 'ops', now(), "
             "now() + interval '1 day'"));  // approved by its requester
  EXPECT_FALSE(
      insert("'W-5', '*', NULL, NULL, NULL, NULL, 'x', 'ciso', '', now(), "
             "now() + interval '1 day'"));  // no scope
  EXPECT_FALSE(
      insert("'W-6', '*', 'fs01', 'site', 'hq', NULL, 'x', 'ciso', '', now(), "
             "now() + interval '1 day'"));  // two scopes
  // The expired waiver drops out of the active view by itself.
  EXPECT_EQ(smbfleet::testing::QueryValue(dsn, "SELECT string_agg(id, ',') FROM waivers_active"),
            "W-1");
}

}  // namespace
}  // namespace smbfleet::policy

// The compliance history schema (collector/store/migrations/0002_compliance.sql) in a real
// PostgreSQL, fed the way the collector feeds it: evaluate, ComputeTransitions against the
// stored results, store transitions and results; then read "failing since" and compliance %
// over time from the views Grafana reads.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "policy/evaluate.h"
#include "policy/transitions.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::policy {
namespace {

using google::protobuf::util::TimeUtil;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Migrate(const std::string& dsn) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(SMBFLEET_SOURCE_DIR) +
                                                           "/collector/store/migrations")) {
    if (e.path().extension() == ".sql") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  pqxx::connection c(dsn);
  for (const auto& f : files) {
    pqxx::work tx(c);
    tx.exec(Slurp(f));
    tx.commit();
  }
}

// NULL for UNSPECIFIED, else the short status name.
std::string StatusSql(pqxx::work& tx, smbfleet::v1::ComplianceStatus s) {
  if (s == smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED) return "NULL";
  return tx.quote(std::string(StatusName(s)));
}

// What the collector does after evaluating one host.
std::vector<StoredResult> Store(const std::string& dsn, int64_t host_id,
                                const std::vector<StoredResult>& previous,
                                const smbfleet::v1::HostEvaluation& e,
                                const std::string& labels_json) {
  pqxx::connection c(dsn);
  pqxx::work tx(c);
  std::string at = tx.quote(TimeUtil::ToString(e.evaluated_at()));
  for (const auto& t : ComputeTransitions(previous, e)) {
    tx.exec(absl::StrCat(
        "INSERT INTO compliance_transitions (host_id, policy_name, policy_version, rule_id, "
        "share_name, classification, from_status, to_status, at, labels) VALUES (",
        host_id, ", ", tx.quote(e.policy_name()), ", ", tx.quote(t.policy_version()), ", ",
        tx.quote(t.rule_id()), ", ", tx.quote(t.share()), ", ", tx.quote(t.classification()), ", ",
        StatusSql(tx, t.from_status()), ", ", StatusSql(tx, t.to_status()), ", ", at, ", ",
        tx.quote(labels_json), "::jsonb)"));
  }
  tx.exec(absl::StrCat("DELETE FROM compliance_results WHERE host_id = ", host_id));
  std::vector<StoredResult> stored;
  for (const auto& r : e.results()) {
    tx.exec(absl::StrCat(
        "INSERT INTO compliance_results (host_id, policy_name, policy_version, rule_id, "
        "share_name, classification, status, severity, message, waiver_id, evaluated_at) "
        "VALUES (",
        host_id, ", ", tx.quote(e.policy_name()), ", ", tx.quote(e.policy_version()), ", ",
        tx.quote(r.rule_id()), ", ", tx.quote(r.share()), ", ", tx.quote(r.classification()), ", ",
        StatusSql(tx, r.status()), ", ", tx.quote(smbfleet::v1::Severity_Name(r.severity())), ", ",
        tx.quote(r.message()), ", ", r.waiver_id().empty() ? "NULL" : tx.quote(r.waiver_id()), ", ",
        at, ")"));
    stored.push_back({r.rule_id(), r.share(), e.policy_version(), r.status()});
  }
  tx.commit();
  return stored;
}

Policy TinyPolicy() {
  auto p = ParsePolicy("t.yaml", R"(apiVersion: smbfleet/policy/v1
name: baseline
version: "7"
classification:
  classes: [general, pii]
  default: general
  rules: [{name: hr, classification: pii, shareNames: ["hr"]}]
rules:
  - {id: server-signing-required, title: S, expect: {server.requireSigning: true}}
  - {id: pii-encrypted, title: E, shares: {classifications: [pii]},
     expect: {share.encrypted: true}}
)");
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
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
  int64_t host_id = std::stoll(smbfleet::testing::QueryValue(dsn, "SELECT id FROM hosts"));
  Policy policy = TinyPolicy();
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
  std::vector<StoredResult> stored;
  stored = Store(dsn, host_id, stored, EvaluateHost(policy, p, {}, d3), "{\"site\": \"hq\"}");
  p.mutable_server()->set_require_signing(false);
  stored = Store(dsn, host_id, stored, EvaluateHost(policy, p, {}, d2), "{\"site\": \"hq\"}");
  stored = Store(dsn, host_id, stored, EvaluateHost(policy, p, {}, d1), "{\"site\": \"hq\"}");

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

// Every panel of every Grafana dashboard (dashboards/json/*.json) against a real PostgreSQL seeded
// through the real stores with known numbers, run as the read-only role Grafana uses
// (smbfleet_readonly, through the login deploy/pg.sh creates as an administrator would): the SQL
// parses, reads only views the role may read, and answers what was seeded.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collector/ingest/digest.h"
#include "collector/ingest/pipeline.h"
#include "collector/store/postgres/pg_store.h"
#include "common/json.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

using ::google::protobuf::util::TimeUtil;
using ::smbfleet::testing::AdminDsn;
using ::smbfleet::testing::CreateTestDatabase;
using ::smbfleet::testing::QueryValue;
using ::testing::HasSubstr;
namespace v1 = ::smbfleet::v1;

// The login deploy/pg.sh creates, a member of smbfleet_readonly (dashboards/README.md).
constexpr char kGrafanaLogin[] = "user=smbfleet_grafana&password=smbfleet_grafana";

// The uid of the data source dashboards/provisioning/datasources/smbfleet.yaml provisions.
constexpr char kDataSourceUid[] = "smbfleet-postgres";

// The dashboards' time range in this test, and what Grafana's macros expand to for it.
constexpr char kFrom[] = "2026-02-28T00:00:00Z";
constexpr char kTo[] = "2026-03-03T23:59:59Z";

google::protobuf::Timestamp Ts(const std::string& rfc3339) {
  google::protobuf::Timestamp t;
  EXPECT_TRUE(TimeUtil::FromString(rfc3339, &t)) << rfc3339;
  return t;
}

// ---- the dashboards ----

struct Query {
  std::string where;  // "events.json: panel 'Events per day'"
  std::string key;    // "smbfleet-events/Events per day"
  std::string sql;
  std::string uid;
  std::string variable;   // a template variable's query: its name
  std::string all_value;  // its custom "All" value, which Grafana inserts as it is
};

void CollectPanels(const nlohmann::json& panels, const std::string& file, const std::string& uid,
                   std::vector<Query>* out) {
  for (const auto& p : panels) {
    const std::string title = p.value("title", "");
    if (p.value("type", "") == "row") {
      if (p.contains("panels")) CollectPanels(p["panels"], file, uid, out);
      continue;
    }
    const std::string where = absl::StrCat(file, ": panel '", title, "'");
    // The data source provisioning/datasources/smbfleet.yaml makes, by uid.
    EXPECT_EQ(p.value(nlohmann::json::json_pointer("/datasource/uid"), std::string()),
              kDataSourceUid)
        << where;
    size_t queries = 0;
    for (const auto& t : p.value("targets", nlohmann::json::array())) {
      if (!t.contains("rawSql") || !t["rawSql"].is_string() || t["rawSql"].empty()) continue;
      const std::string ref = t.value("refId", "A");
      out->push_back({absl::StrCat(where, " ", ref),
                      absl::StrCat(uid, "/", title, ref == "A" ? "" : "#" + ref),
                      t["rawSql"].get<std::string>(), uid, "", ""});
      ++queries;
    }
    if (queries == 0) {
      ADD_FAILURE() << where << " has no SQL (targets[].rawSql): every panel reads a view";
    }
  }
}

std::vector<Query> LoadDashboards() {
  std::vector<Query> out;
  const std::filesystem::path dir = std::filesystem::path(SMBFLEET_SOURCE_DIR) / "dashboards/json";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  EXPECT_GE(files.size(), 6u) << "dashboards in " << dir;
  std::ifstream provisioning(std::filesystem::path(SMBFLEET_SOURCE_DIR) /
                             "dashboards/provisioning/datasources/smbfleet.yaml");
  const std::string datasource((std::istreambuf_iterator<char>(provisioning)),
                               std::istreambuf_iterator<char>());
  EXPECT_NE(datasource.find(absl::StrCat("uid: ", kDataSourceUid)), std::string::npos)
      << "the provisioned data source is not the one the panels name";
  for (const auto& f : files) {
    const std::string file = f.filename().string();
    std::ifstream in(f);
    nlohmann::json board = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (board.is_discarded()) {
      ADD_FAILURE() << file << " is not valid JSON";
      continue;
    }
    const std::string uid = board.value("uid", "");
    EXPECT_FALSE(uid.empty()) << file << " has no uid";
    EXPECT_GE(board.value("schemaVersion", 0), 39) << file;
    if (!board.contains("panels") || board["panels"].empty()) {
      ADD_FAILURE() << file << " has no panels";
      continue;
    }
    CollectPanels(board["panels"], file, uid, &out);
    if (board.contains("templating")) {
      for (const auto& v : board["templating"].value("list", nlohmann::json::array())) {
        if (v.value("type", "") != "query") continue;
        std::string sql =
            v["query"].is_string() ? v["query"].get<std::string>() : v["query"].value("rawSql", "");
        const std::string name = v.value("name", "");
        out.push_back({absl::StrCat(file, ": variable $", name), absl::StrCat(uid, "/$", name), sql,
                       uid, name, v.value("allValue", "")});
      }
    }
  }
  return out;
}

// Grafana's PostgreSQL macros for [kFrom, kTo], and the template variables at "All" (a
// multi-value variable expands to its values, each quoted as Grafana quotes them).
std::string Expand(const std::string& sql, const std::map<std::string, std::string>& vars) {
  std::string out;
  size_t i = 0;
  const std::string filter = "$__timeFilter(";
  while (i < sql.size()) {
    if (sql.compare(i, filter.size(), filter) == 0) {
      size_t close = sql.find(')', i);
      std::string column = sql.substr(i + filter.size(), close - i - filter.size());
      absl::StrAppend(&out, column, " BETWEEN '", kFrom, "' AND '", kTo, "'");
      i = close + 1;
      continue;
    }
    out.push_back(sql[i++]);
  }
  std::vector<std::pair<std::string, std::string>> replacements = {
      {"$__timeFrom()", absl::StrCat("'", kFrom, "'")},
      {"$__timeTo()", absl::StrCat("'", kTo, "'")}};
  for (const auto& [name, value] : vars) replacements.emplace_back("$" + name, value);
  return absl::StrReplaceAll(out, replacements);
}

// ---- the seeded fleet ----

v1::Event MakeEvent(uint32_t id, const std::string& channel, const std::string& kind,
                    const std::string& at, uint64_t record, const std::string& client_name,
                    const std::string& client_address) {
  v1::Event e;
  e.set_event_id(id);
  e.set_channel(channel);
  e.set_kind(kind);
  *e.mutable_time() = Ts(at);
  e.set_record_id(record);
  e.set_client_name(client_name);
  e.set_client_address(client_address);
  return e;
}

void AddSession(v1::Posture* p, const std::string& id, const std::string& address,
                const std::string& name, const std::string& user, v1::Dialect dialect,
                v1::Protection signing, v1::Protection encryption) {
  auto* s = p->add_sessions();
  s->set_session_id(id);
  s->set_client_address(address);
  s->set_client_name(name);
  s->set_user(user);
  s->set_dialect(dialect);
  s->set_signing(signing);
  s->set_encryption(encryption);
}

void AddShare(v1::Posture* p, const std::string& name, std::optional<bool> encrypt) {
  auto* s = p->add_shares();
  s->set_name(name);
  s->set_path("/srv/" + name);
  if (encrypt.has_value()) s->set_encrypt_data(*encrypt);
}

v1::Posture Host(const std::string& name, v1::Platform platform, const std::string& version,
                 const std::string& site) {
  v1::Posture p;
  p.mutable_host()->set_hostname(name);
  p.mutable_host()->set_platform(platform);
  p.mutable_host()->set_agent_version(version);
  (*p.mutable_host()->mutable_labels())["site"] = site;
  return p;
}

void Save(HostStore& store, const std::string& host, const v1::Posture& p, const std::string& id,
          absl::Time received) {
  IncomingReport r;
  r.host = host;
  r.report_id = id;
  r.reason = "test";
  r.posture = &p;
  r.digest = PostureDigest(p);
  r.size_bytes = p.ByteSizeLong();
  r.received_at = received;
  auto saved = store.SaveReport(r);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_EQ(*saved, SaveOutcome::kStored) << host << " " << id;
}

struct Result {
  std::string rule;
  std::string share;
  std::string classification;
  v1::ComplianceStatus status;
};

void Evaluate(ComplianceStore& store, const std::string& host, const std::string& site,
              const std::string& at, const std::vector<Result>& results,
              const std::map<std::string, std::string>& classes) {
  v1::HostEvaluation eval;
  eval.set_hostname(host);
  eval.set_policy_name("baseline");
  eval.set_policy_version("v1");
  *eval.mutable_evaluated_at() = Ts(at);
  (*eval.mutable_labels())["site"] = site;
  for (const auto& [share, cls] : classes) {
    auto* c = eval.add_classifications();
    c->set_share(share);
    c->set_classification(cls);
    c->set_rule("classify-" + cls);
  }
  for (const auto& r : results) {
    auto* out = eval.add_results();
    out->set_rule_id(r.rule);
    out->set_share(r.share);
    out->set_classification(r.classification);
    out->set_status(r.status);
    out->set_severity(v1::SEVERITY_HIGH);
  }
  auto n = RecordEvaluation(store, host, eval);
  ASSERT_TRUE(n.ok()) << n.status();
}

v1::ChangeHost ChangeHostAt(const std::string& host, v1::HostChangeState state,
                            const std::string& dispatched, const std::string& finished,
                            const std::string& message) {
  v1::ChangeHost h;
  h.set_host(host);
  h.set_state(state);
  h.set_wave(0);
  if (!dispatched.empty()) *h.mutable_dispatched_at() = Ts(dispatched);
  if (!finished.empty()) *h.mutable_finished_at() = Ts(finished);
  h.set_message(message);
  return h;
}

class GrafanaDashboardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    ASSERT_EQ(QueryValue(dsn_,
                         "SELECT count(*) FROM pg_roles WHERE rolname IN ('smbfleet_readonly', "
                         "'smbfleet_grafana')"),
              "2")
        << "the roles an administrator creates for Grafana are missing: run through "
           "deploy/test.sh (deploy/pg.sh creates them)";
    grafana_dsn_ = absl::StrCat(dsn_, "?", kGrafanaLogin);
    auto stores = NewPgStore(dsn_, 2);
    ASSERT_TRUE(stores.ok()) << stores.status();
    stores_ = *std::move(stores);
  }

  // Three hosts, their sessions, shares and events, two days of evaluations and three changes.
  void Seed() {
    const absl::Time now = absl::Now();
    HostStore& hosts = *stores_.hosts;
    const std::string server_audit = "Microsoft-Windows-SMBServer/Audit";

    // fs01: three sessions (two unsigned, three unencrypted, two below SMB 3.0), four classified
    // shares of which two encrypt, events over two reports (one resent).
    v1::Posture fs01 = Host("fs01", v1::PLATFORM_SAMBA, "1.4.0", "paris");
    fs01.mutable_server()->set_encrypt_data(false);
    AddShare(&fs01, "conf-a", true);
    AddShare(&fs01, "conf-b", true);
    AddShare(&fs01, "conf-c", false);
    AddShare(&fs01, "pub", false);
    AddShare(&fs01, "hr", std::nullopt);
    AddSession(&fs01, "1", "10.0.0.11", "ws11", "alice", v1::DIALECT_SMB_3_1_1, v1::PROTECTION_FULL,
               v1::PROTECTION_NONE);
    AddSession(&fs01, "2", "10.0.0.12", "ws12", "bob", v1::DIALECT_SMB_2_1, v1::PROTECTION_NONE,
               v1::PROTECTION_NONE);
    AddSession(&fs01, "3", "10.0.0.13", "scanner", "carl", v1::DIALECT_SMB1, v1::PROTECTION_NONE,
               v1::PROTECTION_NONE);
    const v1::Event resent =
        MakeEvent(3021, server_audit, "client_no_signing", "2026-03-01T09:00:00Z", 101, "ws12", "");
    v1::Posture first = fs01;
    *first.add_events() = MakeEvent(1020, "Microsoft-Windows-SMBServer/Operational", "",
                                    "2026-03-01T07:00:00Z", 99, "", "");  // not a security event
    *first.add_events() =
        MakeEvent(3021, server_audit, "client_no_signing", "2026-03-01T08:00:00Z", 100, "ws12", "");
    *first.add_events() = resent;
    *first.add_events() =
        MakeEvent(3000, server_audit, "smb1_access", "2026-03-01T10:00:00Z", 102, "", "10.0.0.13");
    Save(hosts, "fs01", first, "00000000-0000-4000-8000-000000000101", now - absl::Minutes(20));
    v1::Posture second = fs01;
    *second.add_events() = resent;
    *second.add_events() =
        MakeEvent(1003, "Microsoft-Windows-SMBServer/Operational", "unencrypted_rejected",
                  "2026-03-02T11:00:00Z", 500, "ws11", "10.0.0.11");
    Save(hosts, "fs01", second, "00000000-0000-4000-8000-000000000102", now - absl::Minutes(10));

    // fs02: its server encrypts every share; one session is encrypted without a signature (not
    // unsigned); last seen three hours ago (stale).
    v1::Posture fs02 = Host("fs02", v1::PLATFORM_WINDOWS, "1.3.2", "lyon");
    fs02.mutable_server()->set_encrypt_data(true);
    AddShare(&fs02, "conf-d", false);
    AddShare(&fs02, "int-a", std::nullopt);
    AddSession(&fs02, "4", "10.0.0.21", "ws21", "dana", v1::DIALECT_SMB_3_0, v1::PROTECTION_FULL,
               v1::PROTECTION_FULL);
    AddSession(&fs02, "5", "10.0.0.22", "ws22", "erin", v1::DIALECT_SMB_3_1_1, v1::PROTECTION_NONE,
               v1::PROTECTION_FULL);
    *fs02.add_events() = MakeEvent(31998, "Microsoft-Windows-SMBClient/Audit", "server_no_signing",
                                   "2026-03-02T12:00:00Z", 7, "", "10.0.0.50");
    *fs02.add_events() = MakeEvent(3022, server_audit, "client_no_encryption",
                                   "2026-02-01T12:00:00Z", 6, "old", "");  // out of range
    Save(hosts, "fs02", fs02, "00000000-0000-4000-8000-000000000201", now - absl::Hours(3));

    // fs03: not seen for eight days.
    v1::Posture fs03 = Host("fs03", v1::PLATFORM_SAMBA, "1.3.2", "lyon");
    Save(hosts, "fs03", fs03, "00000000-0000-4000-8000-000000000301", now - absl::Hours(24 * 8));

    // Compliance: r-sign (host rule) and r-enc (share rule) on 1 and 2 March.
    ComplianceStore& compliance = *stores_.compliance;
    ASSERT_TRUE(compliance.ActivatePolicy("baseline", "v1", "text").ok());
    const auto C = v1::COMPLIANCE_STATUS_COMPLIANT;
    const auto NC = v1::COMPLIANCE_STATUS_NON_COMPLIANT;
    const auto NA = v1::COMPLIANCE_STATUS_NOT_APPLICABLE;
    const std::map<std::string, std::string> fs01_classes = {{"conf-a", "confidential"},
                                                             {"conf-b", "confidential"},
                                                             {"conf-c", "confidential"},
                                                             {"pub", "public"},
                                                             {"hr", "restricted"}};
    std::vector<Result> fs01_day1 = {{"r-sign", "", "", NC},
                                     {"r-enc", "conf-a", "confidential", C},
                                     {"r-enc", "conf-b", "confidential", C},
                                     {"r-enc", "conf-c", "confidential", NC},
                                     {"r-enc", "pub", "public", NA}};
    Evaluate(compliance, "fs01", "paris", "2026-03-01T12:00:00Z", fs01_day1, fs01_classes);
    std::vector<Result> fs01_day2 = fs01_day1;
    fs01_day2[0].status = C;
    Evaluate(compliance, "fs01", "paris", "2026-03-02T12:00:00Z", fs01_day2, fs01_classes);
    Evaluate(compliance, "fs02", "lyon", "2026-03-01T13:00:00Z",
             {{"r-sign", "", "", C},
              {"r-enc", "conf-d", "confidential", C},
              {"r-enc", "int-a", "internal", C}},
             {{"conf-d", "confidential"}, {"int-a", "internal"}});

    // Changes: one before the range (completed), one rolling out, one proposed.
    ChangeStore& changes = *stores_.changes;
    v1::Change old;
    old.set_id("CHG-0");
    old.set_state(v1::CHANGE_STATE_COMPLETED);
    old.set_proposed_by("alice");
    *old.mutable_proposed_at() = Ts("2026-01-05T09:00:00Z");
    *old.add_hosts() = ChangeHostAt("fs01", v1::HOST_CHANGE_STATE_APPLIED, "2026-01-05T10:00:00Z",
                                    "2026-01-05T10:01:00Z", "");
    ASSERT_TRUE(changes.CreateChange(old, {}).ok());
    v1::Change rolling;
    rolling.set_id("CHG-1");
    rolling.set_state(v1::CHANGE_STATE_ROLLING_OUT);
    rolling.set_rule_id("r-sign");
    rolling.set_proposed_by("alice");
    *rolling.mutable_proposed_at() = Ts("2026-03-01T09:00:00Z");
    rolling.set_approvals_required(2);
    auto* a1 = rolling.add_approvals();
    a1->set_approver("carol");
    *a1->mutable_at() = Ts("2026-03-01T10:00:00Z");
    auto* a2 = rolling.add_approvals();
    a2->set_approver("dave");
    *a2->mutable_at() = Ts("2026-03-01T10:30:00Z");
    *rolling.add_hosts() = ChangeHostAt("fs01", v1::HOST_CHANGE_STATE_APPLIED,
                                        "2026-03-01T11:00:00Z", "2026-03-01T11:05:00Z", "");
    *rolling.add_hosts() =
        ChangeHostAt("fs02", v1::HOST_CHANGE_STATE_DISPATCHED, "2026-03-01T11:00:00Z", "", "");
    *rolling.add_hosts() =
        ChangeHostAt("fs03", v1::HOST_CHANGE_STATE_FAILED, "2026-03-01T11:00:00Z",
                     "2026-03-01T11:10:00Z", "set failed");
    *rolling.add_hosts() = ChangeHostAt("fs04", v1::HOST_CHANGE_STATE_PENDING, "", "", "");
    ASSERT_TRUE(changes.CreateChange(rolling, {}).ok());
    v1::Change proposed;
    proposed.set_id("CHG-2");
    proposed.set_state(v1::CHANGE_STATE_PROPOSED);
    proposed.set_rule_id("r-enc");
    proposed.set_proposed_by("bob");
    *proposed.mutable_proposed_at() = Ts("2026-03-02T09:00:00Z");
    proposed.set_approvals_required(2);
    *proposed.add_hosts() = ChangeHostAt("fs02", v1::HOST_CHANGE_STATE_PENDING, "", "", "");
    ASSERT_TRUE(changes.CreateChange(proposed, {}).ok());
  }

  // Rows as "a|b|c", NULL as "NULL", run as smbfleet_readonly.
  std::vector<std::string> RunAsReadonly(const std::string& sql) {
    pqxx::connection c(grafana_dsn_);
    pqxx::nontransaction tx(c);
    tx.exec("SET ROLE smbfleet_readonly");
    tx.exec("SET TIME ZONE 'UTC'");
    std::vector<std::string> rows;
    for (const auto& row : tx.exec(sql)) {
      std::vector<std::string> cells;
      for (const auto& f : row) cells.push_back(f.is_null() ? "NULL" : f.as<std::string>());
      rows.push_back(absl::StrJoin(cells, "|"));
    }
    return rows;
  }

  std::string dsn_;
  std::string grafana_dsn_;
  Stores stores_;
};

// What each panel answers for the seeded fleet in [kFrom, kTo]; "*" matches any cell (times
// relative to now).
const std::map<std::string, std::vector<std::string>>& Expected() {
  static const auto* kExpected = new std::map<std::string, std::vector<std::string>>{
      // Fleet compliance.
      {"smbfleet-compliance/$policy", {"baseline"}},
      {"smbfleet-compliance/$label", {"site=lyon", "site=paris"}},
      {"smbfleet-encryption/$label", {"site=lyon", "site=paris"}},
      {"smbfleet-sessions/$label", {"site=lyon", "site=paris"}},
      {"smbfleet-events/$label", {"site=lyon", "site=paris"}},
      {"smbfleet-agents/$label", {"site=lyon", "site=paris"}},
      {"smbfleet-compliance/Compliance % per day, by rule",
       {"2026-03-01 00:00:00+00|r-enc|80.00", "2026-03-01 00:00:00+00|r-sign|50.00",
        "2026-03-02 00:00:00+00|r-enc|80.00", "2026-03-02 00:00:00+00|r-sign|100.00",
        "2026-03-03 00:00:00+00|r-enc|80.00", "2026-03-03 00:00:00+00|r-sign|100.00"}},
      {"smbfleet-compliance/Compliance % per day, by classification",
       {"2026-03-01 00:00:00+00|confidential|75.00", "2026-03-01 00:00:00+00|internal|100.00",
        "2026-03-02 00:00:00+00|confidential|75.00", "2026-03-02 00:00:00+00|internal|100.00",
        "2026-03-03 00:00:00+00|confidential|75.00", "2026-03-03 00:00:00+00|internal|100.00"}},
      {"smbfleet-compliance/Compliance % per day, by label",
       {"2026-03-01 00:00:00+00|site=lyon|100.00", "2026-03-01 00:00:00+00|site=paris|50.00",
        "2026-03-02 00:00:00+00|site=lyon|100.00", "2026-03-02 00:00:00+00|site=paris|75.00",
        "2026-03-03 00:00:00+00|site=lyon|100.00", "2026-03-03 00:00:00+00|site=paris|75.00"}},
      {"smbfleet-compliance/Hosts failing longest",
       {"fs01|r-enc|conf-c|SEVERITY_HIGH|2026-03-01 12:00:00+00"}},
      {"smbfleet-compliance/Compliance now, by rule",
       {"r-enc|4|1|0|0|0|80.00", "r-sign|2|0|0|0|0|100.00"}},
      {"smbfleet-compliance/Compliance now, by classification",
       {"confidential|3|1|0|75.00", "internal|1|0|0|100.00", "public|0|0|0|NULL"}},
      {"smbfleet-compliance/Compliance now, by label",
       {"site=lyon|3|0|0|100.00", "site=paris|3|1|0|75.00"}},
      // Encryption coverage: 3 of 4 confidential shares (conf-d through its server).
      {"smbfleet-encryption/Encrypted % of classified shares, by classification",
       {"confidential|75.00", "internal|100.00", "public|0.00", "restricted|0.00"}},
      {"smbfleet-encryption/Coverage by classification",
       {"confidential|4|3|1|0|2|75.00", "internal|1|1|0|0|1|100.00", "public|1|0|1|0|1|0.00",
        "restricted|1|0|0|1|1|0.00"}},
      {"smbfleet-encryption/Classified shares not known to be encrypted",
       {"fs01|conf-c|confidential|f|f|no", "fs01|pub|public|f|f|no",
        "fs01|hr|restricted|NULL|f|unknown"}},
      // Sessions: 2 unsigned, 3 unencrypted, 2 legacy of 5.
      {"smbfleet-sessions/Live sessions", {"5|2|3|2|1"}},
      {"smbfleet-sessions/Share of live sessions", {"40.00|60.00|40.00"}},
      {"smbfleet-sessions/Sessions by dialect",
       {"DIALECT_SMB1|1|1", "DIALECT_SMB_2_1|1|1", "DIALECT_SMB_3_0|1|1", "DIALECT_SMB_3_1_1|2|2"}},
      {"smbfleet-sessions/Hosts with unsigned, unencrypted or legacy sessions",
       {"fs01|PLATFORM_SAMBA|3|2|3|2|1"}},
      {"smbfleet-sessions/Unsigned or legacy-dialect sessions",
       {"fs01|10.0.0.12|ws12|bob|DIALECT_SMB_2_1|PROTECTION_NONE|PROTECTION_NONE|"
        "CRYPTO_ALGORITHM_UNSPECIFIED",
        "fs01|10.0.0.13|scanner|carl|DIALECT_SMB1|PROTECTION_NONE|PROTECTION_NONE|"
        "CRYPTO_ALGORITHM_UNSPECIFIED"}},
      // Events: the resent 3021 counts once; 1020 is no security event; 3022 is out of range.
      {"smbfleet-events/Events per day",
       {"2026-03-01 00:00:00+00|3000 smb1_access|1",
        "2026-03-01 00:00:00+00|3021 client_no_signing|2",
        "2026-03-02 00:00:00+00|1003 unencrypted_rejected|1",
        "2026-03-02 00:00:00+00|31998 server_no_signing|1"}},
      {"smbfleet-events/In the time range", {"1|4|4"}},
      {"smbfleet-events/Per day and host",
       {"2026-03-01 00:00:00+00|fs01|audit|3000 smb1_access|1|1",
        "2026-03-01 00:00:00+00|fs01|audit|3021 client_no_signing|2|1",
        "2026-03-02 00:00:00+00|fs01|refusal|1003 unencrypted_rejected|1|1",
        "2026-03-02 00:00:00+00|fs02|audit|31998 server_no_signing|1|1"}},
      {"smbfleet-events/Clients refused or audited",
       {"ws12|2|1|2026-03-01 08:00:00+00|2026-03-01 09:00:00+00|3021 client_no_signing",
        "10.0.0.13|1|1|2026-03-01 10:00:00+00|2026-03-01 10:00:00+00|3000 smb1_access",
        "10.0.0.50|1|1|2026-03-02 12:00:00+00|2026-03-02 12:00:00+00|31998 server_no_signing",
        "ws11|1|1|2026-03-02 11:00:00+00|2026-03-02 11:00:00+00|1003 unencrypted_rejected"}},
      // Change rollouts.
      {"smbfleet-changes/Changes",
       {"CHG-2|PROPOSED|r-enc|bob|2026-03-02 09:00:00+00|0 of 2||1|1|0|0|0|0|0.00|NULL|NULL",
        "CHG-1|ROLLING_OUT|r-sign|alice|2026-03-01 09:00:00+00|2 of 2|carol, dave|4|1|1|1|1|0|"
        "50.00|2026-03-01 11:00:00+00|2026-03-01 11:10:00+00"}},
      {"smbfleet-changes/Rollout progress (applied %) of live changes", {"CHG-1|25.00"}},
      {"smbfleet-changes/Changes by state", {"PROPOSED|1|1", "ROLLING_OUT|1|4"}},
      {"smbfleet-changes/Hosts by state",
       {"CHG-1|APPLIED|1", "CHG-1|DISPATCHED|1", "CHG-1|FAILED|1", "CHG-1|PENDING|1",
        "CHG-2|PENDING|1"}},
      {"smbfleet-changes/Hosts that did not apply",
       {"CHG-1|fs03|FAILED|0|2026-03-01 11:10:00+00|set failed"}},
      // Agent freshness: stale = not seen within 2 h.
      {"smbfleet-agents/Agents", {"3|2|1"}},
      {"smbfleet-agents/Hosts by time since the last report",
       {"< 1h|1", "1h-2h|0", "2h-1d|1", "1d-7d|0", ">= 7d|1"}},
      {"smbfleet-agents/Stale agents",
       {"fs03|PLATFORM_SAMBA|1.3.2|*|>= 7d", "fs02|PLATFORM_WINDOWS|1.3.2|*|2h-1d"}},
      {"smbfleet-agents/Agent versions", {"1.3.2|2|2", "1.4.0|1|0"}},
  };
  return *kExpected;
}

// The panels that filter on $label, with label = site=lyon (fs02, fs03).
const std::map<std::string, std::vector<std::string>>& ExpectedForLyon() {
  static const auto* kExpected = new std::map<std::string, std::vector<std::string>>{
      {"smbfleet-compliance/Compliance % per day, by label",
       {"2026-03-01 00:00:00+00|site=lyon|100.00", "2026-03-02 00:00:00+00|site=lyon|100.00",
        "2026-03-03 00:00:00+00|site=lyon|100.00"}},
      {"smbfleet-compliance/Compliance now, by label", {"site=lyon|3|0|0|100.00"}},
      {"smbfleet-encryption/Classified shares not known to be encrypted", {}},
      {"smbfleet-sessions/Hosts with unsigned, unencrypted or legacy sessions", {}},
      {"smbfleet-sessions/Unsigned or legacy-dialect sessions", {}},
      {"smbfleet-events/Per day and host",
       {"2026-03-02 00:00:00+00|fs02|audit|31998 server_no_signing|1|1"}},
      {"smbfleet-events/Clients refused or audited",
       {"10.0.0.50|1|1|2026-03-02 12:00:00+00|2026-03-02 12:00:00+00|31998 server_no_signing"}},
      {"smbfleet-agents/Stale agents",
       {"fs03|PLATFORM_SAMBA|1.3.2|*|>= 7d", "fs02|PLATFORM_WINDOWS|1.3.2|*|2h-1d"}},
      {"smbfleet-agents/Agent versions", {"1.3.2|2|2"}},
  };
  return *kExpected;
}

bool RowMatches(const std::string& want, const std::string& got) {
  std::vector<std::string> w = absl::StrSplit(want, '|');
  std::vector<std::string> g = absl::StrSplit(got, '|');
  if (w.size() != g.size()) return false;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] != "*" && w[i] != g[i]) return false;
  }
  return true;
}

std::string Quote(const std::string& value) {
  return absl::StrCat("'", absl::StrReplaceAll(value, {{"'", "''"}}), "'");
}

TEST_F(GrafanaDashboardsTest, EveryPanelAnswersWhatWasSeeded) {
  Seed();
  if (HasFatalFailure()) return;
  const std::vector<Query> queries = LoadDashboards();
  ASSERT_FALSE(queries.empty());

  std::set<std::string> seen;
  // Runs one expanded query as smbfleet_readonly and compares its rows with `expected`.
  auto check = [&](const Query& q, const std::map<std::string, std::string>& vars,
                   const std::map<std::string, std::vector<std::string>>& expected)
      -> std::vector<std::string> {
    SCOPED_TRACE(q.where);
    const std::string sql = Expand(q.sql, vars);
    EXPECT_EQ(sql.find('$'), std::string::npos)
        << "a macro or variable the test does not expand: " << sql;
    std::vector<std::string> rows;
    try {
      rows = RunAsReadonly(sql);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "as smbfleet_readonly: " << e.what() << "\n" << sql;
      return rows;
    }
    auto it = expected.find(q.key);
    if (it == expected.end()) {
      ADD_FAILURE() << "no expected answer for " << q.key << "; it answers:\n"
                    << absl::StrJoin(rows, "\n");
      return rows;
    }
    seen.insert(q.key);
    bool match = rows.size() == it->second.size();
    for (size_t i = 0; match && i < rows.size(); ++i) match = RowMatches(it->second[i], rows[i]);
    EXPECT_TRUE(match) << "expected:\n"
                       << absl::StrJoin(it->second, "\n") << "\ngot:\n"
                       << absl::StrJoin(rows, "\n") << "\nSQL:\n"
                       << sql;
    return rows;
  };

  // Template variables first, as Grafana does; each at "All": its custom all value, else every
  // value it found, quoted.
  std::map<std::string, std::map<std::string, std::string>> all;  // uid -> name -> expansion
  for (const Query& q : queries) {
    if (q.variable.empty()) continue;
    std::vector<std::string> values = check(q, {}, Expected());
    std::vector<std::string> quoted;
    quoted.reserve(values.size());
    for (const auto& v : values) quoted.push_back(Quote(v));
    all[q.uid][q.variable] = q.all_value.empty() ? absl::StrJoin(quoted, ",") : q.all_value;
  }
  for (const Query& q : queries) {
    if (!q.variable.empty()) continue;
    check(q, all[q.uid], Expected());
  }
  for (const auto& [key, rows] : Expected()) {
    EXPECT_TRUE(seen.count(key) == 1) << "no panel or variable " << key << " in dashboards/json";
  }

  // The panels that filter on a label, with one label chosen.
  seen.clear();
  for (const Query& q : queries) {
    if (!q.variable.empty() || q.sql.find("$label") == std::string::npos) continue;
    std::map<std::string, std::string> vars = all[q.uid];
    vars["label"] = Quote("site=lyon");
    check(q, vars, ExpectedForLyon());
  }
  for (const auto& [key, rows] : ExpectedForLyon()) {
    EXPECT_TRUE(seen.count(key) == 1) << "no panel " << key << " filters on $label";
  }
}

TEST_F(GrafanaDashboardsTest, ReadonlyRoleReadsViewsOnly) {
  // No grant on any table: the role reads views, which run with their owner's rights.
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT count(*) FROM information_schema.role_table_grants g JOIN pg_tables "
                       "t ON t.schemaname = g.table_schema AND t.tablename = g.table_name WHERE "
                       "g.grantee = 'smbfleet_readonly'"),
            "0");
  EXPECT_NE(QueryValue(dsn_,
                       "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = "
                       "'smbfleet_readonly' AND privilege_type = 'SELECT'"),
            "0");
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = "
                       "'smbfleet_readonly' AND privilege_type <> 'SELECT'"),
            "0");
  for (const std::string table :
       {"api_tokens", "enrollment_tokens", "approver_keys", "approver_sets",
        "certificate_revocations", "issued_certificates", "change_approvals", "hosts", "postures",
        "host_events", "audit_log", "schema_migrations"}) {
    SCOPED_TRACE(table);
    try {
      RunAsReadonly(absl::StrCat("SELECT count(*) FROM ", table));
      ADD_FAILURE() << "smbfleet_readonly may read " << table;
    } catch (const pqxx::sql_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("permission denied")) << e.what();
    }
  }
  try {
    RunAsReadonly("INSERT INTO audit_log (actor, action) VALUES ('grafana', 'x')");
    ADD_FAILURE() << "smbfleet_readonly may write";
  } catch (const pqxx::sql_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("permission denied")) << e.what();
  }
  // A view is readable.
  EXPECT_EQ(RunAsReadonly("SELECT count(*) FROM agent_freshness"), std::vector<std::string>{"0"});
}

// Events of postures stored before migration 0009 are copied into host_events by it; later ones
// by the trigger, each event once.
TEST(GrafanaMigrationTest, CopiesEarlierEventsAndKeepsEachOnce) {
  SMBFLEET_REQUIRE_PG();
  const std::string dsn = CreateTestDatabase();
  std::vector<Migration> before;
  for (const Migration& m : BuiltinMigrations()) {
    // 0011 is the reports key and order column today's store writes; it touches no table of 0009.
    if (m.version < "0009" || m.version.rfind("0011", 0) == 0) before.push_back(m);
  }
  ASSERT_LT(before.size(), BuiltinMigrations().size());
  ASSERT_TRUE(ApplyMigrations(dsn, before).ok());
  const std::string audit = "Microsoft-Windows-SMBServer/Audit";
  v1::Posture p = Host("fs09", v1::PLATFORM_WINDOWS, "1.4.0", "paris");
  *p.add_events() =
      MakeEvent(3021, audit, "client_no_signing", "2026-03-01T08:00:00Z", 1, "ws1", "");
  *p.add_events() = MakeEvent(3000, audit, "smb1_access", "2026-03-01T09:00:00Z", 2, "ws2", "");
  // Written as the store of that schema wrote it (today's store needs later migrations).
  absl::StatusOr<std::string> json = ToJson(p, /*pretty=*/false);
  ASSERT_TRUE(json.ok()) << json.status();
  {
    pqxx::connection c(dsn);
    pqxx::work tx(c);
    tx.exec_params(
        "WITH h AS (INSERT INTO hosts (name, first_seen, last_seen) VALUES ($1, now(), now()) "
        "RETURNING id), q AS (INSERT INTO postures (host_id, report_id, stored_at, posture_hash, "
        "posture, posture_json) SELECT id, $2::uuid, now() - interval '5 minutes', '\\x01', "
        "'', $3::jsonb FROM h RETURNING id, host_id) INSERT INTO host_state (host_id, "
        "posture_id, updated_at) SELECT host_id, id, now() FROM q",
        "fs09", "00000000-0000-4000-8000-000000000901", *json);
    tx.commit();
  }
  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  auto stores = NewPgStore(dsn, 1);
  ASSERT_TRUE(stores.ok()) << stores.status();
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM host_events"), "2");

  v1::Posture next = Host("fs09", v1::PLATFORM_WINDOWS, "1.4.0", "paris");
  *next.add_events() = p.events(1);  // resent
  *next.add_events() =
      MakeEvent(3021, audit, "client_no_signing", "2026-03-02T08:00:00Z", 3, "ws1", "");
  Save(*stores->hosts, "fs09", next, "00000000-0000-4000-8000-000000000902", absl::Now());
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM host_events"), "3");
  EXPECT_EQ(QueryValue(dsn,
                       "SELECT string_agg(event_id || ':' || record_id || ':' || client_name, ',' "
                       "ORDER BY at) FROM host_events"),
            "3021:1:ws1,3000:2:ws2,3021:3:ws1");
  // Run by the owner: true when the role exists (deploy/pg.sh creates it).
  EXPECT_EQ(QueryValue(dsn, "SELECT smbfleet_grant_readonly()"), "t");
}

// Migration 0023 moves an event's channel, provider, level and kind into host_event_types:
// the events stored before read the same through smb_security_events, later ones add a type
// only when it is new (and use up no id of the identity when it is not), a resent event is
// still stored once.
TEST(GrafanaMigrationTest, EventTypesKeepWhatEachEventSaidAndAreStoredOnce) {
  SMBFLEET_REQUIRE_PG();
  const std::string dsn = CreateTestDatabase();
  std::vector<Migration> before;
  for (const Migration& m : BuiltinMigrations()) {
    if (m.version < "0023") before.push_back(m);
  }
  ASSERT_LT(before.size(), BuiltinMigrations().size());
  ASSERT_TRUE(ApplyMigrations(dsn, before).ok());
  auto stores = NewPgStore(dsn, 1);
  ASSERT_TRUE(stores.ok()) << stores.status();

  const std::string audit = "Microsoft-Windows-SMBServer/Audit";
  v1::Posture p = Host("fs23", v1::PLATFORM_WINDOWS, "1.4.0", "paris");
  *p.add_events() =
      MakeEvent(3021, audit, "client_no_signing", "2026-03-01T08:00:00Z", 1, "ws1", "");
  *p.add_events() = MakeEvent(3000, audit, "smb1_access", "2026-03-01T09:00:00Z", 2, "ws2", "");
  v1::Event samba =
      MakeEvent(0, "samba", "client_no_encryption", "2026-03-01T10:00:00Z", 0, "", "10.0.0.7");
  samba.set_provider("smbd");
  samba.set_level(v1::EVENT_LEVEL_WARNING);
  *p.add_events() = samba;
  Save(*stores->hosts, "fs23", p, "00000000-0000-4000-8000-000000002301", absl::Now());
  const std::string shown =
      "SELECT string_agg(concat_ws('|', at, host, event_id, channel, provider, kind, level, "
      "client_address, client_name, category, event), ',' ORDER BY at) FROM smb_security_events";
  const std::string before_0023 = QueryValue(dsn, shown);
  ASSERT_THAT(before_0023, HasSubstr("samba|smbd|client_no_encryption|EVENT_LEVEL_WARNING"));

  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  EXPECT_EQ(QueryValue(dsn, shown), before_0023);
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM host_event_types"), "3");

  v1::Posture next = Host("fs23", v1::PLATFORM_WINDOWS, "1.4.0", "paris");
  *next.add_events() = p.events(1);  // resent
  *next.add_events() =
      MakeEvent(3021, audit, "client_no_signing", "2026-03-02T08:00:00Z", 3, "ws1", "");
  *next.add_events() = MakeEvent(3023, audit, "guest_logon", "2026-03-02T09:00:00Z", 4, "ws3", "");
  Save(*stores->hosts, "fs23", next, "00000000-0000-4000-8000-000000002302", absl::Now());
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM host_events"), "5");
  EXPECT_EQ(QueryValue(dsn,
                       "SELECT count(*) || ':' || (SELECT last_value FROM pg_sequences WHERE "
                       "sequencename = 'host_event_types_id_seq') FROM host_event_types"),
            "4:4");
  EXPECT_EQ(
      QueryValue(dsn,
                 "SELECT string_agg(event_id || ':' || client_name || ':' || channel || ':' || "
                 "kind, ',' ORDER BY at) FROM smb_security_events WHERE at >= '2026-03-02'"),
      absl::StrCat("3021:ws1:", audit, ":client_no_signing,3023:ws3:", audit, ":guest_logon"));
}

}  // namespace
}  // namespace smbfleet::collector

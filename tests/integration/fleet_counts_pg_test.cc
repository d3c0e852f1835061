// The overview's session and share encryption figures kept by migration 0017 against a fresh
// scan of the live sessions and classified shares (the queries the overview ran before),
// after mixed reports, older reports, classifications changed by an evaluation, a host
// deleted, two collectors writing at once and a fold; and the figures 0017 fills in for a
// database written before it.
#include <atomic>
#include <map>
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
classification:
  classes: [public, general, confidential]
  default: general
  rules:
    - name: confidential-shares
      classification: confidential
      shareNames: ["finance*", "hr"]
    - name: public-shares
      classification: public
      shareNames: ["public"]
  overrides: []
rules:
  - id: smb1-server-disabled
    title: SMB1 server protocol is disabled
    severity: critical
    expect:
      server.smb1Enabled: false
)yaml";

smbfleet::policy::Policy TestPolicy(const std::string& share_class) {
  std::string text = kPolicy;
  if (!share_class.empty()) {  // every share in one class: the evaluation rewrites them
    text.replace(text.find("default: general"), 16, absl::StrCat("default: ", share_class));
    text.replace(text.find("\"finance*\", \"hr\""), 16, "\"nothing-matches\"");
    text.replace(text.find("[\"public\"]"), 10, "[\"nothing-matches\"]");
  }
  auto p = smbfleet::policy::ParsePolicy("counts.yaml", text);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// A posture that differs with `variant`: its sessions' dialects and protections, its shares,
// their and their server's EncryptData (set, unset, absent).
v1::Posture PostureOf(const std::string& host, int variant) {
  static const v1::Dialect kDialects[] = {v1::DIALECT_SMB1, v1::DIALECT_SMB_2_1,
                                          v1::DIALECT_SMB_3_0, v1::DIALECT_SMB_3_1_1,
                                          v1::DIALECT_UNSPECIFIED};
  static const v1::Protection kProtections[] = {v1::PROTECTION_NONE, v1::PROTECTION_PARTIAL,
                                                v1::PROTECTION_FULL, v1::PROTECTION_UNSPECIFIED};
  static const char* const kShares[] = {"finance", "hr", "public", "data", "finance-2"};
  v1::Posture p;
  p.mutable_host()->set_hostname(host);
  p.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
  p.mutable_server()->set_smb1_enabled(variant % 2 == 1);
  if (variant % 3 != 2) p.mutable_server()->set_encrypt_data(variant % 3 == 1);
  for (int i = 0; i < (variant * 7) % 11; ++i) {
    auto* s = p.add_sessions();
    s->set_session_id(absl::StrCat(variant, "-", i));
    s->set_client_address(absl::StrCat("10.0.0.", i));
    s->set_dialect(kDialects[(variant + i) % 5]);
    s->set_signing(kProtections[(variant + 2 * i) % 4]);
    s->set_encryption(kProtections[(variant + i / 2) % 4]);
  }
  for (int i = 0; i < (variant % 5) + 1; ++i) {
    auto* share = p.add_shares();
    share->set_name(kShares[(variant + i) % 5]);
    share->set_path(absl::StrCat("/srv/", share->name()));
    if ((variant + i) % 3 != 0) share->set_encrypt_data((variant + i) % 3 == 1);
  }
  return p;
}

// Rows in one query's answer and not the other's, either way (0: the same rows).
std::string Difference(const std::string& dsn, const std::string& a, const std::string& b) {
  return QueryValue(dsn, absl::StrCat("SELECT count(*) FROM ((", a, " EXCEPT ALL ", b,
                                      ") UNION ALL (", b, " EXCEPT ALL ", a, ")) d"));
}

// The scans the overview ran before 0017, and the kept figures that replace them. A posture's
// whole JSON is posture_documents' since 0019 (postures.posture_json of a posture stored against
// its day's base holds its difference from it).
constexpr char kScanSessions[] = R"sql(
  SELECT dialect, signing, encryption, count(*) FROM host_sessions GROUP BY 1, 2, 3)sql";
constexpr char kKeptSessions[] = R"sql(
  SELECT dialect, signing, encryption, sum(n)::bigint FROM session_counts
  GROUP BY 1, 2, 3 HAVING sum(n) <> 0)sql";
constexpr char kScanExposed[] = R"sql(
  SELECT h.name, count(*) AS count FROM host_sessions s JOIN hosts h ON h.id = s.host_id
  WHERE s.signing = 'PROTECTION_NONE'
     OR s.dialect IN ('DIALECT_SMB1', 'DIALECT_SMB_2_0_2', 'DIALECT_SMB_2_1')
  GROUP BY h.name)sql";
constexpr char kKeptExposed[] = R"sql(
  SELECT name, exposed_sessions::bigint FROM hosts WHERE exposed_sessions <> 0)sql";
constexpr char kScanEncryption[] = R"sql(
  SELECT s.classification, count(*) AS shares,
         count(*) FILTER (WHERE s.encrypt_data IS TRUE
                          OR p.posture_json -> 'server' ->> 'encryptData' = 'true') AS encrypted
  FROM host_shares s LEFT JOIN host_state st ON st.host_id = s.host_id
  LEFT JOIN posture_documents p ON p.id = st.posture_id WHERE s.classification <> ''
  GROUP BY s.classification)sql";
constexpr char kKeptEncryption[] = R"sql(
  SELECT classification, sum(n)::bigint, COALESCE(sum(n) FILTER (WHERE encrypted), 0)::bigint
  FROM share_encryption_counts GROUP BY classification HAVING sum(n) <> 0)sql";
constexpr char kScanShareView[] = R"sql(
  SELECT h.name, s.name, s.classification,
         (p.posture_json -> 'server' ->> 'encryptData')::boolean,
         CASE
           WHEN s.encrypt_data OR (p.posture_json -> 'server' ->> 'encryptData')::boolean THEN true
           WHEN s.encrypt_data IS NULL OR (p.posture_json -> 'server' ->> 'encryptData') IS NULL
             THEN NULL
           ELSE false
         END
  FROM host_shares s JOIN hosts h ON h.id = s.host_id
  LEFT JOIN host_state hs ON hs.host_id = s.host_id
  LEFT JOIN posture_documents p ON p.id = hs.posture_id
  WHERE s.classification <> '')sql";
constexpr char kKeptShareView[] = R"sql(
  SELECT host, share, classification, server_encrypt_data, encrypted FROM share_encryption)sql";

constexpr char kScanLabels[] = R"sql(
  SELECT c.policy_name, c.policy_version, hl.key, hl.value, c.status, count(*)
  FROM compliance_results c JOIN hosts h ON h.id = c.host_id
  JOIN host_labels hl ON hl.host = h.name GROUP BY 1, 2, 3, 4, 5)sql";
constexpr char kKeptLabels[] = R"sql(
  SELECT policy_name, policy_version, key, value, status, sum(n)::bigint
  FROM compliance_label_counts GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0)sql";
// The overview's per-label slices as a scan of the active results computes them.
constexpr char kScanLabelSlices[] = R"sql(
  SELECT COALESCE(string_agg(key || ':' || compliant || '/' || non_compliant || '/' || waived
                             || '/' || unknown || '/' || errors || ';', ''
                             ORDER BY key COLLATE "C"), '')
  FROM (SELECT hl.key || '=' || hl.value AS key,
               count(*) FILTER (WHERE r.status = 'COMPLIANT') AS compliant,
               count(*) FILTER (WHERE r.status = 'NON_COMPLIANT') AS non_compliant,
               count(*) FILTER (WHERE r.status = 'WAIVED') AS waived,
               count(*) FILTER (WHERE r.status = 'UNKNOWN') AS unknown,
               count(*) FILTER (WHERE r.status = 'ERROR') AS errors
        FROM compliance_results r JOIN policy_versions v
          ON v.policy_name = r.policy_name AND v.version = r.policy_version AND v.active
        JOIN hosts h ON h.id = r.host_id JOIN host_labels hl ON hl.host = h.name
        GROUP BY hl.key, hl.value) s)sql";

void ExpectKeptEqualsScan(const std::string& dsn, const std::string& when) {
  EXPECT_EQ(Difference(dsn, kScanLabels, kKeptLabels), "0") << when;
  EXPECT_EQ(Difference(dsn, kScanSessions, kKeptSessions), "0") << when;
  EXPECT_EQ(Difference(dsn, kScanExposed, kKeptExposed), "0") << when;
  EXPECT_EQ(Difference(dsn, kScanEncryption, kKeptEncryption), "0") << when;
  EXPECT_EQ(Difference(dsn, kScanShareView, kKeptShareView), "0") << when;
}

class FleetCountsPgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    dsn_ = CreateTestDatabase();
  }

  void Label(Stores& stores, const std::string& host, const HostLabels& labels) {
    ASSERT_TRUE(stores.enrollment->SetHostLabels(host, labels, "carol", absl::Now()).ok()) << host;
  }

  void OpenStores() {
    for (auto* s : {&a_, &b_}) {
      auto stores = NewPgStore(dsn_, 2);
      ASSERT_TRUE(stores.ok()) << stores.status();
      *s = *std::move(stores);
    }
  }

  // Stores a report of `host` (collected at `collected`) and records its evaluation, unless the
  // report is older than the host's current posture (kept as history only, not evaluated).
  void Report(Stores& stores, const std::string& host, int variant,
              const smbfleet::policy::Policy& policy, absl::Time collected, bool older = false) {
    auto posture = PostureOf(host, variant);
    posture.mutable_collected_at()->set_seconds(absl::ToUnixSeconds(collected));
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
    if (older) return;
    auto eval = smbfleet::policy::EvaluateHost(policy, posture, {}, absl::Now());
    auto n = RecordEvaluation(*stores.compliance, host, eval);
    ASSERT_TRUE(n.ok()) << host << ": " << n.status();
  }

  // The overview's figures, and the same from the scans above.
  void ExpectOverviewEqualsScan(const std::string& when) {
    OverviewQuery q;
    q.top = 100;
    q.trend_days = 1;
    q.now = absl::Now();
    q.stale_before = q.now - absl::Hours(1);
    auto o = a_.compliance->GetFleetOverview(q);
    ASSERT_TRUE(o.ok()) << o.status();
    const v1::SessionExposure& s = o->sessions();
    EXPECT_EQ(absl::StrCat(s.sessions()), QueryValue(dsn_, "SELECT count(*) FROM host_sessions"))
        << when;
    EXPECT_EQ(
        absl::StrCat(s.unsigned_sessions()),
        QueryValue(dsn_, "SELECT count(*) FROM host_sessions WHERE signing = 'PROTECTION_NONE'"))
        << when;
    EXPECT_EQ(
        absl::StrCat(s.unencrypted_sessions()),
        QueryValue(dsn_, "SELECT count(*) FROM host_sessions WHERE encryption = 'PROTECTION_NONE'"))
        << when;
    EXPECT_EQ(absl::StrCat(s.legacy_dialect_sessions()),
              QueryValue(dsn_,
                         "SELECT count(*) FROM host_sessions WHERE dialect IN ('DIALECT_SMB1', "
                         "'DIALECT_SMB_2_0_2', 'DIALECT_SMB_2_1')"))
        << when;
    std::string by_dialect;
    for (const auto& [dialect, n] :
         std::map<std::string, uint32_t>(s.by_dialect().begin(), s.by_dialect().end())) {
      absl::StrAppend(&by_dialect, dialect, "=", n, ";");
    }
    EXPECT_EQ(by_dialect,
              QueryValue(dsn_,
                         "SELECT COALESCE(string_agg(dialect || '=' || n || ';', '' ORDER BY "
                         "dialect COLLATE \"C\"), '') FROM (SELECT dialect, count(*) AS n "
                         "FROM host_sessions GROUP BY dialect) d"))
        << when;
    std::string top;
    for (const auto& h : s.top_hosts()) absl::StrAppend(&top, h.name(), "=", h.count(), ";");
    EXPECT_EQ(top, QueryValue(dsn_, absl::StrCat("SELECT COALESCE(string_agg(name || '=' || count "
                                                 "|| ';', '' ORDER BY count DESC, name COLLATE "
                                                 "\"C\"), '') FROM (",
                                                 kScanExposed, ") e")))
        << when;
    std::string labels;
    for (const auto& l : o->by_label()) {
      absl::StrAppend(&labels, l.key(), ":", l.compliant(), "/", l.non_compliant(), "/", l.waived(),
                      "/", l.unknown(), "/", l.errors(), ";");
    }
    EXPECT_EQ(labels, QueryValue(dsn_, kScanLabelSlices)) << when;
    std::string encryption;
    for (const auto& c : o->encryption()) {
      absl::StrAppend(&encryption, c.classification(), "=", c.encrypted(), "/", c.shares(), ";");
    }
    EXPECT_EQ(encryption, QueryValue(dsn_, absl::StrCat("SELECT COALESCE(string_agg("
                                                        "classification || '=' || encrypted || "
                                                        "'/' || shares || ';', '' ORDER BY "
                                                        "classification COLLATE \"C\"), '') FROM (",
                                                        kScanEncryption, ") c")))
        << when;
  }

  std::string dsn_;
  Stores a_;
  Stores b_;
  std::atomic<int> reports_{0};
};

TEST_F(FleetCountsPgTest, KeptFiguresEqualAScanAfterMixedWrites) {
  ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
  OpenStores();
  const auto policy = TestPolicy("");
  ASSERT_TRUE(a_.compliance->ActivatePolicy(policy.name, policy.version, "text").ok());
  const absl::Time t0 = absl::Now() - absl::Hours(24);
  Label(a_, "fs0", {{"site", "paris"}, {"tier", "gold"}});
  Label(a_, "web9", {{"site", "oslo"}});  // before the host ever reports
  for (int i = 0; i < 12; ++i) Report(a_, absl::StrCat("fs", i), i, policy, t0);
  Label(a_, "fs1", {{"site", "oslo"}});
  Label(a_, "fs2", {{"site", "paris"}});
  Label(a_, "fs4", {{"site", "paris"}, {"tier", "gold"}});
  ExpectKeptEqualsScan(dsn_, "new hosts");
  ExpectOverviewEqualsScan("new hosts");
  EXPECT_NE(QueryValue(dsn_, "SELECT count(DISTINCT key) FROM compliance_label_counts"), "0");

  // Labels changed, removed, and a value rewritten in place.
  Label(a_, "fs0", {{"site", "oslo"}});
  Label(a_, "fs1", {});
  QueryValue(dsn_, "UPDATE host_labels SET value = 'silver' WHERE host = 'fs4' RETURNING host");
  ExpectKeptEqualsScan(dsn_, "labels changed");
  ExpectOverviewEqualsScan("labels changed");
  EXPECT_NE(QueryValue(dsn_, "SELECT count(*) FROM hosts WHERE exposed_sessions > 0"), "0");
  EXPECT_NE(QueryValue(dsn_, "SELECT count(DISTINCT classification) FROM host_shares"), "1");
  EXPECT_NE(QueryValue(dsn_, "SELECT count(*) FROM share_encryption WHERE encrypted"), "0");

  // Changed postures, an unchanged one, and older ones (history only: nothing live changes).
  for (int i = 0; i < 12; i += 2)
    Report(a_, absl::StrCat("fs", i), i + 5, policy, t0 + absl::Hours(1));
  Report(a_, "fs1", 1, policy, t0 + absl::Hours(1));
  Report(a_, "fs3", 8, policy, t0 - absl::Hours(1), /*older=*/true);
  ExpectKeptEqualsScan(dsn_, "changed, unchanged and older reports");
  ExpectOverviewEqualsScan("changed, unchanged and older reports");

  // A policy that puts every share in one class: the evaluation rewrites the classifications.
  const auto all_public = TestPolicy("public");
  for (int i = 0; i < 12; i += 3)
    Report(a_, absl::StrCat("fs", i), i + 20, all_public, t0 + absl::Hours(2));
  ExpectKeptEqualsScan(dsn_, "classifications changed");
  ExpectOverviewEqualsScan("classifications changed");

  // Two collectors at once, each with two connections, on interleaved hosts, while the labels of
  // some of those hosts change.
  std::vector<std::thread> writers;
  writers.reserve(5);
  writers.emplace_back([&] {
    for (int round = 0; round < 12; ++round) {
      for (const char* host : {"fs0", "fs2", "web1", "web9"}) {
        Label(round % 2 == 0 ? a_ : b_, host,
              round % 3 == 0 ? HostLabels{} : HostLabels{{"site", absl::StrCat("s", round % 4)}});
      }
    }
  });
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      Stores& stores = w % 2 == 0 ? a_ : b_;
      for (int round = 0; round < 6; ++round) {
        for (int i = w; i < 16; i += 4) {
          Report(stores, absl::StrCat(i % 2 == 0 ? "fs" : "web", i), i + 3 * round, policy,
                 t0 + absl::Hours(3 + round));
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  ExpectKeptEqualsScan(dsn_, "concurrent reports and labels");
  ExpectOverviewEqualsScan("concurrent reports and labels");

  // Another version active: what counts is that version's results, per label too.
  auto v2 = TestPolicy("");
  v2.version = "2";
  ASSERT_TRUE(b_.compliance->ActivatePolicy(v2.name, v2.version, "text").ok());
  ExpectOverviewEqualsScan("version 2 active, nothing evaluated under it");
  for (int i = 0; i < 12; i += 4) Report(b_, absl::StrCat("fs", i), i, v2, t0 + absl::Hours(10));
  ExpectKeptEqualsScan(dsn_, "some hosts under version 2");
  ExpectOverviewEqualsScan("some hosts under version 2");

  // A host deleted takes its sessions and shares with it.
  QueryValue(dsn_, "DELETE FROM hosts WHERE name = 'fs4' RETURNING id");
  ExpectKeptEqualsScan(dsn_, "host deleted");
  ExpectOverviewEqualsScan("host deleted");

  // The connections that wrote are closed; their counts fold into one slot, unchanged.
  a_ = Stores{};
  b_ = Stores{};
  auto c = NewPgStore(dsn_, 1);
  ASSERT_TRUE(c.ok()) << c.status();
  a_ = *std::move(c);
  ASSERT_TRUE(a_.compliance->ActivatePolicy(policy.name, policy.version, "text").ok());
  // A closed connection's backend may take a moment to leave pg_stat_activity.
  for (int i = 0; i < 100 && QueryValue(dsn_,
                                        "SELECT (SELECT count(*) FROM session_counts "
                                        "WHERE slot <> 0) + (SELECT count(*) FROM "
                                        "share_encryption_counts WHERE slot <> 0)") != "0";
       ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    QueryValue(dsn_, "SELECT 1 FROM fleet_counts_fold()");
  }
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM session_counts WHERE slot <> 0"), "0");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM share_encryption_counts WHERE slot <> 0"), "0");
  ExpectKeptEqualsScan(dsn_, "folded");
  ExpectOverviewEqualsScan("folded");
}

// A database written before 0017 (its rows as the report path wrote them then): the migration
// fills every kept figure from them.
TEST_F(FleetCountsPgTest, MigrationFillsTheFiguresOfAnExistingDatabase) {
  std::vector<Migration> before;
  for (const Migration& m : BuiltinMigrations()) {
    if (m.version < "0017") before.push_back(m);
  }
  ASSERT_LT(before.size(), BuiltinMigrations().size());
  ASSERT_TRUE(ApplyMigrations(dsn_, before).ok());
  QueryValue(dsn_, R"sql(
    WITH h AS (
      INSERT INTO hosts (name, first_seen, last_seen)
      SELECT 'old' || i, now(), now() FROM generate_series(1, 30) i RETURNING id, name),
    p AS (
      INSERT INTO postures (host_id, report_id, stored_at, posture_hash, posture, posture_json)
      SELECT id, gen_random_uuid(), now(), '\x00', '\x00',
             CASE id % 3 WHEN 0 THEN '{"server": {"encryptData": true}}'::jsonb
                         WHEN 1 THEN '{"server": {"encryptData": false}}'::jsonb
                         ELSE '{"server": {}}'::jsonb END
      FROM h RETURNING id, host_id, stored_at),
    st AS (INSERT INTO host_state (host_id, posture_id, posture_stored_at, updated_at)
           SELECT host_id, id, stored_at, now() FROM p RETURNING host_id),
    sh AS (
      INSERT INTO host_shares (host_id, name, path, encrypt_data, classification)
      SELECT host_id, 'share' || j, '/srv/' || j,
             CASE (host_id + j) % 3 WHEN 0 THEN true WHEN 1 THEN false END,
             (ARRAY['', 'public', 'confidential'])[1 + (host_id * j) % 3]
      FROM st, generate_series(1, 4) j RETURNING host_id)
    INSERT INTO host_sessions (host_id, session_id, client_address, client_name, user_name,
                               dialect, signing, encryption, signing_algorithm, cipher, shares)
    SELECT host_id, 's' || k, '10.0.0.1', '', '',
           (ARRAY['DIALECT_SMB1', 'DIALECT_SMB_2_1', 'DIALECT_SMB_3_1_1'])[1 + (host_id + k) % 3],
           (ARRAY['PROTECTION_NONE', 'PROTECTION_FULL'])[1 + (host_id * k) % 2],
           (ARRAY['PROTECTION_NONE', 'PROTECTION_PARTIAL', 'PROTECTION_FULL'])[1 + k % 3],
           '', '', '[]'::jsonb
    FROM (SELECT DISTINCT host_id FROM sh) s, generate_series(1, (s.host_id % 7)::int) k
    RETURNING 1)sql");
  QueryValue(dsn_, R"sql(
    WITH v AS (INSERT INTO policy_versions (policy_name, version, active)
               VALUES ('counts', '1', true), ('counts', '0', false) RETURNING 1),
    r AS (
      INSERT INTO compliance_results (host_id, policy_name, policy_version, rule_id, status,
                                      evaluated_at)
      SELECT h.id, 'counts', CASE WHEN h.id % 5 = 0 THEN '0' ELSE '1' END, rule,
             CASE WHEN (h.id + length(rule)) % 3 = 0 THEN 'NON_COMPLIANT' ELSE 'COMPLIANT' END,
             now()
      FROM hosts h CROSS JOIN (VALUES ('a'), ('bb'), ('ccc')) x(rule) RETURNING 1)
    INSERT INTO host_labels (host, key, value, set_by)
    SELECT name, 'site', 'site-' || (id % 4), 'carol' FROM hosts WHERE id % 3 <> 0
    UNION ALL SELECT 'never-reported', 'site', 'site-1', 'carol'
    RETURNING 1)sql");
  ASSERT_EQ(QueryValue(dsn_, "SELECT count(*) > 50 FROM host_sessions"), "t");
  ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
  EXPECT_NE(QueryValue(dsn_, "SELECT count(*) FROM share_encryption_counts"), "0");
  EXPECT_NE(QueryValue(dsn_, "SELECT count(*) FROM share_encryption WHERE encrypted"), "0");
  EXPECT_NE(QueryValue(dsn_, "SELECT count(*) FROM compliance_label_counts"), "0");
  ExpectKeptEqualsScan(dsn_, "migrated");
  OpenStores();
  ExpectOverviewEqualsScan("migrated");
}

}  // namespace
}  // namespace smbfleet::collector

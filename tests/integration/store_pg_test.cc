// The PostgreSQL store against a real server: migrations, dedupe, latest state.
#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/admin/admin_api.h"
#include "collector/changes/change_service.h"
#include "collector/ingest/digest.h"
#include "collector/ingest/pipeline.h"
#include "collector/store/postgres/pg_store.h"
#include "collector/testing/flaky_compliance_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/evaluate.h"
#include "policy/policy.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

using ::smbfleet::testing::CreateTestDatabase;
using ::smbfleet::testing::QueryValue;
using ::testing::HasSubstr;
using ::testing::Not;

smbfleet::v1::Posture SamplePosture() {
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname("fs01");
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  (*p.mutable_host()->mutable_labels())["site"] = "ams";
  p.mutable_server()->set_require_signing(false);
  auto* share = p.add_shares();
  share->set_name("finance");
  share->set_path("/srv/finance");
  auto* s = p.add_sessions();
  s->set_session_id("4242");
  s->set_user("alice");
  s->set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
  s->add_shares()->set_name("finance");
  return p;
}

IncomingReport Incoming(const smbfleet::v1::Posture& p, const std::string& id) {
  IncomingReport r;
  r.host = "fs01";
  r.report_id = id;
  r.reason = "test";
  r.posture = &p;
  r.digest = PostureDigest(p);
  r.size_bytes = p.ByteSizeLong();
  r.received_at = absl::Now();
  return r;
}

TEST(MigrationsTest, ApplyTwiceIsSafe) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = CreateTestDatabase();
  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM schema_migrations"),
            std::to_string(BuiltinMigrations().size()));
}

TEST(MigrationsTest, ConcurrentStartsDoNotRace) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = CreateTestDatabase();
  absl::Status a, b;
  std::thread t1([&] { a = ApplyMigrations(dsn, BuiltinMigrations()); });
  std::thread t2([&] { b = ApplyMigrations(dsn, BuiltinMigrations()); });
  t1.join();
  t2.join();
  EXPECT_TRUE(a.ok()) << a;
  EXPECT_TRUE(b.ok()) << b;
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM schema_migrations"),
            std::to_string(BuiltinMigrations().size()));
}

TEST(MigrationsTest, EditedMigrationIsRefused) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = CreateTestDatabase();
  std::vector<Migration> m = {{"0001_t", "CREATE TABLE t (a int);"}};
  ASSERT_TRUE(ApplyMigrations(dsn, m).ok());
  m[0].sql = "CREATE TABLE t (a bigint);";
  auto s = ApplyMigrations(dsn, m);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("0001_t"));
}

TEST(MigrationsTest, FailingMigrationLeavesNothingHalfDone) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = CreateTestDatabase();
  std::vector<Migration> m = {{"0001_bad", "CREATE TABLE half (a int); SELECT * FROM nope;"}};
  EXPECT_FALSE(ApplyMigrations(dsn, m).ok());
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM pg_tables WHERE tablename = 'half'"), "0");
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM schema_migrations"), "0");
}

// 0011 on a database with reports: the host's current collection time is taken from its
// current posture, and ids another host used become usable.
TEST(MigrationsTest, ReportOrderMigrationKeepsWhatIsStored) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = CreateTestDatabase();
  std::vector<Migration> before;
  for (const Migration& m : BuiltinMigrations()) {
    if (m.version < "0011") before.push_back(m);
  }
  ASSERT_LT(before.size(), BuiltinMigrations().size());
  ASSERT_TRUE(ApplyMigrations(dsn, before).ok());
  QueryValue(dsn,
             "WITH h AS (INSERT INTO hosts (name, first_seen, last_seen) VALUES ('fs01', now(), "
             "now()) RETURNING id), "
             "r AS (INSERT INTO reports (report_id, host_id, received_at, collected_at, "
             "posture_hash, changed, size_bytes) SELECT "
             "'00000000-0000-4000-8000-000000000501', id, now(), '2026-03-01T10:00:00Z', "
             "'\\x01', true, 1 FROM h), "
             "p AS (INSERT INTO postures (host_id, report_id, stored_at, collected_at, "
             "posture_hash, posture, posture_json) SELECT id, "
             "'00000000-0000-4000-8000-000000000501', now(), '2026-03-01T10:00:00Z', '\\x01', "
             "'', '{}' FROM h RETURNING id, host_id) "
             "INSERT INTO host_state (host_id, posture_id, updated_at) SELECT host_id, id, now() "
             "FROM p RETURNING host_id");
  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  EXPECT_EQ(QueryValue(dsn,
                       "SELECT to_char(last_collected_at AT TIME ZONE 'UTC', "
                       "'YYYY-MM-DD HH24:MI') FROM hosts"),
            "2026-03-01 10:00");
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM reports"), "1");

  auto stores = NewPgStore(dsn, 1);
  ASSERT_TRUE(stores.ok()) << stores.status();
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname("fs02");
  IncomingReport r;
  r.host = "fs02";
  r.report_id = "00000000-0000-4000-8000-000000000501";  // fs01's
  r.posture = &p;
  r.digest = "02";
  r.received_at = absl::Now();
  auto saved = stores->hosts->SaveReport(r);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(*saved, SaveOutcome::kStored);
}

class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    auto stores = NewPgStore(dsn_, 2);
    ASSERT_TRUE(stores.ok()) << stores.status();
    stores_ = *std::move(stores);
    store_ = stores_.hosts.get();
    compliance_ = stores_.compliance.get();
  }
  std::string dsn_;
  Stores stores_;
  HostStore* store_ = nullptr;
  ComplianceStore* compliance_ = nullptr;
};

TEST_F(PgStoreTest, ResentReportIsStoredOnce) {
  auto p = SamplePosture();
  const std::string id = "0f8fad5b-d9cb-469f-a165-70867728950e";
  auto first = store_->SaveReport(Incoming(p, id));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, SaveOutcome::kStored);
  auto again = store_->SaveReport(Incoming(p, id));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, SaveOutcome::kDuplicate);
  // Even with different content, the same id is a no-op.
  auto changed = p;
  changed.mutable_server()->set_require_signing(true);
  auto third = store_->SaveReport(Incoming(changed, id));
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(*third, SaveOutcome::kDuplicate);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports"), "1");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures"), "1");
}

TEST_F(PgStoreTest, UnchangedPostureOnlyMovesLastSeen) {
  auto p = SamplePosture();
  ASSERT_EQ(*store_->SaveReport(Incoming(p, "00000000-0000-4000-8000-000000000001")),
            SaveOutcome::kStored);
  std::string seen1 = QueryValue(dsn_, "SELECT last_seen FROM hosts WHERE name = 'fs01'");
  std::string changed1 = QueryValue(dsn_, "SELECT last_changed FROM hosts WHERE name = 'fs01'");
  absl::SleepFor(absl::Milliseconds(20));
  p.mutable_collected_at()->set_seconds(12345);  // a later collection of the same state
  p.mutable_sessions(0)->set_seconds_idle(99);
  ASSERT_EQ(*store_->SaveReport(Incoming(p, "00000000-0000-4000-8000-000000000002")),
            SaveOutcome::kUnchanged);
  EXPECT_NE(QueryValue(dsn_, "SELECT last_seen FROM hosts WHERE name = 'fs01'"), seen1);
  EXPECT_EQ(QueryValue(dsn_, "SELECT last_changed FROM hosts WHERE name = 'fs01'"), changed1);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures"), "1");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports"), "2");

  p.mutable_sessions(0)->set_dialect(smbfleet::v1::DIALECT_SMB_2_1);
  ASSERT_EQ(*store_->SaveReport(Incoming(p, "00000000-0000-4000-8000-000000000003")),
            SaveOutcome::kStored);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures"), "2");
  EXPECT_EQ(QueryValue(dsn_, "SELECT dialect FROM host_sessions"), "DIALECT_SMB_2_1");
}

TEST_F(PgStoreTest, LatestStateReadsBack) {
  auto p = SamplePosture();
  ASSERT_TRUE(store_->SaveReport(Incoming(p, "00000000-0000-4000-8000-00000000000a")).ok());
  auto host = store_->GetHost("fs01");
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_TRUE(host->has_value());
  const HostRecord& r = **host;
  EXPECT_EQ(r.summary.name(), "fs01");
  EXPECT_EQ(r.summary.platform(), smbfleet::v1::PLATFORM_SAMBA);
  EXPECT_EQ(r.summary.sessions(), 1u);
  EXPECT_EQ(r.summary.shares(), 1u);
  EXPECT_EQ(r.summary.labels().at("site"), "ams");
  EXPECT_EQ(r.posture.sessions(0).user(), "alice");
  EXPECT_TRUE(r.posture.server().has_require_signing());
  EXPECT_FALSE(r.posture.server().has_encrypt_data());  // unknown stays unknown
  EXPECT_EQ(r.last_report_id, "00000000-0000-4000-8000-00000000000a");

  auto missing = store_->GetHost("nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());

  auto list = store_->ListHosts(HostQuery{"fs", "", 10});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].name(), "fs01");
  auto none = store_->ListHosts(HostQuery{"dc", "", 10});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(PgStoreTest, HostileStringsAreStoredVerbatim) {
  auto p = SamplePosture();
  const std::string hostile = "Reports'; DROP TABLE hosts; --\t\\x00\"$(calc)";
  p.mutable_shares(0)->set_name(hostile);
  p.mutable_sessions(0)->set_user(hostile);
  ASSERT_TRUE(store_->SaveReport(Incoming(p, "00000000-0000-4000-8000-00000000000b")).ok());
  auto host = store_->GetHost("fs01");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((**host).posture.shares(0).name(), hostile);
  EXPECT_EQ(QueryValue(dsn_, "SELECT user_name FROM host_sessions"), hostile);
  EXPECT_EQ(QueryValue(dsn_, "SELECT name FROM host_shares"), hostile);
}

// A value PostgreSQL refuses fails every resend the same way: INVALID_ARGUMENT (the agent sets
// the report aside), not UNAVAILABLE (which holds up the host's later reports behind it).
TEST_F(PgStoreTest, ValuesPostgresRefusesAreInvalidArgument) {
  auto nul = SamplePosture();
  nul.mutable_shares(0)->set_name(std::string("fin\0ance", 8));  // jsonb refuses \u0000
  auto s = store_->SaveReport(Incoming(nul, "00000000-0000-4000-8000-000000000101"));
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("SQLSTATE 22"));

  auto far = SamplePosture();
  far.mutable_collected_at()->set_seconds(10'000'000'000'000);  // past timestamptz's range
  s = store_->SaveReport(Incoming(far, "00000000-0000-4000-8000-000000000102"));
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("SQLSTATE 22008"));
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports"), "0");

  // The connections stay usable.
  auto ok = store_->SaveReport(Incoming(SamplePosture(), "00000000-0000-4000-8000-000000000103"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, SaveOutcome::kStored);
}

// Through the pipeline, validation refuses the same reports first and names the field.
TEST_F(PgStoreTest, PoisonReportIsRefusedNamingTheFieldAndNothingIsStored) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id("00000000-0000-4000-8000-000000000104");
  *r.mutable_posture() = SamplePosture();
  r.mutable_posture()->mutable_sessions(0)->mutable_shares(0)->set_name(std::string("x\0", 2));
  r.mutable_posture()->add_events()->mutable_time()->set_seconds(-62'135'596'801);
  ReportPipeline pipeline(store_, compliance_, nullptr);
  auto result = pipeline.Ingest("fs01", r);
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("posture.sessions[0].shares[0].name: contains U+0000"));
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("posture.events[0].time"));
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM hosts"), "0");
}

TEST(PgStoreDeadDatabaseTest, SaysWhereAndHidesPassword) {
  auto store = NewPgStore("postgresql://smbfleet:s3cret@127.0.0.1:1/smbfleet", 1);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsUnavailable(store.status())) << store.status();
  std::string m(store.status().message());
  EXPECT_THAT(m, HasSubstr("127.0.0.1"));
  EXPECT_THAT(m, HasSubstr("port=1"));
  EXPECT_THAT(m, Not(HasSubstr("s3cret")));
}

TEST(RedactDsnTest, DropsPasswords) {
  EXPECT_EQ(RedactDsn("host=db port=5432 dbname=x user=u password=p"),
            "user=u dbname=x host=db port=5432");
  EXPECT_THAT(RedactDsn("postgresql://u:p@h:1/d"), Not(HasSubstr(":p@")));
}

}  // namespace
}  // namespace smbfleet::collector

namespace smbfleet::collector {
namespace {

smbfleet::policy::Policy Baseline() {
  std::string path = std::string(SMBFLEET_SOURCE_DIR) + "/policy/policies/baseline.yaml";
  FILE* f = std::fopen(path.c_str(), "r");
  std::string text;
  char buf[4096];
  size_t n;
  while (f != nullptr && (n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  if (f != nullptr) std::fclose(f);
  auto p = smbfleet::policy::ParsePolicy(path, text);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

TEST_F(PgStoreTest, ComplianceHistoryFindingsAndWaivers) {
  auto policy = Baseline();
  ASSERT_TRUE(compliance_->ActivatePolicy(policy.name, policy.version, "text").ok());
  auto p = SamplePosture();
  p.mutable_server()->set_smb1_enabled(true);
  ASSERT_EQ(*store_->SaveReport(Incoming(p, "00000000-0000-4000-8000-0000000000c1")),
            SaveOutcome::kStored);
  auto t0 = absl::FromUnixSeconds(1'800'000'000);
  auto eval = smbfleet::policy::EvaluateHost(policy, p, {}, t0);
  auto n = RecordEvaluation(*compliance_, "fs01", eval);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, static_cast<size_t>(eval.results_size()));  // first results: one each

  auto findings = compliance_->ListFindings("fs01", "smb1-server-disabled", 10);
  ASSERT_TRUE(findings.ok()) << findings.status();
  ASSERT_EQ(findings->size(), 1u);
  EXPECT_EQ((*findings)[0].failing_since().seconds(), 1'800'000'000);
  ASSERT_GT((*findings)[0].evidence_size(), 0);
  EXPECT_EQ((*findings)[0].evidence(0).observed(), "true");

  // Same state an hour later: no new transitions, still failing since t0.
  auto again = smbfleet::policy::EvaluateHost(policy, p, {}, t0 + absl::Hours(1));
  EXPECT_EQ(*RecordEvaluation(*compliance_, "fs01", again), 0u);
  EXPECT_EQ(
      (*compliance_->ListFindings("fs01", "smb1-server-disabled", 10))[0].failing_since().seconds(),
      1'800'000'000);

  // A waiver approved by someone else makes it WAIVED while it lasts.
  smbfleet::testing::QueryValue(
      dsn_,
      "INSERT INTO waivers (id, rule_id, host_name, justification, approved_by, created_by, "
      "created_at, expires_at) VALUES ('w1', 'smb1-server-disabled', 'fs01', 'legacy scanner "
      "until March', 'carol', 'bob', now() - interval '1 hour', now() + interval '1 day') "
      "RETURNING id");
  auto waivers = compliance_->ActiveWaivers();
  ASSERT_TRUE(waivers.ok()) << waivers.status();
  ASSERT_EQ(waivers->size(), 1u);
  auto waived = smbfleet::policy::EvaluateHost(policy, p, *waivers, absl::Now());
  ASSERT_TRUE(RecordEvaluation(*compliance_, "fs01", waived).ok());
  EXPECT_TRUE(compliance_->ListFindings("fs01", "smb1-server-disabled", 10)->empty());
  EXPECT_EQ(
      smbfleet::testing::QueryValue(
          dsn_, "SELECT status FROM compliance_results WHERE rule_id = 'smb1-server-disabled'"),
      "WAIVED");

  auto compliance = compliance_->GetCompliance();
  ASSERT_TRUE(compliance.ok()) << compliance.status();
  EXPECT_EQ(compliance->policy_name(), "baseline");
  bool seen = false;
  for (const auto& r : compliance->rules()) {
    if (r.rule_id() == "smb1-server-disabled") {
      seen = true;
      EXPECT_EQ(r.waived(), 1u);
      EXPECT_DOUBLE_EQ(r.compliant_pct(), 100.0);
    }
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(
      smbfleet::testing::QueryValue(dsn_,
                                    "SELECT count(*) FROM compliance_transitions WHERE rule_id = "
                                    "'smb1-server-disabled'"),
      "2");  // first NON_COMPLIANT, then WAIVED
}

class NoStreams : public PushRouter {
 public:
  bool Send(const std::string&, const smbfleet::v1::WatchResponse&) override { return false; }
  bool Connected(const std::string&) const override { return false; }
};

// GetReadiness reads the stored posture (sessions and events) back from PostgreSQL.
TEST_F(PgStoreTest, ReadinessFindsTheClientsOfStoredPostures) {
  auto policy = Baseline();
  ASSERT_TRUE(compliance_->ActivatePolicy(policy.name, policy.version, "text").ok());
  const std::string hostile = "x'); DROP TABLE hosts; -- <script>alert(1)</script>";
  auto p = SamplePosture();
  p.mutable_server()->set_smb1_enabled(true);
  p.clear_sessions();
  auto* s = p.add_sessions();
  s->set_session_id("77");
  s->set_client_address("10.1.2.3");
  s->set_client_name(hostile);
  s->set_user("LAB\\scanner");
  s->set_dialect(smbfleet::v1::DIALECT_SMB1);
  ASSERT_EQ(*store_->SaveReport(Incoming(p, "00000000-0000-4000-8000-0000000000e1")),
            SaveOutcome::kStored);
  auto eval = smbfleet::policy::EvaluateHost(policy, p, {}, absl::Now());
  ASSERT_TRUE(RecordEvaluation(*compliance_, "fs01", eval).ok());

  auto changes = std::move(stores_.changes);
  changes::ChangeService workflow(changes.get(), store_, compliance_, &policy, {});
  NoStreams router;
  AdminApi api(store_, compliance_, &router, changes.get(), &workflow);
  smbfleet::v1::GetReadinessRequest req;
  req.set_rule_id("smb1-server-disabled");
  auto got = api.GetReadiness(PrincipalFromIdentity({"vera", "operator", "viewer"}), req);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->hosts_considered(), 1u);
  ASSERT_EQ(got->clients_size(), 1) << got->DebugString();
  EXPECT_EQ(got->clients(0).client_name(), hostile);
  EXPECT_EQ(got->clients(0).user(), "LAB\\scanner");
  EXPECT_THAT(got->clients(0).hosts(), ::testing::ElementsAre("fs01"));
  EXPECT_EQ(smbfleet::testing::QueryValue(dsn_, "SELECT count(*) FROM hosts"), "1");
}

TEST_F(PgStoreTest, GetHostShowsTheClassificationOfTheLatestEvaluation) {
  auto policy = Baseline();
  ASSERT_TRUE(compliance_->ActivatePolicy(policy.name, policy.version, "text").ok());
  auto p = SamplePosture();
  ASSERT_EQ(*store_->SaveReport(Incoming(p, "00000000-0000-4000-8000-0000000000d1")),
            SaveOutcome::kStored);
  auto before = store_->GetHost("fs01");
  ASSERT_TRUE(before.ok() && before->has_value());
  EXPECT_EQ((**before).posture.shares(0).classification(), "");  // not evaluated yet

  auto eval = smbfleet::policy::EvaluateHost(policy, p, {}, absl::Now());
  ASSERT_EQ(eval.classifications_size(), 1);
  ASSERT_TRUE(RecordEvaluation(*compliance_, "fs01", eval).ok());
  auto host = store_->GetHost("fs01");
  ASSERT_TRUE(host.ok() && host->has_value()) << host.status();
  EXPECT_EQ((**host).posture.shares(0).classification(), eval.classifications(0).classification());
  EXPECT_EQ((**host).posture.shares(0).classification_rule(), eval.classifications(0).rule());
  EXPECT_FALSE((**host).posture.shares(0).classification().empty());
}

TEST_F(PgStoreTest, UnchangedHostIsNotEvaluatedAgainEvenAfterARestart) {
  auto policy = Baseline();
  ASSERT_TRUE(compliance_->ActivatePolicy(policy.name, policy.version, "text").ok());
  smbfleet::v1::ReportRequest r;
  r.set_report_id("00000000-0000-4000-8000-0000000000e1");
  *r.mutable_posture() = SamplePosture();
  ReportPipeline pipeline(store_, compliance_, &policy);
  auto first = pipeline.Ingest("fs01", r);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->evaluated);
  EXPECT_GT(first->transitions, 0u);
  const std::string results = QueryValue(dsn_, "SELECT count(*) FROM compliance_results");

  // A new collector process (or another replica) over the same database.
  auto restarted = NewPgStore(dsn_, 1);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  ReportPipeline again(restarted->hosts.get(), restarted->compliance.get(), &policy);
  r.set_report_id("00000000-0000-4000-8000-0000000000e2");
  auto second = again.Ingest("fs01", r);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->outcome, SaveOutcome::kUnchanged);
  EXPECT_FALSE(second->evaluated);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM compliance_results"), results);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM compliance_transitions"),
            std::to_string(first->transitions));
}

TEST_F(PgStoreTest, EvaluationSavedAfterAnotherIsAborted) {
  auto policy = Baseline();
  ASSERT_TRUE(compliance_->ActivatePolicy(policy.name, policy.version, "text").ok());
  auto p = SamplePosture();
  ASSERT_TRUE(store_->SaveReport(Incoming(p, "00000000-0000-4000-8000-0000000000f1")).ok());
  auto eval = smbfleet::policy::EvaluateHost(policy, p, {}, absl::Now());
  ASSERT_TRUE(RecordEvaluation(*compliance_, "fs01", eval, "key-1").ok());
  EXPECT_EQ(*compliance_->EvaluationKey("fs01"), "key-1");

  EvaluationWrite stale;
  stale.host = "fs01";
  stale.evaluation = &eval;
  stale.evaluation_key = "key-2";
  stale.expected_key = "";  // read before key-1 was saved
  EXPECT_TRUE(absl::IsAborted(compliance_->SaveEvaluation(stale)));
  EXPECT_EQ(*compliance_->EvaluationKey("fs01"), "key-1");
  stale.expected_key = "key-1";
  EXPECT_TRUE(compliance_->SaveEvaluation(stale).ok());
  EXPECT_EQ(*compliance_->EvaluationKey("fs01"), "key-2");
}

TEST_F(PgStoreTest, EvaluationOfUnknownHostIsNotFound) {
  smbfleet::v1::HostEvaluation e;
  e.set_policy_name("baseline");
  EXPECT_TRUE(absl::IsNotFound(RecordEvaluation(*compliance_, "ghost", e).status()));
}

smbfleet::v1::ReportRequest Request(const std::string& id, const smbfleet::v1::Posture& p) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id(id);
  *r.mutable_posture() = p;
  return r;
}

// The same report on two connections at once is one row and one evaluation; another host
// reusing the id is a row of its own.
TEST_F(PgStoreTest, SameReportOnTwoConnectionsIsOneRowAndOneEvaluation) {
  auto policy = Baseline();
  ASSERT_TRUE(compliance_->ActivatePolicy(policy.name, policy.version, "text").ok());
  auto p = SamplePosture();
  p.mutable_server()->set_smb1_enabled(true);
  const auto report = Request("00000000-0000-4000-8000-000000000201", p);
  ReportPipeline pipeline(store_, compliance_, &policy);
  absl::StatusOr<IngestResult> a, b;
  std::thread t1([&] { a = pipeline.Ingest("fs01", report); });
  std::thread t2([&] { b = pipeline.Ingest("fs01", report); });
  t1.join();
  t2.join();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((a->outcome == SaveOutcome::kDuplicate) + (b->outcome == SaveOutcome::kDuplicate), 1);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports"), "1");
  // Both may evaluate; the one that finds the other's key stored records nothing.
  const size_t results = a->transitions + b->transitions;
  EXPECT_EQ(std::min(a->transitions, b->transitions), 0u);
  EXPECT_GT(results, 0u);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM compliance_transitions"),
            std::to_string(results));

  auto other = pipeline.Ingest("fs02", report);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->outcome, SaveOutcome::kStored);
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT count(*) FROM reports WHERE report_id = "
                       "'00000000-0000-4000-8000-000000000201'"),
            "2");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures"), "2");
}

// Stored whole, evaluated exactly once: after a failed evaluation (not acknowledged), after an
// evaluation whose COMMIT answer was lost, and after a collector that died between the two.
TEST_F(PgStoreTest, EvaluationHappensExactlyOnceAcrossFailuresAndResends) {
  auto policy = Baseline();
  ASSERT_TRUE(compliance_->ActivatePolicy(policy.name, policy.version, "text").ok());
  testing::FlakyComplianceStore flaky(compliance_);
  ReportPipeline pipeline(store_, &flaky, &policy);
  auto transitions = [&] {
    return QueryValue(dsn_, "SELECT count(*) FROM compliance_transitions");
  };

  // 1. Evaluation fails before saving: UNAVAILABLE, the report is stored, the resend evaluates.
  auto p = SamplePosture();
  const auto first = Request("00000000-0000-4000-8000-000000000301", p);
  flaky.FailNextSave(testing::FlakyComplianceStore::When::kBeforeSave,
                     absl::UnavailableError("PostgreSQL is not reachable"));
  auto r = pipeline.Ingest("fs01", first);
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports"), "1");
  EXPECT_EQ(transitions(), "0");
  r = pipeline.Ingest("fs01", first);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, SaveOutcome::kDuplicate);
  EXPECT_TRUE(r->evaluated);
  const std::string after_first = transitions();
  EXPECT_NE(after_first, "0");

  // 2. The evaluation commits but its answer is lost: the resend does not record it again.
  p.mutable_server()->set_smb1_enabled(true);
  const auto second = Request("00000000-0000-4000-8000-000000000302", p);
  flaky.FailNextSave(testing::FlakyComplianceStore::When::kAfterSave,
                     absl::UnavailableError("connection lost during COMMIT"));
  EXPECT_TRUE(absl::IsUnavailable(pipeline.Ingest("fs01", second).status()));
  const std::string after_second = transitions();
  EXPECT_EQ(std::stoi(after_second), std::stoi(after_first) + 1);  // smb1: COMPLIANT -> NON_
  r = pipeline.Ingest("fs01", second);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, SaveOutcome::kDuplicate);
  EXPECT_FALSE(r->evaluated);
  EXPECT_EQ(transitions(), after_second);

  // 3. Stored, then the collector died before evaluating: the agent's resend evaluates.
  p.mutable_server()->set_smb1_enabled(false);
  const auto third = Request("00000000-0000-4000-8000-000000000303", p);
  IncomingReport stored = Incoming(third.posture(), third.report_id());
  ASSERT_EQ(*store_->SaveReport(stored), SaveOutcome::kStored);
  r = pipeline.Ingest("fs01", third);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, SaveOutcome::kDuplicate);
  EXPECT_TRUE(r->evaluated);
  EXPECT_EQ(r->transitions, 1u);
  EXPECT_EQ(std::stoi(transitions()), std::stoi(after_second) + 1);
  EXPECT_EQ(flaky.saves(), 3u);
}

// A report collected before the host's current state, arriving late, is history only: its
// posture row is kept, but host_state, sessions, shares, host columns and the evaluation stay.
TEST_F(PgStoreTest, OlderReportArrivingLateIsHistoryOnly) {
  auto policy = Baseline();
  ASSERT_TRUE(compliance_->ActivatePolicy(policy.name, policy.version, "text").ok());
  ReportPipeline pipeline(store_, compliance_, &policy);
  auto now = SamplePosture();
  now.mutable_collected_at()->set_seconds(1'800'000'600);
  auto r = pipeline.Ingest("fs01", Request("00000000-0000-4000-8000-000000000402", now));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->evaluated);
  const std::string results =
      QueryValue(dsn_,
                 "SELECT string_agg(rule_id || status, ',' ORDER BY rule_id, share_name) FROM "
                 "compliance_results");
  const std::string transitions = QueryValue(dsn_, "SELECT count(*) FROM compliance_transitions");

  auto before = SamplePosture();  // ten minutes earlier: SMB1 on, another share and user
  before.mutable_collected_at()->set_seconds(1'800'000'000);
  before.mutable_server()->set_smb1_enabled(true);
  before.mutable_shares(0)->set_name("old-share");
  before.mutable_sessions(0)->set_user("mallory");
  before.mutable_host()->set_os_name("Old OS");
  r = pipeline.Ingest("fs01", Request("00000000-0000-4000-8000-000000000401", before));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, SaveOutcome::kStored);
  EXPECT_FALSE(r->current);
  EXPECT_FALSE(r->evaluated);

  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports"), "2");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures"), "2");
  EXPECT_EQ(QueryValue(dsn_, "SELECT name FROM host_shares"), "finance");
  EXPECT_EQ(QueryValue(dsn_, "SELECT user_name FROM host_sessions"), "alice");
  EXPECT_EQ(QueryValue(dsn_, "SELECT os_name FROM hosts"), "");
  EXPECT_EQ(QueryValue(dsn_, "SELECT last_report_id FROM hosts"),
            "00000000-0000-4000-8000-000000000402");
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT p.report_id FROM host_state s JOIN postures p ON p.id = "
                       "s.posture_id"),
            "00000000-0000-4000-8000-000000000402");
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT string_agg(rule_id || status, ',' ORDER BY rule_id, "
                       "share_name) FROM compliance_results"),
            results);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM compliance_transitions"), transitions);
  auto host = store_->GetHost("fs01");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((**host).posture.collected_at().seconds(), 1'800'000'600);
}

smbfleet::v1::ReportRequest DigestOnlyRequest(const std::string& id, const std::string& digest) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id(id);
  r.set_reason("schedule");
  r.set_posture_digest(digest);
  r.mutable_collected_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
  return r;
}

// Two replicas on one database: what one stores or changes, the other's digest-only answers
// follow (nothing of it is kept in a replica's memory).
TEST_F(PgStoreTest, DigestOnlyAnswersFollowWhatAnotherReplicaWrote) {
  auto policy = Baseline();
  ASSERT_TRUE(compliance_->ActivatePolicy(policy.name, policy.version, "text").ok());
  auto other = NewPgStore(dsn_, 2);
  ASSERT_TRUE(other.ok()) << other.status();
  ReportPipeline a(store_, compliance_, &policy);
  a.SetTrustedLabels(stores_.enrollment.get());
  ReportPipeline b(other->hosts.get(), other->compliance.get(), &policy);
  b.SetTrustedLabels(other->enrollment.get());

  smbfleet::v1::ReportRequest first;
  first.set_report_id("00000000-0000-4000-8000-0000000000d1");
  *first.mutable_posture() = SamplePosture();
  const std::string old_digest = PostureDigest(first.posture());
  ASSERT_TRUE(a.Ingest("fs01", first)->evaluated);
  auto same =
      a.Ingest("fs01", DigestOnlyRequest("00000000-0000-4000-8000-0000000000d2", old_digest));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->outcome, SaveOutcome::kUnchanged);
  EXPECT_FALSE(same->send_full);

  // The host moves to B with a new posture, then back to A with the old digest.
  smbfleet::v1::ReportRequest changed = first;
  changed.set_report_id("00000000-0000-4000-8000-0000000000d3");
  changed.mutable_posture()->mutable_server()->set_require_signing(true);
  ASSERT_EQ(b.Ingest("fs01", changed)->outcome, SaveOutcome::kStored);
  auto stale =
      a.Ingest("fs01", DigestOnlyRequest("00000000-0000-4000-8000-0000000000d4", old_digest));
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_TRUE(stale->send_full);
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT count(*) FROM reports WHERE report_id = "
                       "'00000000-0000-4000-8000-0000000000d4'"),
            "0");
  const std::string new_digest = PostureDigest(changed.posture());
  auto current =
      a.Ingest("fs01", DigestOnlyRequest("00000000-0000-4000-8000-0000000000d5", new_digest));
  ASSERT_TRUE(current.ok()) << current.status();
  EXPECT_FALSE(current->send_full);

  // Labels set through B: A's next digest-only report asks for the posture.
  ASSERT_TRUE(
      other->enrollment->SetHostLabels("fs01", {{"tier", "lab"}}, "alice", absl::Now()).ok());
  auto due =
      a.Ingest("fs01", DigestOnlyRequest("00000000-0000-4000-8000-0000000000d6", new_digest));
  ASSERT_TRUE(due.ok()) << due.status();
  EXPECT_TRUE(due->send_full);
}

// Many hosts' digest-only reports at once through one pipeline: batched, each stored once.
TEST_F(PgStoreTest, ConcurrentDigestOnlyReportsAreEachStoredOnce) {
  ReportPipeline pipeline(store_, compliance_, nullptr);
  smbfleet::v1::ReportRequest full;
  *full.mutable_posture() = SamplePosture();
  const std::string digest = PostureDigest(full.posture());
  constexpr int kHosts = 16;
  constexpr int kReports = 20;
  for (int h = 0; h < kHosts; ++h) {
    full.set_report_id(absl::StrCat("00000000-0000-4000-8000-", absl::Dec(h, absl::kZeroPad12)));
    ASSERT_EQ(pipeline.Ingest(absl::StrCat("host-", h), full)->outcome, SaveOutcome::kStored);
  }
  std::atomic<int> unchanged{0};
  std::vector<std::thread> threads;
  threads.reserve(kHosts);
  for (int h = 0; h < kHosts; ++h) {
    threads.emplace_back([&, h] {
      for (int i = 1; i <= kReports; ++i) {
        const std::string id =
            absl::StrCat("00000000-0000-4000-", absl::Dec(1000 + i, absl::kZeroPad4), "-",
                         absl::Dec(h, absl::kZeroPad12));
        auto r = pipeline.Ingest(absl::StrCat("host-", h), DigestOnlyRequest(id, digest));
        if (r.ok() && r->outcome == SaveOutcome::kUnchanged && !r->send_full) ++unchanged;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(unchanged.load(), kHosts * kReports);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports WHERE NOT changed"),
            std::to_string(kHosts * kReports));
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(DISTINCT last_report_id) FROM hosts"),
            std::to_string(kHosts));
}

}  // namespace
}  // namespace smbfleet::collector

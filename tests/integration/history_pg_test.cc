// The history by day on PostgreSQL (migration 0016, HistoryStore, HistoryJob): a database with
// rows migrates, old days are dropped while current state stays, days are made ahead, a report
// on a day with no partition is stored, and one pass runs at a time.

#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/ingest/digest.h"
#include "collector/server/history_job.h"
#include "collector/store/postgres/migrations.h"
#include "collector/store/postgres/pg_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

using ::smbfleet::testing::CreateTestDatabase;
using ::smbfleet::testing::QueryValue;
using ::testing::Contains;
using ::testing::Not;

constexpr char kHistoryTables[] =
    "('postures', 'reports', 'host_events', 'compliance_transitions', 'host_benchmarks')";

smbfleet::v1::Posture PostureOf(const std::string& host, const std::string& share) {
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname(host);
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  auto* s = p.add_shares();
  s->set_name(share);
  s->set_path("/srv/" + share);
  return p;
}

IncomingReport Incoming(const smbfleet::v1::Posture& p, const std::string& id, absl::Time at) {
  IncomingReport r;
  r.host = p.host().hostname();
  r.report_id = id;
  r.reason = "test";
  r.posture = &p;
  r.digest = PostureDigest(p);
  r.size_bytes = p.ByteSizeLong();
  r.received_at = at;
  return r;
}

// The partition name of `table` for the UTC day of `t`.
std::string PartitionOf(const std::string& table, absl::Time t) {
  return absl::StrCat(table, "_p", absl::FormatTime("%Y%m%d", t, absl::UTCTimeZone()));
}

bool TableExists(const std::string& dsn, const std::string& name) {
  return QueryValue(dsn, absl::StrCat("SELECT to_regclass('", name, "') IS NOT NULL")) == "t";
}

class HistoryPgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    auto stores = NewPgStore(dsn_, 2);
    ASSERT_TRUE(stores.ok()) << stores.status();
    stores_ = *std::move(stores);
    ASSERT_NE(stores_.history, nullptr);
  }
  std::string dsn_;
  Stores stores_;
};

// A database at 0015 with rows in every history table keeps them, its views and its readers.
TEST(HistoryMigrationTest, DatabaseWithRowsMigrates) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = CreateTestDatabase();
  std::vector<Migration> before;
  for (const Migration& m : BuiltinMigrations()) {
    if (m.version < "0016") before.push_back(m);
  }
  ASSERT_TRUE(ApplyMigrations(dsn, before).ok());
  QueryValue(dsn,
             "WITH h AS (INSERT INTO hosts (name, first_seen, last_seen) VALUES ('fs01', now(), "
             "now()) RETURNING id), "
             "r AS (INSERT INTO reports (report_id, host_id, received_at, posture_hash, changed, "
             "size_bytes) SELECT '00000000-0000-4000-8000-000000000601', id, now() - interval "
             "'40 days', '\\x01', true, 1 FROM h), "
             "p AS (INSERT INTO postures (host_id, report_id, stored_at, posture_hash, posture, "
             "posture_json) SELECT id, '00000000-0000-4000-8000-000000000601', now() - interval "
             "'40 days', '\\x01', '', '{\"server\": {\"encryptData\": true}, \"events\": "
             "[{\"eventId\": \"3000\", \"kind\": \"smb1_access\", \"time\": "
             "\"2026-01-02T03:04:05Z\"}]}' FROM h RETURNING id, host_id), "
             "s AS (INSERT INTO host_shares (host_id, name, path, classification) SELECT id, "
             "'finance', '/srv/finance', 'confidential' FROM h), "
             "b AS (INSERT INTO host_benchmarks VALUES ((SELECT id FROM h), now() - interval "
             "'40 days', 'AES-128-GCM', 65536, 1, 1e9)) "
             "INSERT INTO host_state (host_id, posture_id, updated_at) SELECT host_id, id, now() "
             "FROM p RETURNING host_id");
  QueryValue(dsn,
             "INSERT INTO policy_versions (policy_name, version, active) VALUES ('p', '1', true); "
             "INSERT INTO compliance_transitions (host_id, policy_name, policy_version, rule_id, "
             "from_status, to_status, at) SELECT id, 'p', '1', 'r1', NULL, 'NON_COMPLIANT', "
             "now() - interval '40 days' FROM hosts RETURNING id");
  const std::string views_before =
      QueryValue(dsn,
                 "SELECT string_agg(viewname, ',' ORDER BY viewname) FROM pg_views "
                 "WHERE schemaname = current_schema()");
  const std::string trend_before = QueryValue(dsn, "SELECT sum(n) FROM compliance_trend_counts");

  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  EXPECT_EQ(QueryValue(dsn, absl::StrCat("SELECT count(*) FROM pg_class WHERE relkind = 'p' "
                                         "AND relname IN ",
                                         kHistoryTables)),
            "5");
  // The views of 0015 are all there again (posture_documents is 0019's).
  EXPECT_EQ(QueryValue(dsn,
                       "SELECT string_agg(viewname, ',' ORDER BY viewname) FROM pg_views "
                       "WHERE schemaname = current_schema() AND viewname <> 'posture_documents'"),
            views_before);
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM reports"), "1");
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM report_ids"), "1");
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM postures"), "1");
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM host_events"), "1");
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM host_benchmarks"), "1");
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM compliance_transitions"), "1");
  EXPECT_EQ(QueryValue(dsn, "SELECT sum(n) FROM compliance_trend_counts"), trend_before);
  // The rows sit in their day's partition, the views read them.
  EXPECT_EQ(QueryValue(dsn,
                       "SELECT tableoid::regclass::text = 'postures_p' || "
                       "to_char(stored_at AT TIME ZONE 'UTC', 'YYYYMMDD') FROM postures"),
            "t");
  EXPECT_EQ(QueryValue(dsn,
                       "SELECT tableoid::regclass::text = 'reports_p' || "
                       "to_char(received_at AT TIME ZONE 'UTC', 'YYYYMMDD') FROM reports"),
            "t");
  EXPECT_EQ(QueryValue(dsn, "SELECT encrypted FROM share_encryption"), "t");
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM smb_security_events"), "1");
  EXPECT_EQ(QueryValue(dsn,
                       "SELECT count(*) FROM host_state WHERE posture_stored_at = "
                       "(SELECT stored_at FROM postures)"),
            "1");

  // The stores read and write the migrated tables: the report id is still known, the current
  // posture is replaced, a new posture's events arrive by the trigger, ids go on from the sequence.
  auto stores = NewPgStore(dsn, 1);
  ASSERT_TRUE(stores.ok()) << stores.status();
  smbfleet::v1::Posture p = PostureOf("fs01", "finance");
  auto again =
      stores->hosts->SaveReport(Incoming(p, "00000000-0000-4000-8000-000000000601", absl::Now()));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, SaveOutcome::kDuplicate);
  auto* e = p.add_events();
  e->set_event_id(3000);
  e->set_kind("smb1_access");
  auto fresh =
      stores->hosts->SaveReport(Incoming(p, "00000000-0000-4000-8000-000000000602", absl::Now()));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(*fresh, SaveOutcome::kStored);
  EXPECT_EQ(QueryValue(dsn, "SELECT count(*) FROM host_events"), "2");
  EXPECT_EQ(QueryValue(dsn, "SELECT count(DISTINCT id) FROM postures"), "2");
}

// Days older than the retention go, except the one holding fs02's current posture; days are
// made ahead.
TEST_F(HistoryPgTest, OldDaysDroppedCurrentPostureKept) {
  const absl::Time now = absl::Now();
  const absl::Time old = now - absl::Hours(24 * 200);
  auto first = stores_.history->Maintain(old, absl::Hours(24 * 90), 3);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->ran);
  EXPECT_THAT(first->created, Contains(PartitionOf("postures", old)));

  smbfleet::v1::Posture a1 = PostureOf("fs01", "finance");
  smbfleet::v1::Posture a2 = PostureOf("fs01", "payroll");
  smbfleet::v1::Posture b1 = PostureOf("fs02", "archive");
  const absl::Time b_at = old + absl::Hours(24);
  ASSERT_EQ(*stores_.hosts->SaveReport(Incoming(a1, "00000000-0000-4000-8000-000000000701", old)),
            SaveOutcome::kStored);
  ASSERT_EQ(*stores_.hosts->SaveReport(Incoming(b1, "00000000-0000-4000-8000-000000000702", b_at)),
            SaveOutcome::kStored);
  ASSERT_EQ(*stores_.hosts->SaveReport(Incoming(a2, "00000000-0000-4000-8000-000000000703", now)),
            SaveOutcome::kStored);

  auto pass = stores_.history->Maintain(now, absl::Hours(24 * 90), 3);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_TRUE(pass->ran);
  EXPECT_THAT(pass->dropped, Contains(PartitionOf("postures", old)));
  EXPECT_THAT(pass->dropped, Contains(PartitionOf("reports", old)));
  EXPECT_THAT(pass->dropped, Contains(PartitionOf("reports", b_at)));
  EXPECT_THAT(pass->kept, Contains(PartitionOf("postures", b_at)));
  EXPECT_THAT(pass->dropped, Not(Contains(PartitionOf("postures", b_at))));
  EXPECT_FALSE(TableExists(dsn_, PartitionOf("postures", old)));
  EXPECT_TRUE(TableExists(dsn_, PartitionOf("postures", b_at)));
  // Days ahead: three after today, none further.
  EXPECT_TRUE(TableExists(dsn_, PartitionOf("postures", now + absl::Hours(72))));
  EXPECT_TRUE(TableExists(dsn_, PartitionOf("compliance_transitions", now + absl::Hours(72))));
  EXPECT_FALSE(TableExists(dsn_, PartitionOf("postures", now + absl::Hours(24 * 5))));

  // Both hosts' current postures are whole; fs01's first one and the old reports are gone.
  auto b = stores_.hosts->GetHost("fs02");
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(b->has_value());
  EXPECT_EQ((*b)->posture.shares(0).name(), "archive");
  auto postures = stores_.hosts->CurrentPostures({"fs01", "fs02"});
  ASSERT_TRUE(postures.ok()) << postures.status();
  EXPECT_EQ(postures->size(), 2u);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures"), "2");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports"), "1");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM report_ids"), "1");

  // Once fs02 moves on, its old day goes at the next pass.
  smbfleet::v1::Posture b2 = PostureOf("fs02", "archive2");
  ASSERT_EQ(*stores_.hosts->SaveReport(Incoming(b2, "00000000-0000-4000-8000-000000000704", now)),
            SaveOutcome::kStored);
  auto next = stores_.history->Maintain(now, absl::Hours(24 * 90), 3);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_THAT(next->dropped, Contains(PartitionOf("postures", b_at)));
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures"), "2");
}

// A retention of 0 keeps every day.
TEST_F(HistoryPgTest, NoRetentionKeepsEverything) {
  const absl::Time old = absl::Now() - absl::Hours(24 * 400);
  ASSERT_TRUE(stores_.history->Maintain(old, absl::ZeroDuration(), 1).ok());
  smbfleet::v1::Posture a = PostureOf("fs01", "finance");
  ASSERT_EQ(*stores_.hosts->SaveReport(Incoming(a, "00000000-0000-4000-8000-000000000801", old)),
            SaveOutcome::kStored);
  auto pass = stores_.history->Maintain(absl::Now(), absl::ZeroDuration(), 1);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_TRUE(pass->dropped.empty());
  EXPECT_TRUE(TableExists(dsn_, PartitionOf("reports", old)));
}

// A report on a day with no partition lands in the default partition; the pass that makes its
// day moves it there. A resend the next day is still a duplicate.
TEST_F(HistoryPgTest, ReportOnADayWithoutPartitionIsStored) {
  const absl::Time later = absl::Now() + absl::Hours(24 * 20);
  smbfleet::v1::Posture a = PostureOf("fs01", "finance");
  ASSERT_EQ(*stores_.hosts->SaveReport(Incoming(a, "00000000-0000-4000-8000-000000000901", later)),
            SaveOutcome::kStored);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports_default"), "1");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures_default"), "1");

  auto pass = stores_.history->Maintain(later, absl::Hours(24 * 90), 1);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_THAT(pass->created, Contains(PartitionOf("reports", later)));
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports_default"), "0");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures_default"), "0");
  EXPECT_EQ(QueryValue(dsn_, absl::StrCat("SELECT count(*) FROM ", PartitionOf("reports", later))),
            "1");
  auto host = stores_.hosts->GetHost("fs01");
  ASSERT_TRUE(host.ok() && host->has_value());
  EXPECT_EQ((*host)->posture.shares(0).name(), "finance");

  auto resent = stores_.hosts->SaveReport(
      Incoming(a, "00000000-0000-4000-8000-000000000901", later + absl::Hours(24)));
  ASSERT_TRUE(resent.ok()) << resent.status();
  EXPECT_EQ(*resent, SaveOutcome::kDuplicate);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports"), "1");
}

// Each table is trimmed in a transaction of its own (migration 0020): while a reader holds
// host_benchmarks, an old day of compliance_transitions (trimmed before it) is already gone for
// everyone, so the trim holds no table's lock while it waits for another's. Once the reader
// ends, the pass finishes and drops the old days of every table.
TEST_F(HistoryPgTest, EachTableIsTrimmedInATransactionOfItsOwn) {
  const absl::Time now = absl::Now();
  const absl::Time old = now - absl::Hours(24 * 200);
  ASSERT_TRUE(stores_.history->Maintain(old, absl::ZeroDuration(), 1).ok());
  // Today's days made first: making one waits for the reader too (attaching locks the default).
  ASSERT_TRUE(stores_.history->Maintain(now, absl::ZeroDuration(), 1).ok());
  ASSERT_TRUE(TableExists(dsn_, PartitionOf("compliance_transitions", old)));

  pqxx::connection reader(dsn_);
  pqxx::work holding(reader);
  holding.exec("LOCK TABLE host_benchmarks IN ACCESS SHARE MODE");
  absl::StatusOr<HistoryPass> pass;
  std::thread trim([&] { pass = stores_.history->Maintain(now, absl::Hours(24 * 90), 1); });
  bool gone_while_held = false;
  for (int i = 0; i < 100 && !gone_while_held; ++i) {
    gone_while_held = !TableExists(dsn_, PartitionOf("compliance_transitions", old));
    if (!gone_while_held) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(TableExists(dsn_, PartitionOf("host_benchmarks", old)));
  holding.abort();
  trim.join();
  EXPECT_TRUE(gone_while_held) << "the old day of compliance_transitions stayed while the trim "
                                  "waited for host_benchmarks";
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_THAT(pass->dropped, Contains(PartitionOf("host_benchmarks", old)));
  EXPECT_THAT(pass->dropped, Contains(PartitionOf("postures", old)));
  EXPECT_FALSE(TableExists(dsn_, PartitionOf("host_benchmarks", old)));
}

// history_trim (every table at once, for use by hand) is still there and trims as the pass
// does; history_trim_table refuses a table that is not history.
TEST_F(HistoryPgTest, TrimByHandAndRefusal) {
  const absl::Time old = absl::Now() - absl::Hours(24 * 200);
  ASSERT_TRUE(stores_.history->Maintain(old, absl::ZeroDuration(), 1).ok());
  ASSERT_TRUE(TableExists(dsn_, PartitionOf("reports", old)));
  // The pass made the day before, the day and the day after: all three are dropped.
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT count(*) FROM history_trim(now() - interval '90 days') "
                       "WHERE outcome = 'dropped' AND relation LIKE 'reports_p%'"),
            "3");
  EXPECT_FALSE(TableExists(dsn_, PartitionOf("reports", old)));
  EXPECT_FALSE(TableExists(dsn_, PartitionOf("reports", old + absl::Hours(24))));
  pqxx::connection c(dsn_);
  pqxx::work tx(c);
  EXPECT_THROW(tx.exec("SELECT * FROM history_trim_table('hosts', now())"), pqxx::sql_error);
}

// A second collector's pass finds the first one's lock and skips.
TEST_F(HistoryPgTest, OnePassAtATime) {
  pqxx::connection other(dsn_);
  pqxx::nontransaction tx(other);
  tx.exec("SELECT pg_advisory_lock(hashtext('smbfleet.history'))");
  auto skipped = stores_.history->Maintain(absl::Now() + absl::Hours(24 * 30), absl::Hours(24), 1);
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_FALSE(skipped->ran);
  EXPECT_FALSE(TableExists(dsn_, PartitionOf("postures", absl::Now() + absl::Hours(24 * 30))));
  tx.exec("SELECT pg_advisory_unlock(hashtext('smbfleet.history'))");
  auto ran = stores_.history->Maintain(absl::Now() + absl::Hours(24 * 30), absl::Hours(24), 1);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(ran->ran);
  EXPECT_TRUE(TableExists(dsn_, PartitionOf("postures", absl::Now() + absl::Hours(24 * 30))));
}

// The job passes the configured retention and days ahead at its clock's time.
TEST_F(HistoryPgTest, JobRunsAPassWithItsConfig) {
  const absl::Time at = absl::Now() + absl::Hours(24 * 50);
  HistoryConfig config;
  config.retention = std::chrono::hours(24 * 7);
  config.partitions_ahead = 2;
  HistoryJob job(stores_.history.get(), config, [at] { return at; });
  auto pass = job.RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_TRUE(pass->ran);
  EXPECT_TRUE(TableExists(dsn_, PartitionOf("reports", at + absl::Hours(48))));
  EXPECT_FALSE(TableExists(dsn_, PartitionOf("reports", at + absl::Hours(72))));
  // Today's partitions are older than at - 7 days, empty, and go.
  EXPECT_THAT(pass->dropped, Contains(PartitionOf("reports", absl::Now())));
}

}  // namespace
}  // namespace smbfleet::collector

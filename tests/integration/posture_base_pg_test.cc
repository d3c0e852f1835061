// Postures stored against their day's base on PostgreSQL (migration 0019, posture_codec.h): a
// host's first posture of a UTC day whole, its later ones as their difference from it, each
// read back as the posture that was reported; rows stored before the migration read as they
// were and serve as a base; the history job keeps the base of a current posture.

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collector/ingest/digest.h"
#include "collector/store/postgres/migrations.h"
#include "collector/store/postgres/pg_store.h"
#include "common/json.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

using google::protobuf::util::MessageDifferencer;
using ::smbfleet::testing::CreateTestDatabase;
using ::smbfleet::testing::QueryValue;

// fs01's posture at report `n`: the same settings and shares, `sessions` sessions of its own.
smbfleet::v1::Posture PostureAt(int n, int sessions) {
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname("fs01");
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  p.mutable_collected_at()->set_seconds(1'800'000'000 + n * 3600);
  p.mutable_server()->set_encrypt_data(true);
  for (int i = 0; i < 4; ++i) {
    auto* s = p.add_shares();
    s->set_name(absl::StrCat("share", i));
    s->set_path(absl::StrCat("/srv/samba/share", i));
  }
  for (int i = 0; i < sessions; ++i) {
    auto* s = p.add_sessions();
    s->set_session_id(absl::StrCat(n * 100'003 + i * 7'919));
    s->set_client_address(absl::StrCat("10.20.", n % 250, ".", i % 250));
    s->set_user(absl::StrCat("LAB\\user", (n + i) % 97));
    s->set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
    s->set_num_opens(static_cast<uint32_t>(n + i));
    s->add_shares()->set_name(absl::StrCat("share", i % 4));
  }
  return p;
}

IncomingReport Incoming(const smbfleet::v1::Posture& p, int n, absl::Time at) {
  IncomingReport r;
  r.host = p.host().hostname();
  r.report_id = absl::StrCat("00000000-0000-4000-8000-", absl::Dec(n, absl::kZeroPad12));
  r.reason = "test";
  r.posture = &p;
  r.digest = PostureDigest(p);
  r.size_bytes = p.ByteSizeLong();
  r.received_at = at;
  return r;
}

// The posture's JSON as a posture row keeps it (0016: without sessions and events).
std::string StoredJson(const std::string& dsn, const smbfleet::v1::Posture& p) {
  auto json = ToJson(p, /*pretty=*/false);
  EXPECT_TRUE(json.ok()) << json.status();
  pqxx::connection c(dsn);
  pqxx::work tx(c);
  return tx.exec_params1("SELECT ($1::jsonb - 'sessions' - 'events')::text", *json)[0]
      .as<std::string>();
}

// The start of `t`'s UTC day.
absl::Time DayStart(absl::Time t) {
  return absl::FromCivil(absl::CivilDay(absl::ToCivilDay(t, absl::UTCTimeZone())),
                         absl::UTCTimeZone());
}

class PostureBasePgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    dsn_ = CreateTestDatabase();
  }
  void Open() {
    auto stores = NewPgStore(dsn_, 2);
    ASSERT_TRUE(stores.ok()) << stores.status();
    stores_ = *std::move(stores);
  }
  void Save(const smbfleet::v1::Posture& p, int n, absl::Time at) {
    auto saved = stores_.hosts->SaveReport(Incoming(p, n, at));
    ASSERT_TRUE(saved.ok()) << saved.status();
    ASSERT_EQ(*saved, SaveOutcome::kStored);
  }
  // GetHost's and CurrentPostures' posture of fs01 equal `want`.
  void ExpectCurrent(const smbfleet::v1::Posture& want) {
    auto host = stores_.hosts->GetHost("fs01");
    ASSERT_TRUE(host.ok()) << host.status();
    ASSERT_TRUE(host->has_value());
    EXPECT_TRUE(MessageDifferencer::Equals((*host)->posture, want))
        << (*host)->posture.ShortDebugString();
    EXPECT_EQ((*host)->posture_digest, PostureDigest(want));
    auto current = stores_.hosts->CurrentPostures({"fs01"});
    ASSERT_TRUE(current.ok()) << current.status();
    ASSERT_EQ(current->count("fs01"), 1u);
    EXPECT_TRUE(MessageDifferencer::Equals(current->at("fs01").posture, want));
  }
  std::string dsn_;
  Stores stores_;
};

// One day's postures: the first whole, the later ones against it, each read back equal, their
// JSON whole again in posture_documents, and smaller than the whole posture.
TEST_F(PostureBasePgTest, LaterPosturesOfADayAreStoredAgainstTheFirst) {
  ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
  Open();
  const absl::Time day = DayStart(absl::Now());
  std::vector<smbfleet::v1::Posture> postures;
  for (int n = 1; n <= 3; ++n) postures.push_back(PostureAt(n, 60));
  // The third drops the server settings and adds a probe error: members the base has not, and
  // one it has that this posture has not.
  postures[2].clear_server();
  auto* probe = postures[2].add_probe_errors();
  probe->set_probe("smbstatus");
  probe->set_code("TIMEOUT");
  for (int n = 1; n <= 3; ++n) {
    Save(postures[n - 1], n, day + absl::Hours(n));
    ExpectCurrent(postures[n - 1]);
  }

  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT string_agg(CASE WHEN base_id IS NULL THEN 'plain' WHEN base_id = "
                       "(SELECT min(id) FROM postures) AND get_byte(posture, 0) = 0 THEN 'delta' "
                       "ELSE 'other' END, ',' ORDER BY id) FROM postures"),
            "plain,delta,delta");
  // The second differs from the first only by its time (sessions are not in the JSON).
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT array_to_string(ARRAY(SELECT jsonb_object_keys("
                       "posture_json) ORDER BY 1), ',') FROM postures ORDER BY id "
                       "OFFSET 1 LIMIT 1"),
            "collectedAt");
  // JSON null: the base has it, this posture has not.
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT posture_json->'server' = 'null'::jsonb FROM postures "
                       "ORDER BY id OFFSET 2 LIMIT 1"),
            "t");
  for (int n = 1; n <= 3; ++n) {
    EXPECT_EQ(QueryValue(dsn_, absl::StrCat("SELECT posture_json::text FROM posture_documents "
                                            "ORDER BY id OFFSET ",
                                            n - 1, " LIMIT 1")),
              StoredJson(dsn_, postures[n - 1]))
        << n;
  }
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT bool_and(octet_length(posture) * 2 < (SELECT "
                       "octet_length(posture) FROM postures WHERE base_id IS NULL)) FROM "
                       "postures WHERE base_id IS NOT NULL"),
            "t");

  // The host list reads the probe errors through the base as well.
  HostQuery all;
  auto hosts = stores_.hosts->ListHosts(all);
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  ASSERT_EQ(hosts->size(), 1u);
  EXPECT_EQ((*hosts)[0].probe_errors(), 1u);
  EXPECT_EQ((*hosts)[0].sessions(), 60u);

  // The next day starts from a whole posture again.
  smbfleet::v1::Posture next = PostureAt(30, 10);
  Save(next, 30, day + absl::Hours(25));
  ExpectCurrent(next);
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT base_id IS NULL FROM postures ORDER BY stored_at DESC "
                       "LIMIT 1"),
            "t");
}

// When the sessions have moved on from the base's, so that the posture before would be a far
// better base, the posture is stored whole and is the base of the next ones.
TEST_F(PostureBasePgTest, APostureFarFromItsBaseIsTheNextBase) {
  ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
  Open();
  const absl::Time day = DayStart(absl::Now());
  // 1: the base; 2: its sessions, one more open file each; 3: all sessions new; 4: 3's sessions
  // again, far from the base and near 3; 5: near 4.
  std::vector<smbfleet::v1::Posture> postures = {
      PostureAt(1, 80), PostureAt(1, 80), PostureAt(50, 80), PostureAt(50, 80), PostureAt(50, 80)};
  for (size_t i = 0; i < postures.size(); ++i) {
    postures[i].mutable_collected_at()->set_seconds(1'800'000'000 + static_cast<int64_t>(i));
    for (auto& s : *postures[i].mutable_sessions()) s.set_num_opens(s.num_opens() + i);
  }
  for (size_t i = 0; i < postures.size(); ++i) {
    Save(postures[i], static_cast<int>(i) + 1, day + absl::Minutes(10 * (static_cast<int>(i) + 1)));
    ExpectCurrent(postures[i]);
  }
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT string_agg(CASE WHEN base_id IS NULL THEN 'plain' ELSE "
                       "'delta of ' || (SELECT count(*) FROM postures o WHERE o.id <= "
                       "p.base_id) END, ',' ORDER BY id) FROM postures p"),
            "plain,delta of 1,delta of 1,plain,delta of 4");
}

// A posture stored before migration 0019 (whole) reads as it was, and is the base of the day's
// next posture.
TEST_F(PostureBasePgTest, PosturesStoredBeforeTheMigrationReadAndServeAsBase) {
  std::vector<Migration> before;
  for (const Migration& m : BuiltinMigrations()) {
    if (m.version < "0019") before.push_back(m);
  }
  ASSERT_TRUE(ApplyMigrations(dsn_, before).ok());
  const smbfleet::v1::Posture old = PostureAt(1, 40);
  std::string bytes;
  ASSERT_TRUE(old.SerializeToString(&bytes));
  auto json = ToJson(old, /*pretty=*/false);
  ASSERT_TRUE(json.ok());
  {
    pqxx::connection c(dsn_);
    pqxx::work tx(c);
    tx.exec_params(
        "WITH h AS (INSERT INTO hosts (name, first_seen, last_seen, posture_hash) VALUES ('fs01', "
        "now(), now(), decode($3, 'hex')) RETURNING id), "
        "p AS (INSERT INTO postures (host_id, report_id, stored_at, posture_hash, posture, "
        "posture_json) SELECT id, '00000000-0000-4000-8000-000000000900', now(), "
        "decode($3, 'hex'), decode($1, 'hex'), $2::jsonb FROM h RETURNING id, host_id, stored_at) "
        "INSERT INTO host_state (host_id, posture_id, posture_stored_at, updated_at) "
        "SELECT host_id, id, stored_at, now() FROM p",
        absl::BytesToHexString(bytes), *json, PostureDigest(old));
    tx.commit();
  }
  ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
  Open();
  ExpectCurrent(old);

  const smbfleet::v1::Posture now = PostureAt(2, 40);
  Save(now, 2, absl::Now());
  ExpectCurrent(now);
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT count(*) FROM postures WHERE base_id = (SELECT id FROM "
                       "postures WHERE report_id = '00000000-0000-4000-8000-000000000900')"),
            "1");
}

// On a day with no partition (the default partition, trimmed row by row at a time that is no
// day's start) the history job keeps the base of the current posture with it.
TEST_F(PostureBasePgTest, HistoryJobKeepsTheBaseOfTheCurrentPosture) {
  ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
  Open();
  const absl::Time now = absl::Now();
  const absl::Time old_day = DayStart(now - absl::Hours(24 * 40));
  const smbfleet::v1::Posture first = PostureAt(1, 30);
  const smbfleet::v1::Posture second = PostureAt(2, 30);
  Save(first, 1, old_day + absl::Hours(1));
  Save(second, 2, old_day + absl::Hours(2));
  ASSERT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures_default WHERE base_id IS NOT NULL"),
            "1");
  auto pass = stores_.history->Maintain(now, absl::Hours(24 * 30), 2);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures_default"), "2");
  ExpectCurrent(second);

  // Once the current posture is of another day, the old day's rows go.
  const smbfleet::v1::Posture today = PostureAt(3, 30);
  Save(today, 3, now);
  pass = stores_.history->Maintain(now, absl::Hours(24 * 30), 2);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures_default"), "0");
  ExpectCurrent(today);
}

// The default partition is trimmed at the cutoff, within a day: a posture after the cutoff keeps
// its base before it. Before migration 0022 the base went, the posture could no longer be read
// and its JSON in posture_documents had lost the members it shares with the base.
TEST_F(PostureBasePgTest, HistoryJobKeepsTheBaseOfAPostureItKeeps) {
  ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
  Open();
  const absl::Time now = absl::Now();
  const absl::Time old_day = DayStart(now - absl::Hours(24 * 40));
  const smbfleet::v1::Posture base = PostureAt(1, 30);
  const smbfleet::v1::Posture early = PostureAt(2, 30);
  const smbfleet::v1::Posture late = PostureAt(3, 30);
  Save(base, 1, old_day + absl::Hours(1));
  Save(early, 2, old_day + absl::Hours(2));
  Save(late, 3, old_day + absl::Hours(20));
  Save(PostureAt(4, 30), 4, now);  // the current posture is of another day
  ASSERT_EQ(QueryValue(dsn_, "SELECT count(*) FROM postures_default WHERE base_id IS NOT NULL"),
            "2");

  // The cutoff at 10:00 of the old day: `early` goes, `base` stays for `late`.
  const absl::Duration retention = now - (old_day + absl::Hours(10));
  auto pass = stores_.history->Maintain(now, retention, 2);
  ASSERT_TRUE(pass.ok()) << pass.status();
  const std::string old_rows = absl::StrCat(
      "SELECT string_agg(report_id::text, ',' ORDER BY stored_at) FROM postures WHERE "
      "stored_at < '",
      absl::FormatTime("%Y-%m-%d", old_day + absl::Hours(24), absl::UTCTimeZone()), "'");
  EXPECT_EQ(QueryValue(dsn_, old_rows),
            "00000000-0000-4000-8000-000000000001,00000000-0000-4000-8000-000000000003");
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT count(*) FROM postures p WHERE p.base_id IS NOT NULL AND NOT "
                       "EXISTS (SELECT FROM postures b WHERE b.id = p.base_id AND "
                       "b.stored_at = p.base_stored_at)"),
            "0")
      << "a posture kept without its base";
  EXPECT_EQ(QueryValue(dsn_,
                       "SELECT posture_json::text FROM posture_documents WHERE report_id = "
                       "'00000000-0000-4000-8000-000000000003'"),
            StoredJson(dsn_, late));

  // Once the cutoff has passed `late`, the whole old day goes.
  pass = stores_.history->Maintain(now, now - (old_day + absl::Hours(21)), 2);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(QueryValue(dsn_, old_rows), "") << "no row of the old day left";
}

}  // namespace
}  // namespace smbfleet::collector

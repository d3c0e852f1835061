// The PostgreSQL ChangeStore against a real server: the shared conformance suite, what only the
// schema enforces (four eyes, the append-only audit log, waiver states after the migration) and
// PgOrderSignal between two listeners.
#include <atomic>
#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "collector/store/postgres/order_signal.h"
#include "collector/store/postgres/pg_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/approver_key_store_conformance.h"
#include "tests/integration/change_store_conformance.h"
#include "tests/integration/enrollment_store_conformance.h"
#include "tests/integration/fleet_store_conformance.h"
#include "tests/integration/identity_store_conformance.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using ::smbfleet::testing::CreateTestDatabase;
using ::smbfleet::testing::QueryValue;
using store_testing::ApproverKeyStoreConformanceTest;
using store_testing::ChangeStoreConformanceTest;
using store_testing::ChangeStoreFactory;
using store_testing::ChangeStoreUnderTest;
using store_testing::EnrollmentStoreConformanceTest;
using store_testing::FleetStoreConformanceTest;
using store_testing::IdentityStoreConformanceTest;
using ::testing::HasSubstr;

// A fresh migrated database's stores handed to `fill`, or `skip` saying why there is none.
template <typename UnderTest, typename Fill>
UnderTest MakePg(int pool_size, Fill fill) {
  UnderTest out;
  if (::smbfleet::testing::AdminDsn().empty()) {
    out.skip = "SMBFLEET_TEST_PG_DSN is not set: run through deploy/test.sh";
    return out;
  }
  const std::string dsn = CreateTestDatabase();
  absl::Status migrated = ApplyMigrations(dsn, BuiltinMigrations());
  EXPECT_TRUE(migrated.ok()) << migrated;
  auto stores = NewPgStore(dsn, pool_size);
  EXPECT_TRUE(stores.ok()) << stores.status();
  if (stores.ok()) fill(*stores, out);
  return out;
}

ChangeStoreUnderTest MakePgStore() {
  return MakePg<ChangeStoreUnderTest>(4, [](Stores& stores, ChangeStoreUnderTest& out) {
    out.compliance = std::move(stores.compliance);
    out.changes = std::move(stores.changes);
    out.owned_hosts = std::move(stores.hosts);
    out.hosts = out.owned_hosts.get();
  });
}

store_testing::ApproverKeyStoreUnderTest MakePgKeyStore() {
  return MakePg<store_testing::ApproverKeyStoreUnderTest>(
      2, [](Stores& stores, auto& out) { out.keys = std::move(stores.approver_keys); });
}

store_testing::IdentityStoreUnderTest MakePgIdentityStore() {
  return MakePg<store_testing::IdentityStoreUnderTest>(
      2, [](Stores& stores, auto& out) { out.store = std::move(stores.identity); });
}

store_testing::EnrollmentStoreUnderTest MakePgEnrollmentStore() {
  // The race test needs a connection per thread.
  return MakePg<store_testing::EnrollmentStoreUnderTest>(
      8, [](Stores& stores, auto& out) { out.store = std::move(stores.enrollment); });
}

INSTANTIATE_TEST_SUITE_P(Pg, FleetStoreConformanceTest,
                         ::testing::Values(store_testing::FleetStoreFactory{
                             "postgres",
                             [] {
                               return MakePg<store_testing::FleetStoreUnderTest>(
                                   2, [](Stores& stores, auto& out) {
                                     out.enrollment = std::move(stores.enrollment);
                                     out.hosts = std::move(stores.hosts);
                                     out.compliance = std::move(stores.compliance);
                                   });
                             }}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Pg, ChangeStoreConformanceTest,
                         ::testing::Values(ChangeStoreFactory{"postgres", MakePgStore}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Pg, ApproverKeyStoreConformanceTest,
                         ::testing::Values(store_testing::ApproverKeyStoreFactory{"postgres",
                                                                                  MakePgKeyStore}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Pg, IdentityStoreConformanceTest,
                         ::testing::Values(store_testing::IdentityStoreFactory{
                             "postgres", MakePgIdentityStore}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Pg, EnrollmentStoreConformanceTest,
                         ::testing::Values(store_testing::EnrollmentStoreFactory{
                             "postgres", MakePgEnrollmentStore}),
                         [](const auto& info) { return info.param.name; });

v1::Change Proposed(const std::string& id, const std::string& proposer) {
  v1::Change c;
  c.set_id(id);
  c.set_state(v1::CHANGE_STATE_PROPOSED);
  c.set_version(1);
  c.set_proposed_by(proposer);
  auto* h = c.add_hosts();
  h->set_host("fs01");
  h->set_state(v1::HOST_CHANGE_STATE_PENDING);
  return c;
}

// Runs one statement on its own connection; the pqxx exception, if any, escapes.
void Exec(const std::string& dsn, const std::string& sql) {
  pqxx::connection c(dsn);
  pqxx::nontransaction tx(c);
  tx.exec(sql);
}

// What running `sql` as the DSN's role answers: "" when it succeeded.
std::string ErrorOf(const std::string& dsn, const std::string& sql) {
  try {
    Exec(dsn, sql);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

class PgChangeStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    auto stores = NewPgStore(dsn_, 4);
    ASSERT_TRUE(stores.ok()) << stores.status();
    compliance_ = std::move(stores->compliance);
    changes_ = std::move(stores->changes);
  }

  std::string dsn_;
  std::unique_ptr<ComplianceStore> compliance_;
  std::unique_ptr<ChangeStore> changes_;
};

TEST_F(PgChangeStoreTest, FourEyesIsADatabaseConstraint) {
  ASSERT_TRUE(changes_->CreateChange(Proposed("chg-1", "alice"), {}).ok());
  // The proposer's own approval, written past the store.
  EXPECT_THAT(ErrorOf(dsn_,
                      "INSERT INTO change_approvals (change_id, proposed_by, approver, position) "
                      "VALUES ('chg-1', 'alice', 'alice', 0)"),
              HasSubstr("change_approvals_four_eyes"));
  // Claiming someone else proposed it does not get round the check.
  EXPECT_THAT(ErrorOf(dsn_,
                      "INSERT INTO change_approvals (change_id, proposed_by, approver, position) "
                      "VALUES ('chg-1', 'mallory', 'alice', 0)"),
              HasSubstr("foreign key"));
  EXPECT_EQ(ErrorOf(dsn_,
                    "INSERT INTO change_approvals (change_id, proposed_by, approver, position) "
                    "VALUES ('chg-1', 'alice', 'carol', 0)"),
            "");
  // Nor does changing the proposer afterwards: the row follows it and is checked again.
  EXPECT_THAT(ErrorOf(dsn_, "UPDATE changes SET proposed_by = 'carol' WHERE id = 'chg-1'"),
              HasSubstr("change_approvals_four_eyes"));

  // Waivers: the requester does not approve.
  EXPECT_EQ(ErrorOf(dsn_,
                    "INSERT INTO waivers (id, rule_id, host_name, justification, created_by, "
                    "expires_at, state) VALUES ('w1', 'r', 'fs01', 'why', 'bob', now() + "
                    "interval '1 day', 'REQUESTED')"),
            "");
  EXPECT_THAT(ErrorOf(dsn_,
                      "UPDATE waivers SET state = 'APPROVED', approved_by = 'bob' WHERE id = "
                      "'w1'"),
              HasSubstr("waivers_four_eyes"));
  EXPECT_THAT(ErrorOf(dsn_, "UPDATE waivers SET state = 'APPROVED' WHERE id = 'w1'"),
              HasSubstr("waivers_approved_has_approver"));
}

// A step on some hosts of a change reads no other host's row: it goes through while another
// host's row no longer parses (the whole change, as GetChange and UpdateChange read it, does not).
TEST_F(PgChangeStoreTest, AStepOnSomeHostsReadsNoOtherHost) {
  v1::Change c = Proposed("chg-1", "alice");
  c.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  c.mutable_hosts(0)->set_state(v1::HOST_CHANGE_STATE_DISPATCHED);
  c.mutable_hosts(0)->set_wave(0);
  c.mutable_hosts(0)->set_nonce("n1");
  auto* other = c.add_hosts();
  other->set_host("fs02");
  other->set_state(v1::HOST_CHANGE_STATE_DISPATCHED);
  other->set_wave(0);
  ASSERT_TRUE(changes_->CreateChange(c, {}).ok());
  Exec(dsn_, "UPDATE change_hosts SET impact = '[1, 2]' WHERE host = 'fs02'");
  auto whole = changes_->GetChange("chg-1");
  ASSERT_FALSE(whole.ok());  // the row is really unreadable
  EXPECT_THAT(whole.status().message(), HasSubstr("fs02"));

  absl::Status acked = changes_->UpdateChangeHosts(
      "chg-1", {"fs01"},
      [](const v1::Change& change, const std::vector<v1::ChangeHost>& hosts,
         const OtherHosts& others) -> absl::StatusOr<std::optional<HostsUpdate>> {
        EXPECT_TRUE(others.wave_dispatched);  // fs02, counted
        HostsUpdate u;
        u.change = change;
        u.hosts = hosts;
        if (!u.hosts.empty()) u.hosts[0].set_state(v1::HOST_CHANGE_STATE_APPLIED);
        return std::optional<HostsUpdate>(u);
      });
  ASSERT_TRUE(acked.ok()) << acked;
  EXPECT_EQ(QueryValue(dsn_, "SELECT state FROM change_hosts WHERE host = 'fs01'"), "APPLIED");
  EXPECT_EQ(
      QueryValue(dsn_, "SELECT applied_change_id FROM host_change_status WHERE host = 'fs01'"),
      "chg-1");
}

TEST_F(PgChangeStoreTest, AStepApprovingTwiceNamesTheApprover) {
  v1::Change c = Proposed("chg-1", "alice");
  ASSERT_TRUE(changes_->CreateChange(c, {}).ok());
  auto twice = changes_->UpdateChange("chg-1", [&](const v1::Change& current) {
    ChangeUpdate u;
    u.change = current;
    u.change.add_approvals()->set_approver("carol");
    u.change.add_approvals()->set_approver("carol");
    return absl::StatusOr<ChangeUpdate>(u);
  });
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kFailedPrecondition) << twice.status();
  EXPECT_THAT(twice.status().message(), HasSubstr("carol already approved change chg-1"));
  EXPECT_EQ((*changes_->GetChange("chg-1"))->approvals_size(), 0);
}

TEST_F(PgChangeStoreTest, TheAuditLogIsAppendOnlyForTheCollectorsRole) {
  // The test connects as the collector's role, which ran the migrations: no superuser.
  ASSERT_EQ(QueryValue(dsn_, "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user"),
            "false");
  v1::AuditEntry e;
  e.set_actor("alice");
  e.set_action("proposed");
  e.set_change_id("chg-1");
  ASSERT_TRUE(changes_->AppendAudit({e}).ok());

  EXPECT_THAT(ErrorOf(dsn_, "UPDATE audit_log SET actor = 'mallory'"),
              HasSubstr("permission denied"));
  EXPECT_THAT(ErrorOf(dsn_, "DELETE FROM audit_log"), HasSubstr("permission denied"));
  EXPECT_THAT(ErrorOf(dsn_, "TRUNCATE audit_log"), HasSubstr("permission denied"));
  // The owner can grant itself the rights back; the trigger still refuses.
  Exec(dsn_, "GRANT UPDATE, DELETE, TRUNCATE ON audit_log TO CURRENT_USER");
  EXPECT_THAT(ErrorOf(dsn_, "UPDATE audit_log SET actor = 'mallory'"), HasSubstr("append-only"));
  EXPECT_THAT(ErrorOf(dsn_, "DELETE FROM audit_log"), HasSubstr("append-only"));
  EXPECT_THAT(ErrorOf(dsn_, "TRUNCATE audit_log"), HasSubstr("append-only"));

  auto entries = changes_->ListAudit({});
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].actor(), "alice");
}

TEST_F(PgChangeStoreTest, ACalibrationKeepsItsInputsWithThePredictedAndMeasuredFigures) {
  v1::CostModelCalibration c;
  c.set_saved_by("carol");
  c.mutable_since()->set_seconds(1'800'000'000);
  c.set_input_count(2);
  c.add_groups()->set_platform("samba");
  for (const char* host : {"fs01", "fs02"}) {
    auto* in = c.add_inputs();
    in->set_change_id("chg-1");
    in->set_host(host);
    in->set_platform("samba");
    in->set_protection_before("signing AES_128_GMAC");
    in->set_protection_after("encryption AES_128_GCM");
    in->mutable_measured()->set_predicted_cpu_ratio(1.25);
    in->mutable_measured()->set_cpu_per_byte_ratio(1.5);
  }
  v1::AuditEntry audit;
  audit.set_actor("carol");
  audit.set_action("cost_model_calibrated");
  auto id = changes_->SaveCostModelCalibration(c, audit);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(QueryValue(dsn_, absl::StrCat("SELECT string_agg(host || ' ' || platform || ' ' || "
                                          "protection_after || ' ' || "
                                          "(measured->>'cpuPerByteRatio') || '/' || "
                                          "(measured->>'predictedCpuRatio'), ', ' ORDER BY host) "
                                          "FROM cost_model_calibration_inputs "
                                          "WHERE calibration_id = ",
                                          *id)),
            "fs01 samba encryption AES_128_GCM 1.5/1.25, fs02 samba encryption AES_128_GCM "
            "1.5/1.25");
}

TEST_F(PgChangeStoreTest, PendingOrdersAreAnIndexLookupByHost) {
  const std::string plan = QueryValue(dsn_,
                                      "SET enable_seqscan = off; EXPLAIN (FORMAT JSON) SELECT * "
                                      "FROM change_hosts WHERE host = 'fs01' AND "
                                      "state = 'DISPATCHED'");
  EXPECT_THAT(plan, HasSubstr("change_hosts_host_state"));
}

TEST(PgChangeMigrationTest, WaiversFromBeforeTheWorkflowStayApproved) {
  SMBFLEET_REQUIRE_PG();
  const std::string dsn = CreateTestDatabase();
  std::vector<Migration> before;
  for (const auto& m : BuiltinMigrations()) {
    if (m.version < "0004") before.push_back(m);
  }
  ASSERT_TRUE(ApplyMigrations(dsn, before).ok());
  Exec(dsn,
       "INSERT INTO waivers (id, rule_id, host_name, justification, approved_by, created_by, "
       "created_at, expires_at, revoked_at) VALUES "
       "('w-live', 'smb1-server-disabled', 'fs01', 'legacy scanner', 'carol', 'bob', "
       "now() - interval '1 hour', now() + interval '1 day', NULL), "
       "('w-revoked', 'smb1-server-disabled', 'fs02', 'legacy scanner', 'carol', '', "
       "now() - interval '1 hour', now() + interval '1 day', now())");
  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  EXPECT_EQ(QueryValue(dsn, "SELECT state FROM waivers WHERE id = 'w-live'"), "APPROVED");
  EXPECT_EQ(QueryValue(dsn, "SELECT state FROM waivers WHERE id = 'w-revoked'"), "REVOKED");
  auto stores = NewPgStore(dsn, 2);
  ASSERT_TRUE(stores.ok()) << stores.status();
  auto active = stores->compliance->ActiveWaivers();
  ASSERT_TRUE(active.ok()) << active.status();
  ASSERT_EQ(active->size(), 1u);
  EXPECT_EQ((*active)[0].id(), "w-live");
  EXPECT_EQ((*active)[0].state(), v1::WAIVER_STATE_APPROVED);
  EXPECT_EQ((*active)[0].approved_by(), "carol");
}

// Collects what a PgOrderSignal's handler was called with.
class Received {
 public:
  OrderSignal::Handler Handler() {
    return [this](const std::vector<std::string>& hosts) {
      absl::MutexLock lock(&mu_);
      ++calls_;
      hosts_.insert(hosts.begin(), hosts.end());
    };
  }
  // True once `n` distinct hosts arrived, within 10 s.
  bool WaitForHosts(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return hosts_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  std::set<std::string> hosts() {
    absl::MutexLock lock(&mu_);
    return hosts_;
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  absl::Mutex mu_;
  std::set<std::string> hosts_ ABSL_GUARDED_BY(mu_);
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(PgOrderSignalTest, HostsSignalledByOneProcessReachAnother) {
  SMBFLEET_REQUIRE_PG();
  const std::string dsn = CreateTestDatabase();
  Received at_a, at_b;
  PgOrderSignal a(dsn, at_a.Handler());
  PgOrderSignal b(dsn, at_b.Handler());
  ASSERT_TRUE(a.WaitUntilListening(absl::Seconds(10)));
  ASSERT_TRUE(b.WaitUntilListening(absl::Seconds(10)));

  a.HostsHaveOrders({"fs01", "fs02"});
  ASSERT_TRUE(at_b.WaitForHosts(2));
  EXPECT_EQ(at_b.hosts(), (std::set<std::string>{"fs01", "fs02"}));
  // The sender's own listener hears it too: one path for local and remote streams.
  ASSERT_TRUE(at_a.WaitForHosts(2));
}

TEST(PgOrderSignalTest, ALongHostListIsSplitIntoSeveralNotifications) {
  SMBFLEET_REQUIRE_PG();
  std::vector<std::string> hosts;
  hosts.reserve(2000);
  for (int i = 0; i < 2000; ++i) hosts.push_back(absl::StrCat("fileserver-", i, ".corp.example"));
  const auto payloads = PgOrderSignal::Payloads(hosts);
  ASSERT_GT(payloads.size(), 1u);
  for (const auto& p : payloads) EXPECT_LT(p.size(), PgOrderSignal::kMaxPayloadBytes);

  const std::string dsn = CreateTestDatabase();
  Received at_b;
  PgOrderSignal a(dsn, [](const std::vector<std::string>&) {});
  PgOrderSignal b(dsn, at_b.Handler());
  ASSERT_TRUE(b.WaitUntilListening(absl::Seconds(10)));
  a.HostsHaveOrders(hosts);
  ASSERT_TRUE(at_b.WaitForHosts(hosts.size()));
  EXPECT_EQ(at_b.hosts(), std::set<std::string>(hosts.begin(), hosts.end()));
  EXPECT_EQ(at_b.calls(), static_cast<int>(payloads.size()));
}

TEST(PgOrderSignalTest, TheListenerReconnectsAfterItsConnectionDrops) {
  SMBFLEET_REQUIRE_PG();
  const std::string dsn = CreateTestDatabase();
  Received at_b;
  PgOrderSignal a(dsn, [](const std::vector<std::string>&) {});
  PgOrderSignal b(dsn, at_b.Handler());
  ASSERT_TRUE(a.WaitUntilListening(absl::Seconds(10)));
  ASSERT_TRUE(b.WaitUntilListening(absl::Seconds(10)));
  // Ends every LISTENing backend of this database (the collector's role may end its own).
  ASSERT_EQ(QueryValue(dsn,
                       "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                       "datname = current_database() AND pid <> pg_backend_pid() AND query "
                       "ILIKE 'LISTEN%'"),
            "2");
  // Until the listener notices, signals may be lost: send until one arrives.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (at_b.hosts().empty() && absl::Now() < deadline) {
    a.HostsHaveOrders({"fs07"});
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(at_b.hosts(), std::set<std::string>{"fs07"});
}

}  // namespace
}  // namespace smbfleet::collector

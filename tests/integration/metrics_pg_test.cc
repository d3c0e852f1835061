// The connection pool's metrics against a real PostgreSQL: every lease is a pool-wait
// observation, failed calls count as database errors by what they were doing (a read, a write,
// reaching the server), and calls that succeed count nothing.
#include <pqxx/pqxx>

#include "collector/metrics/metrics.h"
#include "collector/metrics/prometheus_text.h"
#include "collector/store/postgres/connection_pool.h"
#include "collector/store/postgres/migrations.h"
#include "collector/store/postgres/pg_store.h"
#include "gtest/gtest.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

using ::smbfleet::testing::CreateTestDatabase;

std::optional<double> Errors(const Metrics& m, const char* operation) {
  return SampleIn(m.Text(), "smbfleet_database_errors_total", {{"operation", operation}});
}

std::optional<double> Waits(const Metrics& m) {
  return SampleIn(m.Text(), "smbfleet_database_pool_wait_seconds_count");
}

TEST(PoolMetricsTest, FailedReadsAndWritesCountByOperation) {
  SMBFLEET_REQUIRE_PG();
  Metrics metrics;
  ConnectionPool pool(CreateTestDatabase(), 2);
  pool.SetMetrics(&metrics);

  absl::Status ok = pool.Run<pqxx::read_transaction>("reading one", [](pqxx::read_transaction& tx) {
    tx.exec("SELECT 1");
    return absl::OkStatus();
  });
  ASSERT_TRUE(ok.ok()) << ok;
  EXPECT_EQ(Waits(metrics), 1);
  EXPECT_EQ(Errors(metrics, "read"), 0);

  absl::Status bad_read =
      pool.Run<pqxx::read_transaction>("reading a table", [](pqxx::read_transaction& tx) {
        tx.exec("SELECT * FROM no_such_table");
        return absl::OkStatus();
      });
  EXPECT_FALSE(bad_read.ok());
  EXPECT_EQ(Errors(metrics, "read"), 1);
  EXPECT_EQ(Errors(metrics, "write"), 0);

  absl::Status bad_write = pool.Run<pqxx::work>("writing a table", [](pqxx::work& tx) {
    tx.exec("INSERT INTO no_such_table VALUES (1)");
    tx.commit();
    return absl::OkStatus();
  });
  EXPECT_FALSE(bad_write.ok());
  EXPECT_EQ(Errors(metrics, "write"), 1);
  EXPECT_EQ(Errors(metrics, "read"), 1);
  EXPECT_EQ(Errors(metrics, "connect"), 0);
  EXPECT_EQ(Waits(metrics), 3);
}

TEST(PoolMetricsTest, UnreachableServerCountsAsConnect) {
  // Nothing listens on port 1: the lease fails to open a connection.
  Metrics metrics;
  ConnectionPool pool("host=127.0.0.1 port=1 dbname=x user=x connect_timeout=5", 1);
  pool.SetMetrics(&metrics);
  absl::Status s = pool.Run<pqxx::read_transaction>(
      "reading", [](pqxx::read_transaction& tx) { return absl::OkStatus(); });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(Errors(metrics, "connect"), 1);
  EXPECT_EQ(Errors(metrics, "read"), 0);
}

TEST(PoolMetricsTest, TheBackendHandsItsPoolTheCollectorsMetrics) {
  SMBFLEET_REQUIRE_PG();
  const std::string dsn = CreateTestDatabase();
  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  auto stores = NewPgStore(dsn, 2);
  ASSERT_TRUE(stores.ok()) << stores.status();
  ASSERT_TRUE(stores->set_metrics);
  Metrics metrics;
  stores->set_metrics(&metrics);
  auto host = stores->hosts->GetHost("fs01");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_GE(Waits(metrics), 1);
}

}  // namespace
}  // namespace smbfleet::collector

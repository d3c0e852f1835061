// GET /readyz against a real PostgreSQL: ready when the database answers with every migration
// applied; 503 naming why when it does not answer or lacks a migration. A collector started
// from the database serves the console with its readiness.
#include <string>

#include "collector/server/collector.h"
#include "collector/store/postgres/migrations.h"
#include "collector/store/postgres/pg_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/web_fixture.h"

namespace smbfleet::collector {
namespace {

using ::smbfleet::testing::CreateTestDatabase;
using ::testing::HasSubstr;
using web_testing::Client;
using web_testing::Pki;

httplib::Response Ready(int port) {
  auto cli = Client(port);
  httplib::Result r = cli->Get("/readyz");
  EXPECT_TRUE(r);
  return r ? r.value() : httplib::Response();
}

TEST(WebReadyTest, CollectorOnAMigratedDatabaseIsReady) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = CreateTestDatabase();
  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  auto stores = NewPgStore(dsn, 2);
  ASSERT_TRUE(stores.ok()) << stores.status();
  CollectorConfig config;
  config.listen = "127.0.0.1:0";
  config.database_dsn = dsn;
  config.console.enabled = true;
  config.console.listen = "127.0.0.1:0";
  auto tls = LoadTls({Pki() + "/collector.pem", Pki() + "/collector.key", Pki() + "/ca.pem"});
  ASSERT_TRUE(tls.ok()) << tls.status();
  auto c = Collector::Start(config, *tls, *std::move(stores));
  ASSERT_TRUE(c.ok()) << c.status();
  httplib::Response r = Ready((*c)->web_port());
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "ready\n");
}

TEST(WebReadyTest, DeadDatabaseIsNotReady) {
  SMBFLEET_REQUIRE_PG();
  // A closed port: nothing listens on port 1.
  const std::string dead = "postgresql://smbfleet@127.0.0.1:1/smbfleet?connect_timeout=5";
  web_testing::StandaloneWeb web([&] { return CheckMigrations(dead, BuiltinMigrations()); });
  httplib::Response r = Ready(web.port());
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_THAT(r.body, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(r.body, HasSubstr("not ready"));
}

TEST(WebReadyTest, UnmigratedDatabaseIsNotReady) {
  SMBFLEET_REQUIRE_PG();
  std::string dsn = CreateTestDatabase();  // reachable, no migrations
  web_testing::StandaloneWeb web([&] { return CheckMigrations(dsn, BuiltinMigrations()); });
  EXPECT_EQ(Ready(web.port()).status, 503);
  ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
  httplib::Response r = Ready(web.port());
  EXPECT_EQ(r.status, 200) << r.body;
}

}  // namespace
}  // namespace smbfleet::collector

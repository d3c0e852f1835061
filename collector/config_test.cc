#include "collector/config.h"

#include <cstdlib>
#include <fstream>

#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;

class CollectorConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = smbfleet::testing::MakeTestDir("smbfleet-cc");
    for (const char* f : {"c.pem", "c.key", "ca.pem"}) std::ofstream(dir_ + "/" + f) << "x";
  }
  std::string dir_;
};

TEST_F(CollectorConfigTest, ValidConfigWithRelativePaths) {
  auto c = ParseCollectorConfig(dir_ + "/collector.yaml",
                                "listen: 127.0.0.1:0\n"
                                "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
                                "database: {dsn: 'postgresql://u@127.0.0.1/db', pool_size: 2}\n"
                                "limits: {max_report_bytes: 1MiB}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tls.cert, dir_ + "/c.pem");
  EXPECT_EQ(c->database_pool_size, 2u);
  EXPECT_EQ(c->max_report_bytes, 1u << 20);
}

TEST_F(CollectorConfigTest, EnrollmentIsOffUnlessConfigured) {
  const std::string base =
      "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
      "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n";
  auto off = ParseCollectorConfig(dir_ + "/collector.yaml", base);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_TRUE(off->enrollment.ca_cert.empty());
  auto on = ParseCollectorConfig(dir_ + "/collector.yaml",
                                 base +
                                     "enrollment: {ca_cert: agents-ca.pem, ca_key: agents-ca.key, "
                                     "certificate_lifetime: 3d}\n");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(on->enrollment.ca_key, dir_ + "/agents-ca.key");
  EXPECT_EQ(on->enrollment.certificate_lifetime, std::chrono::hours(72));
  auto bad = ParseCollectorConfig(
      dir_ + "/collector.yaml",
      base + "enrollment: {ca_cert: agents-ca.pem, certificate_lifetime: 1s}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("ca_cert and ca_key go together"));
  EXPECT_THAT(bad.status().message(), HasSubstr("enrollment.certificate_lifetime"));
}

TEST_F(CollectorConfigTest, ConsoleIsOffUnlessConfigured) {
  const std::string base =
      "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
      "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n";
  auto off = ParseCollectorConfig(dir_ + "/collector.yaml", base);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->console.enabled);

  auto on = ParseCollectorConfig(dir_ + "/collector.yaml",
                                 base + "console: {listen: '127.0.0.1:0', session_idle: 10m}\n");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->console.enabled);
  EXPECT_EQ(on->console.listen, "127.0.0.1:0");
  EXPECT_EQ(on->console.session_idle, std::chrono::minutes(10));
  EXPECT_EQ(on->console.session_max, std::chrono::hours(12));
  EXPECT_TRUE(on->console.cert.empty());

  auto own =
      ParseCollectorConfig(dir_ + "/collector.yaml", base + "console: {cert: c.pem, key: c.key}\n");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->console.cert, dir_ + "/c.pem");

  auto bad = ParseCollectorConfig(
      dir_ + "/collector.yaml",
      base + "console: {listen: nowhere, cert: c.pem, session_idle: 20h, session_max: 10h}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("console.listen"));
  EXPECT_THAT(bad.status().message(), HasSubstr("cert and key go together"));
  EXPECT_THAT(bad.status().message(), HasSubstr("console.session_idle"));
}

TEST_F(CollectorConfigTest, NudgeLimitsHaveDefaultsAndCanBeSet) {
  const std::string base =
      "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
      "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n";
  auto defaults = ParseCollectorConfig(dir_ + "/collector.yaml", base);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->nudge_interval, std::chrono::seconds(60));
  EXPECT_EQ(defaults->nudges_per_minute, 30u);
  auto set = ParseCollectorConfig(dir_ + "/collector.yaml",
                                  base + "limits: {nudge_interval: 5m, nudges_per_minute: 100}\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->nudge_interval, std::chrono::minutes(5));
  EXPECT_EQ(set->nudges_per_minute, 100u);
  auto bad =
      ParseCollectorConfig(dir_ + "/collector.yaml", base + "limits: {nudges_per_minute: 0}\n");
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("limits.nudges_per_minute"));
}

TEST_F(CollectorConfigTest, DatabaseBoundsShutdownAndTransportLimits) {
  const std::string base = "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n";
  auto defaults = ParseCollectorConfig(dir_ + "/collector.yaml",
                                       base + "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->database.acquire_timeout, std::chrono::seconds(5));
  EXPECT_EQ(defaults->database.statement_timeout, std::chrono::seconds(30));
  EXPECT_EQ(defaults->database.startup_timeout, std::chrono::seconds(60));
  EXPECT_EQ(defaults->shutdown_timeout, std::chrono::seconds(20));
  EXPECT_EQ(defaults->max_message_bytes, 64u << 10);

  auto set = ParseCollectorConfig(
      dir_ + "/collector.yaml",
      base +
          "database: {dsn: 'postgresql://u@127.0.0.1/db', acquire_timeout: 2s, "
          "connect_timeout: 3s, statement_timeout: 10s, keepalives_idle: 1m, "
          "startup_timeout: 2m}\n"
          "shutdown_timeout: 30s\n"
          "limits: {max_message_bytes: 16KiB, max_queued_bytes: 64MiB, max_queued_calls: 500, "
          "transport_memory: 1GiB, max_streams_per_connection: 8, tls_frame_bytes: 4KiB, "
          "tcp_read_chunk_bytes: 2KiB, digest_batch_reports: 100, posture_batch_reports: 8}\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->database.acquire_timeout, std::chrono::seconds(2));
  EXPECT_EQ(set->database.connect_timeout, std::chrono::seconds(3));
  EXPECT_EQ(set->database.statement_timeout, std::chrono::seconds(10));
  EXPECT_EQ(set->database.keepalives_idle, std::chrono::minutes(1));
  EXPECT_EQ(set->database.startup_timeout, std::chrono::minutes(2));
  EXPECT_EQ(set->shutdown_timeout, std::chrono::seconds(30));
  EXPECT_EQ(set->max_message_bytes, 16u << 10);
  EXPECT_EQ(set->max_queued_bytes, 64u << 20);
  EXPECT_EQ(set->max_queued_calls, 500u);
  EXPECT_EQ(set->transport_memory, 1u << 30);
  EXPECT_EQ(set->max_streams_per_connection, 8u);
  EXPECT_EQ(set->tls_frame_bytes, 4096u);
  EXPECT_EQ(set->tcp_read_chunk_bytes, 2048u);
  EXPECT_EQ(set->digest_batch_reports, 100u);
  EXPECT_EQ(set->posture_batch_reports, 8u);

  auto bad = ParseCollectorConfig(
      dir_ + "/collector.yaml",
      base +
          "database: {dsn: 'postgresql://u@127.0.0.1/db', connect_timeout: 1s, "
          "statement_timeout: 2h}\n"
          "shutdown_timeout: 0s\n"
          "limits: {max_report_bytes: 16MiB, max_queued_bytes: 8MiB, "
          "max_streams_per_connection: 0, tls_frame_bytes: 32KiB, tcp_read_chunk_bytes: 100, "
          "posture_batch_reports: 0}\n");
  ASSERT_FALSE(bad.ok());
  std::string m(bad.status().message());
  EXPECT_THAT(m, HasSubstr("database.connect_timeout: must be between 2s and 5m"));
  EXPECT_THAT(m, HasSubstr("database.statement_timeout: must be between 100ms and 1h"));
  EXPECT_THAT(m, HasSubstr("shutdown_timeout: must be between 1s and 10m"));
  EXPECT_THAT(m, HasSubstr("limits.max_queued_bytes: 8388608 bytes is below"));
  EXPECT_THAT(m, HasSubstr("limits.max_streams_per_connection"));
  EXPECT_THAT(m, HasSubstr("limits.tls_frame_bytes: 32768 bytes is out of range [1KiB, 16KiB]"));
  EXPECT_THAT(m, HasSubstr("limits.tcp_read_chunk_bytes: 100 bytes is out of range"));
  EXPECT_THAT(m, HasSubstr("limits.posture_batch_reports"));
}

TEST_F(CollectorConfigTest, ListsAllProblems) {
  auto c = ParseCollectorConfig(dir_ + "/collector.yaml",
                                "listen: nowhere\n"
                                "tls: {cert: missing.pem, key: c.key}\n"
                                "limits: {max_report_bytes: 12 apples}\n"
                                "colour: blue\n"
                                "log_level: loud\n");
  ASSERT_FALSE(c.ok());
  std::string m(c.status().message());
  EXPECT_THAT(m, HasSubstr("7 problems"));
  EXPECT_THAT(m, HasSubstr("collector.yaml:1: listen"));
  EXPECT_THAT(m, HasSubstr("tls.cert: file not found"));
  EXPECT_THAT(m, HasSubstr("tls.client_ca: required"));
  EXPECT_THAT(m, HasSubstr("database: required"));
  EXPECT_THAT(m, HasSubstr("limits.max_report_bytes"));
  EXPECT_THAT(m, HasSubstr("colour: unknown setting"));
  EXPECT_THAT(m, HasSubstr("log_level"));
}

TEST_F(CollectorConfigTest, ChangesSectionWithDefaultsAndLimits) {
  const std::string base =
      "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
      "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n";
  auto defaults = ParseCollectorConfig(dir_ + "/collector.yaml", base);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->changes.two_approvers_above_hosts, 10u);
  EXPECT_EQ(defaults->changes.lifetime, std::chrono::hours(7 * 24));
  EXPECT_EQ(defaults->changes.ack_timeout, std::chrono::minutes(15));
  EXPECT_EQ(defaults->changes.tick, std::chrono::seconds(1));

  auto set = ParseCollectorConfig(
      dir_ + "/collector.yaml",
      base +
          "changes: {two_approvers_above_hosts: 3, lifetime: 2d, ack_timeout: 5m, tick: 500ms}\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->changes.two_approvers_above_hosts, 3u);
  EXPECT_EQ(set->changes.lifetime, std::chrono::hours(48));
  EXPECT_EQ(set->changes.ack_timeout, std::chrono::minutes(5));
  EXPECT_EQ(set->changes.tick, std::chrono::milliseconds(500));

  auto bad = ParseCollectorConfig(dir_ + "/collector.yaml",
                                  base + "changes: {ack_timeout: 1s, tick: 5m, wat: 1}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("changes.ack_timeout"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("changes.tick"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("changes.wat"));
}

TEST_F(CollectorConfigTest, IdentityIssuersAndTlsReload) {
  const std::string base =
      "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
      "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n";
  auto defaults = ParseCollectorConfig(dir_ + "/collector.yaml", base);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE(defaults->identity.agent_issuers.empty());
  EXPECT_EQ(defaults->identity.revocation_poll, std::chrono::seconds(5));
  EXPECT_EQ(defaults->tls_reload, std::chrono::seconds(60));
  auto set = ParseCollectorConfig(dir_ + "/collector.yaml",
                                  base +
                                      "identity: {agent_issuers: [ca.pem], operator_issuers: "
                                      "[c.pem], revocation_poll: 2s}\n"
                                      "tls_reload: 10s\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->identity.agent_issuers, std::vector<std::string>{dir_ + "/ca.pem"});
  EXPECT_EQ(set->identity.operator_issuers, std::vector<std::string>{dir_ + "/c.pem"});
  EXPECT_EQ(set->identity.revocation_poll, std::chrono::seconds(2));
  EXPECT_EQ(set->tls_reload, std::chrono::seconds(10));
  auto bad = ParseCollectorConfig(dir_ + "/collector.yaml",
                                  base +
                                      "identity: {agent_issuers: [nope.pem], people: [x]}\n"
                                      "tls_reload: 0s\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("identity.agent_issuers[0]: file not found"));
  EXPECT_THAT(bad.status().message(), HasSubstr("people"));
  EXPECT_THAT(bad.status().message(), HasSubstr("tls_reload: must be between 1s and 24h"));
}

TEST_F(CollectorConfigTest, StaleAfterDefaultsToTwoReportIntervals) {
  const std::string base =
      "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
      "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n";
  auto defaults = ParseCollectorConfig(dir_ + "/collector.yaml", base);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->stale_after, std::chrono::hours(2));
  auto set = ParseCollectorConfig(dir_ + "/collector.yaml", base + "stale_after: 30m\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->stale_after, std::chrono::minutes(30));
  auto bad = ParseCollectorConfig(dir_ + "/collector.yaml", base + "stale_after: 10s\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("stale_after: must be between 1m and 365d"));
}

TEST_F(CollectorConfigTest, HistoryRetentionInWholeDays) {
  const std::string base =
      "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
      "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n";
  auto defaults = ParseCollectorConfig(dir_ + "/collector.yaml", base);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->history.retention, std::chrono::hours(24 * 90));
  EXPECT_EQ(defaults->history.partitions_ahead, 3u);
  EXPECT_EQ(defaults->history.interval, std::chrono::hours(1));
  auto set = ParseCollectorConfig(
      dir_ + "/collector.yaml",
      base + "history: {retention: 30d, partitions_ahead: 7, interval: 10m}\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->history.retention, std::chrono::hours(24 * 30));
  EXPECT_EQ(set->history.partitions_ahead, 7u);
  EXPECT_EQ(set->history.interval, std::chrono::minutes(10));
  auto forever =
      ParseCollectorConfig(dir_ + "/collector.yaml", base + "history: {retention: 0d}\n");
  ASSERT_TRUE(forever.ok()) << forever.status();
  EXPECT_EQ(forever->history.retention.count(), 0);

  // Every problem at once, each naming its key.
  auto bad = ParseCollectorConfig(
      dir_ + "/collector.yaml",
      base + "history: {retention: 36h, partitions_ahead: 0, interval: 5s, keep: all}\n");
  ASSERT_FALSE(bad.ok());
  const std::string message(bad.status().message());
  EXPECT_THAT(message, HasSubstr("history.retention: must be whole days"));
  EXPECT_THAT(message, HasSubstr("history.partitions_ahead"));
  EXPECT_THAT(message, HasSubstr("history.interval: must be between 1m and 24h"));
  EXPECT_THAT(message, HasSubstr("history.keep"));
  auto long_ago =
      ParseCollectorConfig(dir_ + "/collector.yaml", base + "history: {retention: 4000d}\n");
  ASSERT_FALSE(long_ago.ok());
  EXPECT_THAT(long_ago.status().message(), HasSubstr("history.retention: must be at most 3650d"));
  auto not_a_duration =
      ParseCollectorConfig(dir_ + "/collector.yaml", base + "history: {retention: forever}\n");
  ASSERT_FALSE(not_a_duration.ok());
  EXPECT_THAT(not_a_duration.status().message(), HasSubstr("history.retention"));
}

TEST_F(CollectorConfigTest, ReevaluateThreadsDefaultAndBounds) {
  const std::string base =
      "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
      "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n";
  auto defaults = ParseCollectorConfig(dir_ + "/collector.yaml", base);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->reevaluate_threads, 2u);
  auto off =
      ParseCollectorConfig(dir_ + "/collector.yaml", base + "policy: {reevaluate_threads: 0}\n");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->reevaluate_threads, 0u);
  auto bad =
      ParseCollectorConfig(dir_ + "/collector.yaml", base + "policy: {reevaluate_threads: 17}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("policy.reevaluate_threads"));
}

TEST_F(CollectorConfigTest, SectionThatIsNotAMappingIsAProblemNotAnException) {
  // Found by the collector_config fuzzer: `approver_sets: x` made ReadDuration index a scalar,
  // and yaml-cpp's BadSubscript ended the collector instead of naming the key.
  const std::string base =
      "tls: {cert: c.pem, key: c.key, client_ca: ca.pem}\n"
      "database: {dsn: 'postgresql://u@127.0.0.1/db'}\n";
  for (const char* section : {"limits", "watch", "store", "policy", "approver_sets", "identity",
                              "changes", "enrollment", "console"}) {
    for (const char* value : {"5s", "[a, b]"}) {
      auto bad =
          ParseCollectorConfig(dir_ + "/collector.yaml", base + section + ": " + value + "\n");
      ASSERT_FALSE(bad.ok()) << section << ": " << value;
      EXPECT_THAT(bad.status().message(), HasSubstr(std::string(section) + ": expected a mapping"));
    }
    auto empty = ParseCollectorConfig(dir_ + "/collector.yaml", base + section + ":\n");
    EXPECT_TRUE(empty.ok()) << section << ": " << empty.status();
  }
}

}  // namespace
}  // namespace smbfleet::collector

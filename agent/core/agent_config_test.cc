#include "agent/core/agent_config.h"

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "agent/core/collector_target.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

using ::testing::HasSubstr;

class AgentConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = smbfleet::testing::MakeTestDir("smbfleet-ac");
    for (const char* f : {"a.pem", "a.key", "ca.pem"}) std::ofstream(dir_ + "/" + f) << "x";
  }
  std::string dir_;
};

TEST_F(AgentConfigTest, DefaultsAndRelativePaths) {
  auto c = ParseAgentConfig(dir_ + "/agent.yaml",
                            "collector: {address: 'collector.example:7443'}\n"
                            "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n"
                            "source: samba:/etc/samba/smb.conf\n"
                            "labels: {site: ams, wan: 'true'}\n"
                            "spool: {dir: spool}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collector_server_name, "collector.example");
  EXPECT_EQ(c->interval, std::chrono::hours(1));
  EXPECT_EQ(c->benchmark_interval, std::chrono::hours(24));
  EXPECT_EQ(c->spool_dir, dir_ + "/spool");
  EXPECT_EQ(c->labels.at("wan"), "true");
  EXPECT_EQ(c->tls.ca, dir_ + "/ca.pem");
}

TEST_F(AgentConfigTest, SpoolBoundsHaveDefaultsAndAreValidated) {
  const std::string head =
      "collector: {address: 'collector.example:7443'}\n"
      "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n";
  auto c = ParseAgentConfig(dir_ + "/agent.yaml", head + "spool: {dir: spool}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->spool_max_reports, 200u);
  EXPECT_EQ(c->spool_max_bytes, uint64_t{256} << 20);
  EXPECT_EQ(c->spool_max_age, std::chrono::hours(24 * 7));
  EXPECT_EQ(c->spool_max_rejected, 50u);

  c = ParseAgentConfig(dir_ + "/agent.yaml",
                       head +
                           "spool: {dir: spool, max_reports: 20, max_bytes: 64MiB, max_age: 48h, "
                           "max_rejected: 5}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->spool_max_reports, 20u);
  EXPECT_EQ(c->spool_max_bytes, uint64_t{64} << 20);
  EXPECT_EQ(c->spool_max_age, std::chrono::hours(48));
  EXPECT_EQ(c->spool_max_rejected, 5u);

  auto bad = ParseAgentConfig(dir_ + "/agent.yaml",
                              head + "spool: {dir: spool, max_bytes: 1MiB, max_age: 5m}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("spool.max_bytes: must be at least"));
  EXPECT_THAT(bad.status().message(), HasSubstr("spool.max_age: must be 0"));
}

// With enroll:, the certificate and key are where enrollment will write them: they need not
// exist; the pinned CA must. The host must be a host name.
TEST_F(AgentConfigTest, EnrollmentNeedsNoCertificateYet) {
  auto c = ParseAgentConfig(dir_ + "/agent.yaml",
                            "collector: {address: 'collector.example:7443'}\n"
                            "tls: {cert: tls/agent.pem, key: tls/agent.key, ca: ca.pem}\n"
                            "enroll: {token_file: enroll.token, host: FS01.example.org}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tls.cert, dir_ + "/tls/agent.pem");
  EXPECT_EQ(c->enroll.token_file, dir_ + "/enroll.token");
  EXPECT_EQ(c->enroll.host, "FS01.example.org");

  auto bad = ParseAgentConfig(dir_ + "/agent.yaml",
                              "collector: {address: 'collector.example:7443'}\n"
                              "tls: {cert: tls/agent.pem, key: tls/agent.key, ca: missing.pem}\n"
                              "enroll: {host: 'fs01;rm'}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("enroll.token_file: required"));
  EXPECT_THAT(bad.status().message(), HasSubstr("enroll.host"));
  EXPECT_THAT(bad.status().message(), HasSubstr("tls.ca: file not found"));
}

// Found by the agent_config fuzzer: both threw yaml-cpp exceptions out of ParseAgentConfig.
TEST_F(AgentConfigTest, EnrollmentWithoutTlsIsAProblemNotAnException) {
  auto c = ParseAgentConfig(dir_ + "/agent.yaml",
                            "collector: {address: 'collector.example:7443'}\n"
                            "enroll: {token_file: enroll.token, host: fs01.example.org}\n");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("tls: required"));
}

TEST_F(AgentConfigTest, SectionThatIsNotAMappingIsAProblemNotAnException) {
  const std::string head =
      "collector: {address: 'collector.example:7443'}\n"
      "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n";
  for (const char* section : {"schedule", "spool", "limits", "changes", "trust"}) {
    auto c = ParseAgentConfig(dir_ + "/agent.yaml", head + section + ": 5s\n");
    ASSERT_FALSE(c.ok()) << section;
    EXPECT_THAT(c.status().message(), HasSubstr(std::string(section) + ": expected a mapping"));
  }
}

TEST_F(AgentConfigTest, MinNudgeIntervalDefaultsToThirtySeconds) {
  const std::string base =
      "collector: {address: 'collector.example:7443'}\n"
      "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n";
  auto defaults = ParseAgentConfig(dir_ + "/agent.yaml", base);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->min_nudge_interval, std::chrono::seconds(30));
  auto set = ParseAgentConfig(dir_ + "/agent.yaml", base + "schedule: {min_nudge_interval: 2m}\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->min_nudge_interval, std::chrono::minutes(2));
  auto bad =
      ParseAgentConfig(dir_ + "/agent.yaml", base + "schedule: {min_nudge_interval: soon}\n");
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("schedule.min_nudge_interval"));
}

TEST_F(AgentConfigTest, ListsEveryProblem) {
  auto c = ParseAgentConfig(dir_ + "/agent.yaml",
                            "collector: {address: nope}\n"
                            "tls: {cert: a.pem, key: gone.key, ca: ca.pem}\n"
                            "source: ftp:/x\n"
                            "schedule: {interval: 5s, benchmark_interval: 10m}\n"
                            "labels: [a, b]\n"
                            "extra: 1\n");
  ASSERT_FALSE(c.ok());
  std::string m(c.status().message());
  EXPECT_THAT(m, HasSubstr("agent.yaml:1: collector.address: expected host:port"));
  EXPECT_THAT(m, HasSubstr("tls.key: file not found"));
  EXPECT_THAT(m, HasSubstr("agent.yaml:3: source"));
  EXPECT_THAT(m, HasSubstr("schedule.interval: must be at least 10s"));
  EXPECT_THAT(m, HasSubstr("never hourly"));
  EXPECT_THAT(m, HasSubstr("labels: expected a mapping"));
  EXPECT_THAT(m, HasSubstr("extra: unknown setting"));
}

TEST_F(AgentConfigTest, ChangesAreOffByDefaultWithTheJournalBesideTheSpool) {
  auto c = ParseAgentConfig(dir_ + "/agent.yaml",
                            "collector: {address: 'collector.example:7443'}\n"
                            "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n"
                            "spool: {dir: state/spool}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->changes.enforce);
  EXPECT_TRUE(c->changes.allow.empty());
  EXPECT_EQ(c->changes.journal_dir, dir_ + "/state/spool-changes");
}

TEST_F(AgentConfigTest, ChangesSection) {
  auto c = ParseAgentConfig(dir_ + "/agent.yaml",
                            "collector: {address: 'collector.example:7443'}\n"
                            "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n"
                            "changes:\n"
                            "  enforce: true\n"
                            "  allow: [server.requireSigning, share.encryptData]\n"
                            "  journal: journal\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->changes.enforce);
  EXPECT_THAT(c->changes.allow,
              ::testing::UnorderedElementsAre("server.requireSigning", "share.encryptData"));
  EXPECT_EQ(c->changes.journal_dir, dir_ + "/journal");
}

TEST_F(AgentConfigTest, ChangesAllowNamesAnUnknownSetting) {
  auto c = ParseAgentConfig(dir_ + "/agent.yaml",
                            "collector: {address: 'collector.example:7443'}\n"
                            "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n"
                            "changes: {enforce: yes-please, allow: [share.encryptData, "
                            "server.formatDisk], other: 1}\n");
  ASSERT_FALSE(c.ok());
  std::string m(c.status().message());
  EXPECT_THAT(m, HasSubstr("changes.allow: 'server.formatDisk' is not a known setting"));
  EXPECT_THAT(m, HasSubstr("changes.enforce"));
  EXPECT_THAT(m, HasSubstr("changes.other: unknown setting"));
}

TEST_F(AgentConfigTest, MissingSections) {
  auto c = ParseAgentConfig(dir_ + "/agent.yaml", "source: samba\n");
  ASSERT_FALSE(c.ok());
  std::string m(c.status().message());
  EXPECT_THAT(m, HasSubstr("collector: required"));
  EXPECT_THAT(m, HasSubstr("tls: required"));
}

TEST_F(AgentConfigTest, CompressionSamplingIsOffByDefaultAndValidated) {
  const std::string base =
      "collector: {address: 'collector.example:7443'}\n"
      "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n";
  auto defaults = ParseAgentConfig(dir_ + "/agent.yaml", base);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_FALSE(defaults->compression_sampling.enabled);
  EXPECT_TRUE(defaults->compression_sampling.shares.empty());

  auto set = ParseAgentConfig(dir_ + "/agent.yaml", base +
                                                        "compression_sampling:\n"
                                                        "  enabled: true\n"
                                                        "  shares: [Projects, backup]\n"
                                                        "  max_files: 8\n"
                                                        "  max_bytes_per_file: 512KiB\n"
                                                        "  max_bytes: 4MiB\n"
                                                        "  interval: 12h\n");
  ASSERT_TRUE(set.ok()) << set.status();
  const CompressionSamplingConfig& s = set->compression_sampling;
  EXPECT_TRUE(s.enabled);
  EXPECT_THAT(s.shares, ::testing::UnorderedElementsAre("projects", "backup"));
  EXPECT_EQ(s.max_files, 8u);
  EXPECT_EQ(s.max_bytes_per_file, 512u << 10);
  EXPECT_EQ(s.max_bytes, 4u << 20);
  EXPECT_EQ(s.interval, std::chrono::hours(12));

  auto bad = ParseAgentConfig(dir_ + "/agent.yaml", base +
                                                        "compression_sampling:\n"
                                                        "  enabled: true\n"
                                                        "  max_files: 0\n"
                                                        "  max_bytes_per_file: 0\n"
                                                        "  max_bytes: 64GiB\n"
                                                        "  interval: 5m\n"
                                                        "  depth: 3\n");
  ASSERT_FALSE(bad.ok());
  std::string m(bad.status().message());
  EXPECT_THAT(m, HasSubstr("compression_sampling.shares: required when enabled"));
  EXPECT_THAT(m, HasSubstr("compression_sampling.max_files"));
  EXPECT_THAT(m, HasSubstr("compression_sampling.max_bytes_per_file: 0 bytes; want 1 to 67108864"));
  EXPECT_THAT(m, HasSubstr("compression_sampling.max_bytes: 68719476736 bytes; want 1 to"));
  EXPECT_THAT(m, HasSubstr("compression_sampling.interval: must be at least 1h"));
  EXPECT_THAT(m, HasSubstr("compression_sampling.depth: unknown setting"));
}

TEST_F(AgentConfigTest, ChangeCountersAreOnByDefaultAndValidated) {
  const std::string base =
      "collector: {address: 'collector.example:7443'}\n"
      "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n";
  auto defaults = ParseAgentConfig(dir_ + "/agent.yaml", base);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE(defaults->changes.counters.enabled);
  EXPECT_EQ(defaults->changes.counters.interval, std::chrono::seconds(15));
  EXPECT_EQ(defaults->changes.counters.window, std::chrono::minutes(15));

  auto set = ParseAgentConfig(dir_ + "/agent.yaml",
                              base +
                                  "changes: {counters: {enabled: false, interval: 30s, "
                                  "window: 1h}}\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_FALSE(set->changes.counters.enabled);
  EXPECT_EQ(set->changes.counters.interval, std::chrono::seconds(30));
  EXPECT_EQ(set->changes.counters.window, std::chrono::hours(1));

  const std::pair<std::string, std::string> bad[] = {
      {"{interval: 500ms}", "changes.counters.interval: 500ms; must be at least 1s"},
      {"{interval: 1m, window: 30s}",
       "changes.counters.window: 30000ms; must be at least changes.counters.interval"},
      {"{interval: 1m, window: 2d}", "changes.counters.window: 172800s; must be at most 24h"},
      {"{interval: 1s, window: 1h}", "changes.counters.window: 3600 samples"},
      {"{rate: 1s}", "changes.counters.rate: unknown setting"},
      {"{enabled: maybe}", "changes.counters.enabled"},
  };
  for (const auto& [yaml, want] : bad) {
    auto c = ParseAgentConfig(dir_ + "/agent.yaml",
                              absl::StrCat(base, "changes: {counters: ", yaml, "}\n"));
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(want)) << yaml;
  }
}

TEST_F(AgentConfigTest, OneCollectorAddressIsTheTarget) {
  const std::string tail = "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n";
  auto c = ParseAgentConfig(dir_ + "/agent.yaml",
                            "collector: {address: 'collector.example:7443'}\n" + tail);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collector_address, "collector.example:7443");
  EXPECT_THAT(c->collector_addresses, ::testing::ElementsAre("collector.example:7443"));
  // A list of one is the same as the string, host names allowed.
  c = ParseAgentConfig(dir_ + "/agent.yaml",
                       "collector: {address: ['collector.example:7443']}\n" + tail);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collector_address, "collector.example:7443");
  EXPECT_EQ(c->collector_server_name, "collector.example");
  c = ParseAgentConfig(dir_ + "/agent.yaml", "collector: {address: '[fd00::5]:7443'}\n" + tail);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collector_server_name, "fd00::5");
}

TEST_F(AgentConfigTest, SeveralCollectorsAreOnePickFirstTarget) {
  const std::string tail = "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n";
  auto c = ParseAgentConfig(
      dir_ + "/agent.yaml",
      "collector: {address: ['10.0.0.5:7443', '10.0.0.6:7444'], server_name: collector.example}\n" +
          tail);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collector_address, "ipv4:10.0.0.5:7443,10.0.0.6:7444");
  EXPECT_EQ(c->collector_server_name, "collector.example");
  // One host, two ports: its name is the default TLS name, as for one address.
  c = ParseAgentConfig(dir_ + "/agent.yaml",
                       "collector: {address: ['127.0.0.1:7001', '127.0.0.1:7002']}\n" + tail);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collector_address, "ipv4:127.0.0.1:7001,127.0.0.1:7002");
  EXPECT_EQ(c->collector_server_name, "127.0.0.1");
  c = ParseAgentConfig(
      dir_ + "/agent.yaml",
      "collector: {address: ['[fd00::5]:7443', '[fd00::6]:7443'], server_name: c.example}\n" +
          tail);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collector_address, "ipv6:[fd00::5]:7443,[fd00::6]:7443");
}

TEST_F(AgentConfigTest, CollectorListProblemsNameTheEntry) {
  const std::string tail = "tls: {cert: a.pem, key: a.key, ca: ca.pem}\n";
  const std::pair<const char*, const char*> cases[] = {
      {"{address: ['10.0.0.5:7443', 'nope']}",
       "collector.address[1]: expected host:port, got 'nope'"},
      {"{address: ['10.0.0.5:7443', '10.0.0.6:0'], server_name: c}",
       "collector.address[1]: expected host:port, got '10.0.0.6:0': the port is 1 to 65535"},
      {"{address: ['10.0.0.5:7443', 'b.example:7443'], server_name: c}",
       "collector.address[1]: 'b.example:7443': several collectors are listed by IP address"},
      {"{address: ['10.0.0.5:7443', '[fd00::6]:7443'], server_name: c}",
       "collector.address[1]: '[fd00::6]:7443': the list mixes IPv4 and IPv6"},
      {"{address: ['10.0.0.5:7443', '10.0.0.6:7443']}",
       "collector.server_name: required: the addresses name different hosts ('10.0.0.5:7443', "
       "'10.0.0.6:7443')"},
      {"{address: []}", "collector.address: an empty list"},
      {"{address: 'fd00::5:7443'}",
       "collector.address: expected host:port, got 'fd00::5:7443': an "
       "IPv6 address goes in brackets"},
      {"{address: 'ipv4:10.0.0.5:7443,10.0.0.6:7443'}", "collector.address: expected host:port"},
      {"{address: [{a: 1}]}", "collector.address"},
  };
  for (const auto& [collector, want] : cases) {
    auto c =
        ParseAgentConfig(dir_ + "/agent.yaml", absl::StrCat("collector: ", collector, "\n", tail));
    ASSERT_FALSE(c.ok()) << collector;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(want)) << collector;
  }
}

TEST(CollectorTargetTest, AgentsSpreadByStartingEntry) {
  const std::vector<std::string> entries = {"127.0.0.1:7001", "127.0.0.2:7002", "127.0.0.3:7003"};
  EXPECT_EQ(*CollectorTarget(entries, "--collector", 0),
            "ipv4:127.0.0.1:7001,127.0.0.2:7002,127.0.0.3:7003");
  EXPECT_EQ(*CollectorTarget(entries, "--collector", 4),
            "ipv4:127.0.0.2:7002,127.0.0.3:7003,127.0.0.1:7001");
  EXPECT_EQ(*CollectorTarget({"c.example:7443"}, "--collector", 7), "c.example:7443");
  EXPECT_THAT(std::string(CollectorTarget({}, "--collector").status().message()),
              HasSubstr("--collector: required"));
}

}  // namespace
}  // namespace smbfleet::agent

// Smoke runs of the JSON benchmarks: the output parses and its numbers are positive. No
// timing goal is asserted here; the benchmarks themselves print the figures.

#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/core/command_runner.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace {

nlohmann::json RunJson(std::vector<std::string> argv) {
  auto runner = smbfleet::agent::NewPosixCommandRunner();
  smbfleet::agent::Command command;
  command.argv = std::move(argv);
  command.timeout = std::chrono::seconds(50);
  auto result = runner->Run(command);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {};
  EXPECT_EQ(result->exit_code, 0) << result->stderr_data;
  nlohmann::json doc = nlohmann::json::parse(result->stdout_data, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << "not JSON: " << result->stdout_data;
  return doc;
}

TEST(BenchSmokeTest, CryptoBenchCompareQuick) {
  nlohmann::json doc = RunJson({CRYPTO_BENCH_COMPARE, "--quick"});
  ASSERT_TRUE(doc.is_object());
  ASSERT_TRUE(doc["rows"].is_array());
  ASSERT_FALSE(doc["rows"].empty());
  EXPECT_EQ(doc["compared"].get<int>(), 1);
  for (const auto& row : doc["rows"]) {
    EXPECT_EQ(row["algorithm"], "HMAC_SHA256");
    EXPECT_EQ(row["bufferBytes"].get<int>(), 4096);
    EXPECT_GT(row["smbfleetBytesPerSecond"].get<double>(), 0);
    if (row["threads"].get<int>() == 1) {
      EXPECT_GT(row["opensslBytesPerSecond"].get<double>(), 0);
      EXPECT_GT(row["ratio"].get<double>(), 0);
    }
  }
  EXPECT_GT(doc["benchWallSecondsMax"].get<double>(), 0);
}

TEST(BenchSmokeTest, CompressionBenchQuick) {
  nlohmann::json doc = RunJson({COMPRESSION_BENCH, "--quick"});
  ASSERT_TRUE(doc.is_object());
  ASSERT_EQ(doc["rows"].size(), 6u);  // 2 algorithms x 3 corpora
  for (const auto& row : doc["rows"]) {
    EXPECT_GT(row["compressMBps"].get<double>(), 0);
    EXPECT_GT(row["decompressMBps"].get<double>(), 0);
    EXPECT_GE(row["ratio"].get<double>(), 1.0);
  }
  // The agent's own call runs at idle priority: on a saturated machine the cells past twice its
  // budget are left out, the first one never.
  EXPECT_GE(doc["agentRun"]["rows"].size(), 1u);
  EXPECT_LE(doc["agentRun"]["rows"].size(), 6u);
  EXPECT_GT(doc["agentRun"]["wallSeconds"].get<double>(), 0);
}

}  // namespace

namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

TEST(BenchSmokeTest, ApprovalOrdersOfAV2PayloadGrowWithTheLogarithmOfTheHosts) {
  nlohmann::json doc = RunJson({APPROVAL_ORDER_BENCH, "--hosts=16,1024"});
  ASSERT_EQ(doc["orders"].size(), 2U);
  const nlohmann::json& small = doc["orders"][0];
  const nlohmann::json& large = doc["orders"][1];
  // v1 orders carry every host; v2 orders a proof of log2(hosts) hashes.
  EXPECT_GT(large["v1"]["order_bytes"].get<double>(),
            30 * small["v1"]["order_bytes"].get<double>());
  EXPECT_EQ(small["v2"]["proof_hashes_max"].get<int>(), 4);  // log2(16)
  EXPECT_EQ(large["v2"]["proof_hashes_max"].get<int>(), 10);
  // Six more hashes (a tag and length byte each and 32 bytes), and a few bytes more for the
  // larger index and host count.
  const double grown =
      large["v2"]["order_bytes_max"].get<double>() - small["v2"]["order_bytes_max"].get<double>();
  EXPECT_GE(grown, 6 * (32 + 2));
  EXPECT_LE(grown, 6 * (32 + 2) + 8);
  EXPECT_GT(large["v2"]["tree_build_ms"].get<double>(), 0);
}

TEST(BenchSmokeTest, CostModelReportOnRecordedRuns) {
  std::string measured;
  for (const char* posture : {"none", "enc-aes-128-gcm"}) {
    for (int run = 1; run <= 2; ++run) {
      measured += std::string("{\"posture\":\"") + posture +
                  "\",\"workload\":\"large\",\"run\":" + std::to_string(run) +
                  ",\"bytes\":268435456,\"files\":0,\"seconds\":1.1,\"serverCpu\":1.0,"
                  "\"clientCpu\":0.6}\n";
      measured += std::string("{\"posture\":\"") + posture +
                  "\",\"workload\":\"connect\",\"run\":1,\"bytes\":0,\"files\":0,"
                  "\"seconds\":0.05,\"serverCpu\":0.02,\"clientCpu\":0.02}\n";
      measured += std::string("{\"posture\":\"") + posture +
                  "\",\"workload\":\"small\",\"run\":1,\"bytes\":4915200,\"files\":300,"
                  "\"seconds\":0.45,\"serverCpu\":0.2,\"clientCpu\":0.15}\n";
    }
  }
  std::string path = WriteTemp("measured.jsonl", measured);
  nlohmann::json doc = RunJson({COST_MODEL_REPORT, "--measured=" + path, "--calibrate"});
  ASSERT_TRUE(doc.is_object());
  ASSERT_EQ(doc["rows"].size(), 4u);
  for (const auto& row : doc["rows"]) {
    EXPECT_GT(row["predictedMBps"].get<double>(), 0);
    EXPECT_GT(row["measuredMBps"].get<double>(), 0);
    EXPECT_GT(row["predictedServerCpuSecondsPerGB"].get<double>(), 0);
  }
  EXPECT_GT(doc["loopbackRttMs"].get<double>(), 0);
  EXPECT_GT(doc["calibration"]["serverBaseCpuSecondsPerByte"].get<double>(), 0);
}

// The judged figure is the median of the runs by default and the least disturbed run with
// --statistic=best. Three runs of "none" at 1.0, 1.0 and 0.5 s, three of GCM at 2.0, 2.0 and
// 1.0 s: medians give 1.0 / 2.0 = 0.5 of none's throughput, best runs 0.5 / 1.0 = 0.5 as
// well, but the server CPU medians (1.0 vs 3.0) and minima (0.5 vs 1.0) differ.
TEST(BenchSmokeTest, CostModelReportJudgesByTheChosenStatistic) {
  std::string measured;
  const struct {
    const char* posture;
    double seconds, server;
  } kRuns[] = {{"none", 1.0, 1.0},
               {"none", 1.0, 1.0},
               {"none", 0.5, 0.5},
               {"enc-aes-128-gcm", 2.0, 3.0},
               {"enc-aes-128-gcm", 2.0, 3.0},
               {"enc-aes-128-gcm", 1.0, 1.0}};
  int run = 0;
  for (const auto& r : kRuns) {
    measured += std::string("{\"posture\":\"") + r.posture +
                "\",\"workload\":\"large\",\"run\":" + std::to_string(run++ % 3 + 1) +
                ",\"bytes\":1073741824,\"files\":0,\"seconds\":" + std::to_string(r.seconds) +
                ",\"serverCpu\":" + std::to_string(r.server) + ",\"clientCpu\":0.5}\n";
  }
  std::string path = WriteTemp("statistic.jsonl", measured);
  auto gcm = [](const nlohmann::json& doc) {
    for (const auto& row : doc["rows"]) {
      if (row["posture"] == "enc-aes-128-gcm") return row;
    }
    return nlohmann::json();
  };
  nlohmann::json median = RunJson({COST_MODEL_REPORT, "--measured=" + path});
  ASSERT_TRUE(median.is_object());
  EXPECT_EQ(median["statistic"], "median");
  EXPECT_NEAR(gcm(median)["judgedServerCpuVsNone"].get<double>(), 3.0, 1e-6);
  nlohmann::json best = RunJson({COST_MODEL_REPORT, "--measured=" + path, "--statistic=best"});
  ASSERT_TRUE(best.is_object());
  EXPECT_EQ(best["statistic"], "best");
  EXPECT_NEAR(gcm(best)["judgedServerCpuVsNone"].get<double>(), 2.0, 1e-6);
  EXPECT_NEAR(gcm(best)["judgedThroughputVsNone"].get<double>(), 0.5, 1e-6);
}

// Through a link (--link_mbit, --rtt_ms): every posture, "none" included, is judged on its
// absolute figures, and the order by server CPU is set beside the model's. 100 MiB at 100
// Mbit/s: GCM's server CPU (0.30-0.32 s) lies apart from none's (0.04-0.06 s) in every run, the
// throughputs overlap.
TEST(BenchSmokeTest, CostModelReportJudgesAbsoluteFiguresAcrossALink) {
  std::string measured;
  const struct {
    const char* posture;
    int run;
    double seconds, server;
  } kRuns[] = {{"none", 1, 9.5, 0.04},
               {"none", 2, 9.6, 0.05},
               {"none", 3, 9.7, 0.06},
               {"enc-aes-128-gcm", 1, 9.55, 0.30},
               {"enc-aes-128-gcm", 2, 9.65, 0.31},
               {"enc-aes-128-gcm", 3, 9.75, 0.32}};
  for (const auto& r : kRuns) {
    measured += std::string("{\"posture\":\"") + r.posture +
                "\",\"workload\":\"large\",\"run\":" + std::to_string(r.run) +
                ",\"bytes\":104857600,\"files\":0,\"seconds\":" + std::to_string(r.seconds) +
                ",\"serverCpu\":" + std::to_string(r.server) + ",\"clientCpu\":0}\n";
  }
  std::string path = WriteTemp("link.jsonl", measured);
  nlohmann::json doc = RunJson({COST_MODEL_REPORT, "--measured=" + path, "--link_mbit=100",
                                "--rtt_ms=0.5", "--client=smbclient"});
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["benchmark"], "cost_model_validate_link");
  EXPECT_EQ(doc["linkMbit"].get<double>(), 100);
  EXPECT_EQ(doc["rttMs"].get<double>(), 0.5);
  EXPECT_EQ(doc["client"], "smbclient");
  EXPECT_FALSE(doc.contains("loopbackRttMs"));
  EXPECT_EQ(doc["comparedPredictions"].get<int>(), 2);
  ASSERT_EQ(doc["rows"].size(), 2u);
  for (const auto& row : doc["rows"]) {
    // 100 Mbit/s x the link efficiency, less the headers: the link sets the pace.
    EXPECT_EQ(row["predictedLimit"], "link");
    EXPECT_NEAR(row["predictedMBps"].get<double>(), 10.8, 0.2);
    EXPECT_NEAR(row["absoluteThroughputErrorPercent"].get<double>(),
                (row["predictedMBps"].get<double>() / row["measuredMBps"].get<double>() - 1) * 100,
                1e-6);
    EXPECT_NEAR(row["absoluteServerCpuErrorPercent"].get<double>(),
                (row["predictedServerCpuSecondsPerGB"].get<double>() /
                     row["measuredServerCpuSecondsPerGB"].get<double>() -
                 1) *
                    100,
                1e-6);
  }
  EXPECT_NEAR(doc["rows"][0]["measuredServerCpuSecondsPerGB"].get<double>(), 0.05 / 104857600 * 1e9,
              1e-6);
  EXPECT_NEAR(doc["rows"][1]["measuredExtraServerCpuSecondsPerGB"].get<double>(),
              0.26 / 104857600 * 1e9, 1e-6);
  EXPECT_GT(doc["rows"][1]["predictedExtraServerCpuSecondsPerGB"].get<double>(), 0);
  EXPECT_EQ(doc["orderingByServerCpu"]["pairsSeparatedByMoreThanNoise"].get<int>(), 1);
  EXPECT_EQ(doc["orderingByServerCpu"]["concordant"].get<int>(), 1);
  EXPECT_EQ(doc["orderingByThroughput"]["pairs"].get<int>(), 1);
  EXPECT_EQ(doc["orderingByThroughput"]["pairsSeparatedByMoreThanNoise"].get<int>(), 0);
}

// Runs ARGV and returns its exit code and stderr.
std::pair<int, std::string> RunForError(std::vector<std::string> argv) {
  auto runner = smbfleet::agent::NewPosixCommandRunner();
  smbfleet::agent::Command command;
  command.argv = std::move(argv);
  command.timeout = std::chrono::seconds(50);
  auto result = runner->Run(command);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {-1, ""};
  return {result->exit_code, result->stderr_data};
}

TEST(BenchSmokeTest, CostModelReportRejectsABadLink) {
  std::string path = WriteTemp("empty.jsonl", "");
  auto [code, err] =
      RunForError({COST_MODEL_REPORT, "--measured=" + path, "--link_mbit=fast", "--rtt_ms=1"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("--link_mbit: 'fast' is not a number"), std::string::npos) << err;
  std::tie(code, err) = RunForError({COST_MODEL_REPORT, "--measured=" + path, "--link_mbit=100"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("--link_mbit and --rtt_ms go together"), std::string::npos) << err;
  std::tie(code, err) = RunForError(
      {COST_MODEL_REPORT, "--measured=" + path, "--link_mbit=100", "--rtt_ms=1", "--client=nfs"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("nfs"), std::string::npos) << err;
}

// The link validation's flags are checked before anything is started (no root needed).
TEST(BenchSmokeTest, CostModelValidateLinkRejectsBadFlags) {
  const std::vector<std::string> base = {
      "/bin/bash", COST_MODEL_VALIDATE_LINK, "--link", "/bin/true", "--report", "/bin/true"};
  const struct {
    std::vector<std::string> extra;
    const char* message;
  } kCases[] = {
      {{"--runs", "0"}, "--runs: want 1..15, got '0'"},
      {{"--mib", "lots"}, "--mib: want 8..1024, got 'lots'"},
      {{"--rates", "1000 1G"}, "--rates: '1G' is not a number of Mbit/s"},
      {{"--one-way", "0.25 $(id)"}, "--one-way: '$(id)' is not a number of milliseconds"},
      {{"--statistic", "mean"}, "--statistic: want median or best, got 'mean'"},
      {{"--runs"}, "--runs wants a value"},
      {{"--colour"}, "unknown argument '--colour'"},
      {{"--mtu", "jumbo"}, "--mtu: want 576..65000, got 'jumbo'"},
      {{"--postures", "none rot13"}, "--postures: 'rot13' is not one of: none sign-hmac-sha256"},
  };
  for (const auto& c : kCases) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), c.extra.begin(), c.extra.end());
    auto [code, err] = RunForError(argv);
    EXPECT_EQ(code, 1) << c.message;
    EXPECT_NE(err.find(c.message), std::string::npos) << err;
  }
  auto [code, err] = RunForError({"/bin/bash", COST_MODEL_VALIDATE_LINK, "--link",
                                  "/nonexistent/link", "--report", "/bin/true"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("--link must name the built smbfleet-delay-link, got '/nonexistent/link'"),
            std::string::npos)
      << err;
}

TEST(BenchSmokeTest, CostModelReportNamesABadLine) {
  std::string path =
      WriteTemp("bad.jsonl", "{\"posture\":\"none\",\"workload\":\"large\"}\n{oops\n");
  auto runner = smbfleet::agent::NewPosixCommandRunner();
  smbfleet::agent::Command command;
  command.argv = {COST_MODEL_REPORT, "--measured=" + path};
  auto result = runner->Run(command);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 1);
  EXPECT_NE(result->stderr_data.find("bad.jsonl:2: not a measurement line"), std::string::npos)
      << result->stderr_data;
}

}  // namespace

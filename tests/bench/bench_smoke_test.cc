// Smoke runs of the JSON benchmarks: the output parses and its numbers are positive. No
// timing goal is asserted here; the benchmarks themselves print the figures.

#include <cstdio>
#include <string>

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
  EXPECT_EQ(doc["agentRun"]["rows"].size(), 6u);
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

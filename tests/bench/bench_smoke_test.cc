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

TEST(BenchSmokeTest, CostModelReportNamesABadLine) {
  std::string path = WriteTemp("bad.jsonl", "{\"posture\":\"none\",\"workload\":\"large\"}\n{oops\n");
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

// Smoke runs of the JSON benchmarks: the output parses and its numbers are positive. No
// timing goal is asserted here; the benchmarks themselves print the figures.

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

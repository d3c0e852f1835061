// The product command: `smbfleet-agent bench --format=json` prints crypto and compression rows
// and the cost of a page fault as protobuf JSON, and the text form a line per row.
#include <set>
#include <string>
#include <utility>

#include "agent/core/command_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent {
namespace {

using ::testing::ContainsRegex;

CommandResult Bench(const std::string& format) {
  auto runner = NewPosixCommandRunner();
  Command c;
  c.argv = {SMBFLEET_AGENT_BINARY, "bench", "--format=" + format};
  c.timeout = std::chrono::seconds(60);
  auto r = runner->Run(c);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : CommandResult{};
}

TEST(AgentBenchCommandTest, JsonHasCryptoAndCompressionRows) {
  CommandResult r = Bench("json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  nlohmann::json doc = nlohmann::json::parse(r.stdout_data, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << "not JSON: " << r.stdout_data.substr(0, 200);
  ASSERT_TRUE(doc["benchmarks"].is_array());
  EXPECT_FALSE(doc["benchmarks"].empty());
  ASSERT_TRUE(doc["compressionBenchmarks"].is_array()) << r.stdout_data.substr(0, 400);
  std::set<std::pair<std::string, std::string>> cells;
  for (const auto& row : doc["compressionBenchmarks"]) {
    cells.insert({row["algorithm"].get<std::string>(), row["corpus"].get<std::string>()});
    EXPECT_GT(row["compressBytesPerSecond"].get<double>(), 0);
    EXPECT_GT(row["decompressBytesPerSecond"].get<double>(), 0);
    EXPECT_GE(row["ratio"].get<double>(), 1.0);
    EXPECT_EQ(row["threads"], 1);
    EXPECT_TRUE(row.contains("measuredAt"));
  }
  // Six cells (2 algorithms x 3 corpora), in order; at idle priority on a saturated machine the
  // cells past twice the budget are left out, so only the first is certain.
  EXPECT_GE(cells.size(), 1u);
  EXPECT_LE(cells.size(), 6u);
  EXPECT_TRUE(cells.count({"COMPRESSION_LZ77_HUFFMAN", "text"}));
  // The page fault: measured on this (Linux) host, with the faults it was divided by.
  ASSERT_TRUE(doc["memoryBenchmark"].is_object()) << r.stdout_data.substr(0, 400);
  EXPECT_GT(doc["memoryBenchmark"]["pageFaultSeconds"].get<double>(), 0);
  EXPECT_GT(std::stoull(doc["memoryBenchmark"]["faults"].get<std::string>()), 0u);
  EXPECT_TRUE(doc["memoryBenchmark"].contains("measuredAt"));
  // The text corpus compresses, the already compressed one does not.
  for (const auto& row : doc["compressionBenchmarks"]) {
    if (row["corpus"] == "text") {
      EXPECT_GT(row["ratio"].get<double>(), 2.5);
    }
    if (row["corpus"] == "compressed") {
      EXPECT_LT(row["ratio"].get<double>(), 1.01);
    }
  }
}

TEST(AgentBenchCommandTest, TextHasALinePerRow) {
  CommandResult r = Bench("text");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_THAT(r.stdout_data, ContainsRegex("AES_128_GCM\t65536 B\t1 thread\\(s\\)\t[0-9]+ MB/s"));
  EXPECT_THAT(r.stdout_data,
              ContainsRegex("COMPRESSION_LZ77_HUFFMAN\ttext\t1 thread\\(s\\)\tcompress [0-9]+ "
                            "MB/s\tdecompress [0-9]+ MB/s\tratio [0-9]+\\.[0-9][0-9]\n"));
  EXPECT_THAT(
      r.stdout_data,
      ContainsRegex("page fault\t[0-9]+\\.[0-9][0-9] us\t[0-9]+ faults of [0-9]+ B pages\n"));
}

}  // namespace
}  // namespace smbfleet::agent

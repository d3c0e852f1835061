// The product command: `smbfleet-agent bench --format=json` prints crypto and compression rows
// as protobuf JSON, and the text form a line per row.
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
  // Every cell times at least one pass, so all six rows are there even on a loaded machine.
  EXPECT_EQ(cells.size(), 6u);
  EXPECT_TRUE(cells.count({"COMPRESSION_LZ77_HUFFMAN", "vm-disk"}));
  EXPECT_TRUE(cells.count({"COMPRESSION_LZ4", "compressed"}));
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

TEST(AgentBenchCommandTest, TextHasALinePerCompressionRow) {
  CommandResult r = Bench("text");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_THAT(r.stdout_data, ContainsRegex("AES_128_GCM\t65536 B\t1 thread\\(s\\)\t[0-9]+ MB/s"));
  EXPECT_THAT(r.stdout_data,
              ContainsRegex("COMPRESSION_LZ77_HUFFMAN\tvm-disk\t1 thread\\(s\\)\tcompress [0-9]+ "
                            "MB/s\tdecompress [0-9]+ MB/s\tratio [0-9]+\\.[0-9][0-9]\n"));
  EXPECT_THAT(r.stdout_data, ContainsRegex("COMPRESSION_LZ4\ttext\t"));
}

}  // namespace
}  // namespace smbfleet::agent

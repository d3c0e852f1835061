#include "common/yaml_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(YamlConfigTest, ReportsEveryProblemWithLine) {
  const std::string text =
      "listen: 127.0.0.1:1\n"
      "interval: 10 parsecs\n"
      "bogus: 1\n"
      "limits:\n"
      "  max: lots\n";
  auto root = ParseYaml("c.yaml", text);
  ASSERT_TRUE(root.ok()) << root.status();
  ConfigProblems problems("c.yaml");
  CheckKeys(*root, {"listen", "interval", "limits"}, "", &problems);
  std::chrono::milliseconds d{0};
  EXPECT_FALSE(ReadDuration(*root, "interval", "", &d, &problems));
  uint64_t max = 0;
  EXPECT_FALSE(ReadUint((*root)["limits"], "max", "limits", 0, 10, &max, &problems));
  ASSERT_EQ(problems.problems().size(), 3u);
  EXPECT_THAT(problems.problems()[0], AllOf(HasSubstr("c.yaml:3"), HasSubstr("bogus")));
  EXPECT_THAT(problems.problems()[1], AllOf(HasSubstr("c.yaml:2"), HasSubstr("interval")));
  EXPECT_THAT(problems.problems()[2], AllOf(HasSubstr("c.yaml:5"), HasSubstr("limits.max")));
  EXPECT_THAT(std::string(problems.ToStatus().message()), HasSubstr("3 problems"));
}

TEST(YamlConfigTest, SyntaxErrorNamesFileAndLine) {
  auto root = ParseYaml("bad.yaml", "a: [1, 2\nb: 3\n");
  ASSERT_FALSE(root.ok());
  EXPECT_THAT(std::string(root.status().message()), HasSubstr("bad.yaml:"));
}

TEST(YamlConfigTest, TopLevelMustBeMapping) {
  auto root = ParseYaml("list.yaml", "- a\n- b\n");
  ASSERT_FALSE(root.ok());
  EXPECT_THAT(std::string(root.status().message()), HasSubstr("mapping"));
}

struct DurationCase {
  const char* text;
  int64_t ms;  // -1 = error
};

TEST(YamlConfigTest, Durations) {
  const DurationCase cases[] = {{"250ms", 250},  {"90s", 90000},   {"10m", 600000},
                                {"1h", 3600000}, {"1d", 86400000}, {"1 h", -1},
                                {"h", -1},       {"5y", -1},       {"", -1}};
  for (const auto& c : cases) {
    auto d = ParseDuration(c.text);
    if (c.ms < 0) {
      EXPECT_FALSE(d.ok()) << c.text;
    } else {
      ASSERT_TRUE(d.ok()) << c.text << ": " << d.status();
      EXPECT_EQ(d->count(), c.ms) << c.text;
    }
  }
}

TEST(YamlConfigTest, ByteSizes) {
  EXPECT_EQ(*ParseByteSize("4MiB"), 4u << 20);
  EXPECT_EQ(*ParseByteSize("512KiB"), 512u << 10);
  EXPECT_EQ(*ParseByteSize("1048576"), 1048576u);
  EXPECT_FALSE(ParseByteSize("4MB").ok());
  EXPECT_FALSE(ParseByteSize("99999999999999999999GiB").ok());
}

TEST(YamlConfigTest, ResolvesRelativePaths) {
  EXPECT_EQ(ResolvePath("/etc/smbfleet/agent.yaml", "certs/a.pem"), "/etc/smbfleet/certs/a.pem");
  EXPECT_EQ(ResolvePath("/etc/smbfleet/agent.yaml", "/abs.pem"), "/abs.pem");
  EXPECT_EQ(ResolvePath("agent.yaml", "a.pem"), "a.pem");
}

}  // namespace
}  // namespace smbfleet

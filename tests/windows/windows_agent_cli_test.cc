// The product command on every fixture: `smbfleet-agent collect --once
// --source=windows-capture:DIR --format=json` prints the posture as protobuf JSON.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/core/command_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent {
namespace {

using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return absl::StrCat(SMBFLEET_SOURCE_DIR, "/tests/fixtures/windows/", name);
}

CommandResult Collect(const std::string& source) {
  auto runner = NewPosixCommandRunner();
  Command c;
  c.argv = {SMBFLEET_AGENT_BINARY, "collect", "--once", "--source=" + source, "--format=json"};
  c.timeout = std::chrono::milliseconds(60000);
  auto r = runner->Run(c);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : CommandResult{};
}

TEST(WindowsAgentCliTest, EveryFixturePrintsItsPosture) {
  struct Case {
    const char* dir;
    const char* hostname;
    size_t shares;
  };
  for (const Case& c : {Case{"ws2016", "FS2016", 1}, Case{"ws2019", "FS2019", 5},
                        Case{"ws2022", "FS2022", 5}, Case{"ws2025", "FS2025", 5}}) {
    CommandResult r = Collect(absl::StrCat("windows-capture:", Fixture(c.dir)));
    ASSERT_EQ(r.exit_code, 0) << c.dir << ": " << r.stderr_data;
    nlohmann::json doc = nlohmann::json::parse(r.stdout_data, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << c.dir << ": not JSON: " << r.stdout_data.substr(0, 200);
    EXPECT_EQ(doc["host"]["hostname"], c.hostname);
    EXPECT_EQ(doc["host"]["platform"], "PLATFORM_WINDOWS");
    EXPECT_EQ(doc["shares"].size(), c.shares) << c.dir;
  }
  CommandResult ws2022 = Collect(absl::StrCat("windows-capture:", Fixture("ws2022")));
  EXPECT_THAT(ws2022.stdout_data, HasSubstr("\"9007199254740993\""));
}

TEST(WindowsAgentCliTest, MissingFolderFailsWithAClearMessage) {
  CommandResult r = Collect("windows-capture:no/such/folder");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_data, HasSubstr("no/such/folder"));
}

// `service ACTION`: the action is required and named in the usage; on this (non-Windows) build
// the commands say where the service belongs instead of pretending to install anything.
TEST(WindowsAgentCliTest, ServiceCommandsNeedAnActionAndWindows) {
  auto runner = NewPosixCommandRunner();
  auto run = [&runner](std::vector<std::string> args) {
    Command c;
    c.argv = {SMBFLEET_AGENT_BINARY};
    c.argv.insert(c.argv.end(), args.begin(), args.end());
    c.timeout = std::chrono::milliseconds(60000);
    auto r = runner->Run(c);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : CommandResult{};
  };
  CommandResult no_action = run({"service"});
  EXPECT_EQ(no_action.exit_code, 2);
  EXPECT_THAT(no_action.stderr_data, HasSubstr("service needs an action"));
  CommandResult flag_first = run({"service", "--config", "agent.yaml"});
  EXPECT_EQ(flag_first.exit_code, 2);
  CommandResult install = run({"service", "install", "--config", "agent.yaml"});
  EXPECT_EQ(install.exit_code, 1);
  EXPECT_THAT(install.stderr_data, HasSubstr("service install: service commands are for Windows"));
}

}  // namespace
}  // namespace smbfleet::agent

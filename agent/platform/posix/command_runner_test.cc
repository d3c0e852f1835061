#include "agent/core/command_runner.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

using ::testing::HasSubstr;

TEST(PosixCommandRunnerTest, CapturesOutputAndExitCode) {
  auto runner = NewPosixCommandRunner();
  Command c;
  c.argv = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"};
  auto r = runner->Run(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->stdout_data, "out\n");
  EXPECT_EQ(r->stderr_data, "err\n");
}

TEST(PosixCommandRunnerTest, ArgumentsAreNotInterpretedByAShell) {
  auto runner = NewPosixCommandRunner();
  Command c;
  c.argv = {"/bin/echo", "a; rm -rf /tmp/x", "$(id)", "`id`"};
  auto r = runner->Run(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_data, "a; rm -rf /tmp/x $(id) `id`\n");
}

TEST(PosixCommandRunnerTest, StdinAndEnvironment) {
  auto runner = NewPosixCommandRunner();
  Command c;
  c.argv = {"/bin/sh", "-c", "cat; printf %s \"$SMBFLEET_X\""};
  c.stdin_data = "piped ";
  c.env["SMBFLEET_X"] = "value";
  auto r = runner->Run(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_data, "piped value");
}

TEST(PosixCommandRunnerTest, TimeoutKillsProcessGroup) {
  auto runner = NewPosixCommandRunner();
  Command c;
  c.argv = {"/bin/sh", "-c", "sleep 30 & sleep 30"};
  c.timeout = std::chrono::milliseconds(200);
  auto r = runner->Run(c);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status()));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("timed out"));
}

TEST(PosixCommandRunnerTest, OutputCap) {
  auto runner = NewPosixCommandRunner();
  Command c;
  c.argv = {"/bin/sh", "-c", "head -c 100000 /dev/zero"};
  c.max_output_bytes = 1000;
  auto r = runner->Run(c);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(r.status()));
}

TEST(PosixCommandRunnerTest, MissingProgramIsNotFound) {
  auto runner = NewPosixCommandRunner();
  Command c;
  c.argv = {"/nonexistent/smbstatus", "--json"};
  auto r = runner->Run(c);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status()));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("/nonexistent/smbstatus"));
}

}  // namespace
}  // namespace smbfleet::agent

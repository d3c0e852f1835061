#include "agent/core/command_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "common/testing/temp_dir.h"
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

std::string TempDir() { return smbfleet::testing::MakeTestDir("smbfleet-runner"); }

TEST(PosixCommandRunnerTest, ChildThatClosedItsPipesAndHangsIsKilledAtTheTimeout) {
  std::string pid_file = TempDir() + "/pid";
  auto runner = NewPosixCommandRunner();
  Command c;
  // Without its pipes the runner sees end of file at once; the process group lives on.
  c.argv = {"/bin/sh", "-c", "echo $$ > \"$1\"; exec >&- 2>&-; sleep 20 & sleep 20", "sh",
            pid_file};
  c.timeout = std::chrono::milliseconds(300);
  auto r = runner->Run(c);
  ASSERT_FALSE(r.ok()) << "exit " << r->exit_code;
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  // The shell was reaped (no zombie left to this process), its group killed.
  pid_t pid = 0;
  std::ifstream(pid_file) >> pid;
  ASSERT_GT(pid, 0);
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

std::atomic<int> sigpipes{0};
void CountSigpipe(int) { ++sigpipes; }

TEST(PosixCommandRunnerTest, SigpipeIsNeverSwitchedProcessWide) {
  struct sigaction count {
  }, old{};
  count.sa_handler = CountSigpipe;
  ASSERT_EQ(::sigaction(SIGPIPE, &count, &old), 0);
  std::string started = TempDir() + "/started";
  auto runner = NewPosixCommandRunner();
  std::thread run([&] {
    Command c;
    c.argv = {"/bin/sh", "-c", "touch \"$1\"; sleep 2", "sh", started};
    c.stdin_data = "x";
    EXPECT_TRUE(runner->Run(c).ok());
  });
  // While a run is going on, another thread of the process sees its own SIGPIPE handling.
  for (int i = 0; i < 1000 && ::access(started.c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  struct sigaction during {};
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &during), 0);
  run.join();
  EXPECT_EQ(during.sa_handler, &CountSigpipe) << "a run switched SIGPIPE for the whole process";

  // A child that exits without reading its stdin: no SIGPIPE reaches the process.
  Command c;
  c.argv = {"/bin/true"};
  c.stdin_data = std::string(4 << 20, 'x');
  auto r = runner->Run(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(sigpipes.load(), 0);
  ::sigaction(SIGPIPE, &old, nullptr);
}

}  // namespace
}  // namespace smbfleet::agent

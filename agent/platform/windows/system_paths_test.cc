#include "agent/platform/windows/shim/system_paths.h"

#include "agent/platform/platform.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::windows::shim {
namespace {

TEST(SystemPathsTest, PowerShellIsNamedByItsFullPathInTheSystemDirectory) {
  EXPECT_EQ(PowerShellPathIn("C:\\Windows\\system32"),
            "C:\\Windows\\system32\\WindowsPowerShell\\v1.0\\powershell.exe");
  EXPECT_EQ(PowerShellPathIn("D:\\WINNT\\System32\\"),
            "D:\\WINNT\\System32\\WindowsPowerShell\\v1.0\\powershell.exe");
}

// What the agent passes to the PowerShell runner and the Windows applier: never the bare name
// that the search order would resolve in the agent's folder first.
TEST(SystemPathsTest, TheAgentsPowerShellIsAnAbsolutePath) {
  std::string exe = platform::PowerShellPath();
  EXPECT_NE(exe, "powershell.exe");
  EXPECT_EQ(exe.substr(1, 2), ":\\") << exe;
  const std::string tail = "\\WindowsPowerShell\\v1.0\\powershell.exe";
  ASSERT_GT(exe.size(), tail.size());
  EXPECT_EQ(exe.substr(exe.size() - tail.size()), tail) << exe;
}

}  // namespace
}  // namespace smbfleet::agent::windows::shim

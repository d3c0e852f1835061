// Quoting round trip for cmdline.h, built for Windows by build-mingw.sh (no gtest there). The
// same cases run on Linux in windows_shim_cmdline_test.
#include <cstdio>
#include <string>
#include <vector>

#include "agent/platform/windows/shim/cmdline.h"

int main() {
  using smbfleet::agent::windows::shim::BuildCommandLine;
  using smbfleet::agent::windows::shim::SplitCommandLine;
  const std::vector<std::vector<std::string>> cases = {
      {"powershell.exe", "-NoProfile", "-EncodedCommand", "SQBFAFgA"},
      {"C:\\Program Files\\smbfleet\\smbfleet-agent.exe", "run", "--config", "C:\\cfg dir\\a.yaml"},
      {"x", "", "a b", "a\"b", "a\\\"b", "trail\\", "trail space\\", "\\\\server\\share"},
      {"x", "Reports'; Remove-Item C:\\ -Recurse; '", "$(calc)", "a`\"b"},
  };
  int failures = 0;
  for (const auto& argv : cases) {
    std::vector<std::string> back = SplitCommandLine(BuildCommandLine(argv));
    if (back != argv) {
      std::printf("FAILED: %s\n", BuildCommandLine(argv).c_str());
      ++failures;
    }
  }
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}

// smbfleet-shim-selftest.exe: exercises the shim on a Windows host (or under wine for the
// process part): runs a child with pipes and a timeout, reads the SMB channels.
//   smbfleet-shim-selftest.exe             process + event log checks, exit 0 when they pass
#include <cstdio>
#include <string>

#include "agent/platform/windows/shim/cmdline.h"
#include "agent/platform/windows/shim/event_log.h"
#include "agent/platform/windows/shim/process.h"
#include "agent/platform/windows/shim/system_paths.h"

using namespace smbfleet::agent::windows::shim;

int main() {
  int failures = 0;
  ProcessRequest echo;
  echo.argv = {"cmd.exe", "/c", "echo", "hello"};
  echo.timeout_ms = 10000;
  ProcessResult r = RunProcess(echo);
  bool ok =
      r.outcome == ProcessOutcome::kExited && r.stdout_data.find("hello") != std::string::npos;
  std::printf("process: %s (%s)\n", ok ? "ok" : "FAILED", r.error.c_str());
  failures += ok ? 0 : 1;

  // PowerShell by its full path: found without the search order.
  ProcessRequest ps;
  ps.argv = {SystemPowerShellPath(), "-NoProfile", "-NonInteractive", "-Command", "exit 7"};
  ps.timeout_ms = 60000;
  r = RunProcess(ps);
  std::printf("powershell %s: %s\n", ps.argv[0].c_str(),
              r.outcome == ProcessOutcome::kExited && r.exit_code == 7 ? "ok" : r.error.c_str());

  ProcessRequest slow;
  slow.argv = {"cmd.exe", "/c", "ping", "-n", "30", "127.0.0.1"};
  slow.timeout_ms = 500;
  r = RunProcess(slow);
  ok = r.outcome == ProcessOutcome::kTimedOut;
  std::printf("timeout: %s\n", ok ? "ok" : "FAILED");
  failures += ok ? 0 : 1;

  ProcessRequest missing;
  missing.argv = {"no-such-program-smbfleet.exe"};
  r = RunProcess(missing);
  ok = r.outcome == ProcessOutcome::kNotFound;
  std::printf("not found: %s (%s)\n", ok ? "ok" : "FAILED", r.error.c_str());
  failures += ok ? 0 : 1;

  ChannelRead events = ReadChannel("Microsoft-Windows-SMBServer/Operational", 0, 5);
  std::printf("event log: exists=%d latest=%llu read=%zu error=%s\n", events.channel_exists ? 1 : 0,
              static_cast<unsigned long long>(events.latest_record_id), events.events.size(),
              events.error.c_str());
  return failures == 0 ? 0 : 1;
}

#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_WINDOWS_NATIVE_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_WINDOWS_NATIVE_H_

// Windows builds only: the live source wired to the shim (process launch through CreateProcess
// and a job object, SMB events through the Windows Event Log API).

#include <memory>

#include "agent/core/command_runner.h"
#include "agent/core/source.h"
#include "agent/platform/windows/windows_source.h"

namespace smbfleet::agent::windows {

// CommandRunner over shim::RunProcess (argv quoted per CommandLineToArgvW, job-object kill on
// timeout or output over the cap).
std::unique_ptr<CommandRunner> NewWindowsCommandRunner();

// A PowerShellRunner that serves the "events" probe from the Event Log API and passes every
// other script to `inner` (not owned).
std::unique_ptr<PowerShellRunner> NewNativeEventsRunner(PowerShellRunner* inner);

// `--source=windows`: powershell.exe through NewWindowsCommandRunner, events through the API,
// sessions' round-trip times from TCP extended statistics (shim/tcp_estats.h).
std::unique_ptr<smbfleet::agent::PostureSource> NewWindowsDefaultLiveSource(WindowsOptions options);

}  // namespace smbfleet::agent::windows

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_WINDOWS_NATIVE_H_

#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_SERVICE_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_SERVICE_H_

// Windows-only: the agent as a Windows service. Install (automatic delayed start, LocalSystem,
// restart on failure), start, stop, uninstall, and the service entry point. Plain C++ only
// (builds with mingw-w64).

#include <cstdint>
#include <functional>
#include <string>

namespace smbfleet::agent::windows::shim {

struct ServiceSpec {
  std::string name = "smbfleet-agent";
  std::string display_name = "smbfleet agent";
  std::string description = "Reports this server's SMB posture to the smbfleet collector.";
  std::string command_line;  // full, quoted: "C:\...\smbfleet-agent.exe" run --config "C:\..."
  // Recovery: restart after each of the first three failures, reset the count after a day.
  uint32_t restart_delay_ms = 60000;
  uint32_t failure_reset_seconds = 86400;
};

// Each returns an empty string on success, else what failed with the Windows error text.
std::string InstallService(const ServiceSpec& spec);
std::string UninstallService(const std::string& name);
std::string StartService(const std::string& name);
std::string StopService(const std::string& name, uint32_t timeout_ms);

// The body of the service: runs until stop_requested() turns true and returns the exit code.
using ServiceBody = std::function<int(const std::function<bool()>& stop_requested)>;

// Connects to the service control manager and runs `body` as the service `name`. Returns when
// the service stopped; returns false (with *error) when not started by the SCM (e.g. run from a
// console), so that the caller can run `body` in the foreground instead. `on_stop`, when set,
// runs on the control handler's thread as soon as the SCM asks the service to stop, so that a
// body blocked on a condition variable wakes without polling stop_requested().
bool RunAsService(const std::string& name, ServiceBody body, std::string* error,
                  std::function<void()> on_stop = nullptr);

}  // namespace smbfleet::agent::windows::shim

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_SERVICE_H_

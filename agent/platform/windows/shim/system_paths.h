#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_SYSTEM_PATHS_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_SYSTEM_PATHS_H_

// Programs the agent starts are named by their full path in the system directory: a bare
// "powershell.exe" is looked up in the agent's own folder and the working directory before
// System32, so a file planted there would run as the agent. Plain C++; the path builder is
// unit-tested on any platform, SystemPowerShellPath() exists in Windows builds only.

#include <string>

namespace smbfleet::agent::windows::shim {

// "C:\Windows\system32" -> "C:\Windows\system32\WindowsPowerShell\v1.0\powershell.exe".
inline std::string PowerShellPathIn(std::string system_dir) {
  while (!system_dir.empty() && (system_dir.back() == '\\' || system_dir.back() == '/')) {
    system_dir.pop_back();
  }
  return system_dir + "\\WindowsPowerShell\\v1.0\\powershell.exe";
}

// PowerShellPathIn(GetSystemDirectoryW()). Windows only.
std::string SystemPowerShellPath();

}  // namespace smbfleet::agent::windows::shim

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_SYSTEM_PATHS_H_

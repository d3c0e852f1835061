#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_CONSOLE_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_CONSOLE_H_

// Windows-only: stopping the agent when it runs in a console. Plain C++ only (builds with
// mingw-w64).

#include <functional>
#include <string>

namespace smbfleet::agent::windows::shim {

// Calls on_stop on Ctrl+C, Ctrl+Break, console close, logoff or shutdown. Windows runs console
// control handlers on a thread of their own, so on_stop may take locks. Returns false (with
// *error) when the handler cannot be installed.
bool InstallConsoleStopHandler(std::function<void()> on_stop, std::string* error);

}  // namespace smbfleet::agent::windows::shim

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_CONSOLE_H_

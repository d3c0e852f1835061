#include <windows.h>

#include <utility>

#include "agent/platform/windows/shim/console.h"
#include "agent/platform/windows/shim/process.h"

namespace smbfleet::agent::windows::shim {
namespace {

// The handler is a C callback: the callback it calls lives here.
std::function<void()>* g_on_stop = nullptr;

BOOL WINAPI OnConsoleControl(DWORD event) {
  switch (event) {
    case CTRL_C_EVENT:
    case CTRL_BREAK_EVENT:
    case CTRL_CLOSE_EVENT:
    case CTRL_LOGOFF_EVENT:
    case CTRL_SHUTDOWN_EVENT:
      if (g_on_stop != nullptr) (*g_on_stop)();
      return TRUE;
    default:
      return FALSE;
  }
}

}  // namespace

bool InstallConsoleStopHandler(std::function<void()> on_stop, std::string* error) {
  static std::function<void()> callback;
  callback = std::move(on_stop);
  g_on_stop = &callback;
  if (!SetConsoleCtrlHandler(&OnConsoleControl, TRUE)) {
    if (error != nullptr) *error = "SetConsoleCtrlHandler: " + ErrorText(GetLastError());
    return false;
  }
  return true;
}

}  // namespace smbfleet::agent::windows::shim

#include <windows.h>

#include <atomic>
#include <thread>
#include <vector>

#include "agent/platform/windows/shim/process.h"
#include "agent/platform/windows/shim/service.h"

namespace smbfleet::agent::windows::shim {
namespace {

struct ScHandle {
  SC_HANDLE h = nullptr;
  explicit ScHandle(SC_HANDLE handle) : h(handle) {}
  ScHandle(const ScHandle&) = delete;
  ScHandle& operator=(const ScHandle&) = delete;
  ~ScHandle() {
    if (h != nullptr) CloseServiceHandle(h);
  }
};

std::string Fail(const std::string& what) { return what + ": " + ErrorText(GetLastError()); }

// The service entry point is a C callback: its state lives here.
struct ServiceState {
  std::wstring name;
  ServiceBody body;
  std::function<void()> on_stop;
  SERVICE_STATUS_HANDLE status_handle = nullptr;
  SERVICE_STATUS status{};
  std::atomic<bool> stop{false};
  HANDLE stop_event = nullptr;
};
ServiceState* g_state = nullptr;

void Report(DWORD state, DWORD exit_code, DWORD wait_hint) {
  static DWORD checkpoint = 1;
  g_state->status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
  g_state->status.dwCurrentState = state;
  g_state->status.dwWin32ExitCode = exit_code == 0 ? NO_ERROR : ERROR_SERVICE_SPECIFIC_ERROR;
  g_state->status.dwServiceSpecificExitCode = exit_code;
  g_state->status.dwWaitHint = wait_hint;
  g_state->status.dwControlsAccepted =
      state == SERVICE_START_PENDING ? 0 : SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN;
  g_state->status.dwCheckPoint =
      (state == SERVICE_RUNNING || state == SERVICE_STOPPED) ? 0 : checkpoint++;
  SetServiceStatus(g_state->status_handle, &g_state->status);
}

DWORD WINAPI Control(DWORD control, DWORD, LPVOID, LPVOID) {
  if (control == SERVICE_CONTROL_STOP || control == SERVICE_CONTROL_SHUTDOWN) {
    Report(SERVICE_STOP_PENDING, 0, 30000);
    g_state->stop.store(true);
    SetEvent(g_state->stop_event);
    if (g_state->on_stop) g_state->on_stop();
    return NO_ERROR;
  }
  if (control == SERVICE_CONTROL_INTERROGATE) return NO_ERROR;
  return ERROR_CALL_NOT_IMPLEMENTED;
}

void WINAPI ServiceMain(DWORD, LPWSTR*) {
  g_state->status_handle = RegisterServiceCtrlHandlerExW(g_state->name.c_str(), &Control, nullptr);
  if (g_state->status_handle == nullptr) return;
  Report(SERVICE_START_PENDING, 0, 10000);
  Report(SERVICE_RUNNING, 0, 0);
  int code = g_state->body([] { return g_state->stop.load(); });
  // A non-zero exit while not asked to stop is a failure: the SCM's recovery actions restart it.
  Report(SERVICE_STOPPED, static_cast<DWORD>(code), 0);
}

}  // namespace

std::string InstallService(const ServiceSpec& spec) {
  ScHandle scm(OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CREATE_SERVICE));
  if (scm.h == nullptr) return Fail("OpenSCManager");
  std::wstring name = Widen(spec.name), display = Widen(spec.display_name);
  std::wstring cmd = Widen(spec.command_line);
  ScHandle svc(CreateServiceW(scm.h, name.c_str(), display.c_str(), SERVICE_ALL_ACCESS,
                              SERVICE_WIN32_OWN_PROCESS, SERVICE_AUTO_START, SERVICE_ERROR_NORMAL,
                              cmd.c_str(), nullptr, nullptr, nullptr, nullptr, nullptr));
  if (svc.h == nullptr) return Fail("CreateService " + spec.name);
  std::wstring desc = Widen(spec.description);
  SERVICE_DESCRIPTIONW d{desc.data()};
  ChangeServiceConfig2W(svc.h, SERVICE_CONFIG_DESCRIPTION, &d);
  SERVICE_DELAYED_AUTO_START_INFO delayed{TRUE};
  ChangeServiceConfig2W(svc.h, SERVICE_CONFIG_DELAYED_AUTO_START_INFO, &delayed);
  SC_ACTION actions[3] = {{SC_ACTION_RESTART, spec.restart_delay_ms},
                          {SC_ACTION_RESTART, spec.restart_delay_ms},
                          {SC_ACTION_RESTART, spec.restart_delay_ms}};
  SERVICE_FAILURE_ACTIONSW failure{};
  failure.dwResetPeriod = spec.failure_reset_seconds;
  failure.cActions = 3;
  failure.lpsaActions = actions;
  if (!ChangeServiceConfig2W(svc.h, SERVICE_CONFIG_FAILURE_ACTIONS, &failure)) {
    return Fail("ChangeServiceConfig2 failure actions");
  }
  // Also recover when the service stops with a non-zero exit code, not only on a crash.
  SERVICE_FAILURE_ACTIONS_FLAG flag{TRUE};
  ChangeServiceConfig2W(svc.h, SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, &flag);
  return "";
}

std::string UninstallService(const std::string& name) {
  ScHandle scm(OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CONNECT));
  if (scm.h == nullptr) return Fail("OpenSCManager");
  ScHandle svc(OpenServiceW(scm.h, Widen(name).c_str(), DELETE));
  if (svc.h == nullptr) return Fail("OpenService " + name);
  if (!DeleteService(svc.h)) return Fail("DeleteService " + name);
  return "";
}

std::string StartService(const std::string& name) {
  ScHandle scm(OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CONNECT));
  if (scm.h == nullptr) return Fail("OpenSCManager");
  ScHandle svc(OpenServiceW(scm.h, Widen(name).c_str(), SERVICE_START));
  if (svc.h == nullptr) return Fail("OpenService " + name);
  if (!StartServiceW(svc.h, 0, nullptr)) return Fail("StartService " + name);
  return "";
}

std::string StopService(const std::string& name, uint32_t timeout_ms) {
  ScHandle scm(OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CONNECT));
  if (scm.h == nullptr) return Fail("OpenSCManager");
  ScHandle svc(OpenServiceW(scm.h, Widen(name).c_str(), SERVICE_STOP | SERVICE_QUERY_STATUS));
  if (svc.h == nullptr) return Fail("OpenService " + name);
  SERVICE_STATUS status{};
  if (!ControlService(svc.h, SERVICE_CONTROL_STOP, &status) &&
      GetLastError() != ERROR_SERVICE_NOT_ACTIVE) {
    return Fail("ControlService stop " + name);
  }
  for (uint32_t waited = 0; waited < timeout_ms; waited += 250) {
    if (!QueryServiceStatus(svc.h, &status)) return Fail("QueryServiceStatus " + name);
    if (status.dwCurrentState == SERVICE_STOPPED) return "";
    Sleep(250);
  }
  return name + ": still running after " + std::to_string(timeout_ms) + " ms";
}

bool RunAsService(const std::string& name, ServiceBody body, std::string* error,
                  std::function<void()> on_stop) {
  static ServiceState state;
  state.name = Widen(name);
  state.body = std::move(body);
  state.on_stop = std::move(on_stop);
  state.stop_event = CreateEventW(nullptr, TRUE, FALSE, nullptr);
  g_state = &state;
  SERVICE_TABLE_ENTRYW table[] = {{state.name.data(), &ServiceMain}, {nullptr, nullptr}};
  if (!StartServiceCtrlDispatcherW(table)) {
    if (error != nullptr) *error = Fail("StartServiceCtrlDispatcher");
    return false;
  }
  return true;
}

}  // namespace smbfleet::agent::windows::shim

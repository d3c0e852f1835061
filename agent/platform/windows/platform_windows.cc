// Windows: CreateProcess in a job object, console control events and the service control
// manager, live collection through PowerShell and the Event Log API.

#include <windows.h>
// windows.h first: shellapi.h needs its types.
#include <fcntl.h>
#include <io.h>
#include <shellapi.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/platform/platform.h"
#include "agent/platform/windows/shim/cmdline.h"
#include "agent/platform/windows/shim/console.h"
#include "agent/platform/windows/shim/pdh.h"
#include "agent/platform/windows/shim/service.h"
#include "agent/platform/windows/shim/system_paths.h"
#include "agent/platform/windows/windows_native.h"
#include "common/files.h"
#include "common/logging.h"

namespace smbfleet::agent::platform {

std::vector<std::string> Arguments(int argc, char** argv) {
  int n = 0;
  wchar_t** wide = ::CommandLineToArgvW(::GetCommandLineW(), &n);
  if (wide == nullptr) return std::vector<std::string>(argv, argv + argc);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(WideToUtf8(wide[i]));
  ::LocalFree(wide);
  return out;
}

void UseBinaryStdout() {
  std::fflush(stdout);
  ::_setmode(::_fileno(stdout), _O_BINARY);
}

void LimitHeapArenas() {}

void ReleaseFreeHeap() {}

absl::Status ReleaseProgramPages() { return absl::OkStatus(); }

std::unique_ptr<CommandRunner> NewCommandRunner() { return windows::NewWindowsCommandRunner(); }

absl::Status InstallStopHandler(std::function<void()> on_stop) {
  std::string error;
  if (!windows::shim::InstallConsoleStopHandler(std::move(on_stop), &error)) {
    return absl::InternalError(absl::StrCat("stop handler: ", error));
  }
  return absl::OkStatus();
}

int RunUntilStopped(const std::function<int()>& run, const std::function<void()>& stop) {
  int code = 0;
  std::string error;
  bool as_service = windows::shim::RunAsService(
      "smbfleet-agent", [&](const std::function<bool()>&) { return code = run(); }, &error, stop);
  if (as_service) return code;
  // Not started by the service control manager: a console run.
  if (absl::Status s = InstallStopHandler(stop); !s.ok()) {
    Logger("agent")->error("{}", LogSafe(s));
    return 1;
  }
  return run();
}

absl::Status ServiceCommand(const std::string& action, const std::string& config) {
  const std::string name = windows::shim::ServiceSpec().name;
  std::string error;
  if (action == "install") {
    if (config.empty()) return absl::InvalidArgumentError("service install needs --config FILE");
    // The service runs from C:\Windows\System32: both paths must be absolute.
    std::wstring self(32768, L'\0');
    DWORD n = ::GetModuleFileNameW(nullptr, self.data(), static_cast<DWORD>(self.size()));
    if (n == 0 || n >= self.size()) {
      return absl::InternalError(
          absl::StrCat("service install: the agent's own path: error ", ::GetLastError()));
    }
    self.resize(n);
    std::wstring wide_config = Utf8ToWide(config);
    std::wstring full(32768, L'\0');
    DWORD m = ::GetFullPathNameW(wide_config.c_str(), static_cast<DWORD>(full.size()), full.data(),
                                 nullptr);
    if (m == 0 || m >= full.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("service install: --config ", config, ": not a valid path"));
    }
    full.resize(m);
    if (!FileExists(WideToUtf8(full))) {
      return absl::NotFoundError(
          absl::StrCat("service install: --config ", WideToUtf8(full), " does not exist"));
    }
    windows::shim::ServiceSpec spec;
    spec.command_line =
        absl::StrCat(windows::shim::QuoteArgument(WideToUtf8(self)), " run --config ",
                     windows::shim::QuoteArgument(WideToUtf8(full)));
    error = windows::shim::InstallService(spec);
  } else if (action == "uninstall") {
    error = windows::shim::UninstallService(name);
  } else if (action == "start") {
    error = windows::shim::StartService(name);
  } else if (action == "stop") {
    error = windows::shim::StopService(name, 30000);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "service: unknown action '", action, "' (expected install, uninstall, start or stop)"));
  }
  if (!error.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("service ", action, ": ", error));
  }
  return absl::OkStatus();
}

std::string PowerShellPath() { return windows::shim::SystemPowerShellPath(); }

absl::StatusOr<std::unique_ptr<PostureSource>> NewLiveWindowsSource(const SourceContext& context) {
  windows::WindowsOptions options;
  options.state_dir = context.state_dir;
  return windows::NewWindowsDefaultLiveSource(std::move(options));
}

namespace {

// PDH does the rates itself; the SMB server runs in the kernel, so smb_cpu_percent stays absent.
class PdhCounterSource : public CounterSource {
 public:
  CounterReading Sample() override {
    windows::shim::PdhReading pdh = counters_.Collect();
    CounterReading r;
    if (pdh.cpu_percent) r.sample.set_cpu_percent(*pdh.cpu_percent);
    if (pdh.smb_read_bytes_per_second) {
      r.sample.set_smb_read_bytes_per_second(*pdh.smb_read_bytes_per_second);
    }
    if (pdh.smb_write_bytes_per_second) {
      r.sample.set_smb_write_bytes_per_second(*pdh.smb_write_bytes_per_second);
    }
    if (pdh.available_bytes && *pdh.available_bytes >= 0) {
      r.sample.set_available_memory_bytes(static_cast<uint64_t>(*pdh.available_bytes));
    }
    r.errors = std::move(pdh.errors);
    return r;
  }

 private:
  windows::shim::PdhCounters counters_;
};

}  // namespace

std::unique_ptr<CounterSource> NewCounterSource() { return std::make_unique<PdhCounterSource>(); }

}  // namespace smbfleet::agent::platform

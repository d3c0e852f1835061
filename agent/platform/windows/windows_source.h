#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_WINDOWS_SOURCE_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_WINDOWS_SOURCE_H_

// The Windows posture sources: a capture folder written by deploy/windows/Capture-SmbPosture.ps1
// (any machine), and live collection through Windows PowerShell 5.1 (on Windows). Both feed the
// same portable parsers (parsers.h, events.h).

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/core/command_runner.h"
#include "agent/core/source.h"
#include "agent/core/tcp_stats.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::windows {

struct WindowsOptions {
  // Where the event bookmark lives (events-bookmark.json). Empty: no bookmark, every call
  // reports the newest events again (capture folders, tests).
  std::string state_dir;
  size_t max_events_per_report = 500;
  std::chrono::milliseconds cmdlet_timeout{60000};
  size_t max_output_bytes = 16 << 20;
  // Fills host.cpu on the live path (the agent runs on the host); e.g. bench::DetectCpuFeatures.
  std::function<smbfleet::v1::CpuFeatures()> detect_cpu;
  // The clock for collected_at.
  std::function<absl::Time()> now = [] { return absl::Now(); };
  // The live source's sessions' round-trip times (tcp_estats.h; not owned, must outlive the
  // source). Null: sessions carry none. Capture folders never do: they hold no TCP statistics.
  TcpStats* tcp_stats = nullptr;
};

// One PowerShell call. The script text is a constant of the agent; whatever varies (share names,
// values, bookmarks) travels in data_json, which the runner hands to the script as data (base64
// in an environment variable, decoded and parsed inside the script), never as script text.
struct PowerShellScript {
  std::string probe;      // "Get-SmbShare", "events", "apply": names the call in errors
  std::string text;       // the script body (the runner adds the common prelude)
  std::string data_json;  // "{}" when the script takes no input
  std::chrono::milliseconds timeout{60000};
  size_t max_output_bytes = 16 << 20;
};

class PowerShellRunner {
 public:
  virtual ~PowerShellRunner() = default;
  // Runs one script and returns its stdout bytes. Errors: DeadlineExceeded (timed out, killed),
  // ResourceExhausted (output over the cap), NotFound (no powershell.exe), Unknown (non-zero
  // exit, with the script's error message).
  virtual absl::StatusOr<std::string> Run(const PowerShellScript& script) = 0;
};

// The text the runner puts before every script: $ErrorActionPreference='Stop', UTF-8 output
// without BOM, $SmbfleetData decoded from the environment, errors to stderr with exit code 1.
std::string ScriptPrelude();
// The environment variable carrying base64(UTF-8 data_json).
inline constexpr char kDataEnvVar[] = "SMBFLEET_DATA";

// `powershell.exe -NoLogo -NoProfile -NonInteractive -ExecutionPolicy Bypass -OutputFormat Text
// -EncodedCommand <base64 UTF-16LE of prelude + script>` through `runner` (not owned).
// powershell_exe is a full path (platform::PowerShellPath()), never a bare name that the search
// order would resolve in the agent's folder or working directory first.
std::unique_ptr<PowerShellRunner> NewPowerShellRunner(CommandRunner* runner,
                                                      std::string powershell_exe);
// The argv/env NewPowerShellRunner would run (for tests and logs).
Command BuildPowerShellCommand(const PowerShellScript& script, const std::string& powershell_exe);

// `windows-capture:DIR`. Files are read when present; a missing file means "not collected".
std::unique_ptr<smbfleet::agent::PostureSource> NewWindowsCaptureSource(std::string dir);
std::unique_ptr<smbfleet::agent::PostureSource> NewWindowsCaptureSource(std::string dir,
                                                                        WindowsOptions options);

// `windows`: live, one PowerShell call per probe (runner not owned). A failed or timed-out call
// becomes a probe_errors entry and the rest of the report still goes out.
std::unique_ptr<smbfleet::agent::PostureSource> NewWindowsLiveSource(WindowsOptions options,
                                                                     PowerShellRunner* runner);

// The script each live probe runs ("host", "Get-SmbShare", ..., "events").
const std::string& ProbeScript(const std::string& probe);

}  // namespace smbfleet::agent::windows

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_WINDOWS_SOURCE_H_

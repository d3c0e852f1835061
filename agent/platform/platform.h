#ifndef SMBFLEET_AGENT_PLATFORM_PLATFORM_H_
#define SMBFLEET_AGENT_PLATFORM_PLATFORM_H_

// What differs between the operating systems the agent runs on. CMake compiles exactly one
// implementation: agent/platform/posix/ or agent/platform/windows/ (WIN32).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/core/command_runner.h"
#include "agent/core/counter_source.h"
#include "agent/core/source.h"

namespace smbfleet::agent::platform {

// The command line as UTF-8 (Windows: from GetCommandLineW, since argv is in the ANSI code
// page and would mangle a non-ASCII path). argv[0] included.
std::vector<std::string> Arguments(int argc, char** argv);

// Makes std::cout write bytes as given (Windows: binary mode, so that "\n" stays "\n" and the
// JSON output is the same bytes as on Linux). Nothing to do on POSIX.
void UseBinaryStdout();

// Has every thread allocate from one heap arena (glibc: M_ARENA_MAX 1) instead of one arena per
// thread, each keeping the pages its thread freed: the agent's threads mostly wait, and one arena
// kept about 5 MB less resident (docs/scaling.md "The agent"). Call at the start of main, before
// any thread starts. Nothing to do with other C libraries (Windows: one process heap).
void LimitHeapArenas();

// Gives the pages of freed heap memory back to the OS (glibc: malloc_trim): after a rare large
// job, the benchmark, whose freed blocks below a live one would otherwise stay resident
// (docs/scaling.md "The agent"). Nothing to do with other C libraries.
void ReleaseFreeHeap();

// Takes the pages of the agent's own program file (its code and read-only data) out of its
// resident set (Linux: madvise MADV_PAGEOUT on the executable's read-only mappings; the kernel
// drops the pages no other process maps). What runs afterwards is paged in again as it runs, so
// what stays resident is what the agent keeps running, not what only its start or the benchmark
// ran (gRPC's plugin registration, OpenSSL's providers, the first collection's parsers): 17.5 MB
// resident before, 10-14 MB after (docs/scaling.md "The agent"). Call once the first report
// after start is delivered and after each benchmark. Nothing to do on other systems; an error
// where the kernel lacks MADV_PAGEOUT (before Linux 5.4).
absl::Status ReleaseProgramPages();

// How this OS runs programs: fork/exec, or CreateProcess in a job object.
std::unique_ptr<CommandRunner> NewCommandRunner();

// Calls on_stop (on a thread of its own, at most once per request) when the process is asked to
// stop: SIGINT/SIGTERM on POSIX, Ctrl+C, console close, logoff or shutdown on Windows.
absl::Status InstallStopHandler(std::function<void()> on_stop);

// The service entry: runs `run` until it returns, calling `stop` when the OS asks the service to
// stop. On Windows, as a service when the service control manager started the process, else in
// the foreground; on POSIX always in the foreground (systemd sends SIGTERM). Returns run's code.
int RunUntilStopped(const std::function<int()>& run, const std::function<void()>& stop);

// `smbfleet-agent service ACTION [--config FILE]`, the agent as a Windows service. install
// registers this executable by its own full path to run `run --config FILE` (FILE made absolute)
// as LocalSystem, delayed automatic start, restarted after a failure; start, stop and uninstall
// act on that service. Needs an elevated prompt on Windows. Other systems have their own service
// manager: FailedPrecondition saying so.
absl::Status ServiceCommand(const std::string& action, const std::string& config);

// Windows PowerShell by its full path in the system directory (GetSystemDirectoryW), so that a
// powershell.exe planted in the agent's folder or working directory is never the one started.
// Other builds return the same path under C:\Windows\System32: there it only names the program
// in an error.
std::string PowerShellPath();

// `--source=windows`: live collection through PowerShell and the Event Log. Only the Windows
// build has it; elsewhere a FailedPrecondition that points at windows-capture:DIR.
absl::StatusOr<std::unique_ptr<PostureSource>> NewLiveWindowsSource(const SourceContext& context);

// The host's load around changes (docs/agent-changes.md "Counters around a change"): /proc and
// sock_diag on Linux, PDH on Windows.
std::unique_ptr<CounterSource> NewCounterSource();

}  // namespace smbfleet::agent::platform

#endif  // SMBFLEET_AGENT_PLATFORM_PLATFORM_H_

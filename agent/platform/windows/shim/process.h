#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_PROCESS_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_PROCESS_H_

// Windows-only: run one program with pipes, a timeout and an output cap. The child and anything
// it starts live in a job object that is closed (killing them all) on timeout, on an output
// over the cap, and when the call returns. Plain structs only (no absl/protobuf) so that it
// builds with mingw-w64; agent/platform/windows/shim_command_runner.cc adapts it to CommandRunner.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace smbfleet::agent::windows::shim {

struct ProcessRequest {
  std::vector<std::string> argv;  // UTF-8; argv[0] is a full path or a name found on PATH
  std::vector<std::pair<std::string, std::string>> env;  // added to / replacing the agent's
  std::string stdin_data;
  uint32_t timeout_ms = 30000;
  size_t max_output_bytes = 16 << 20;  // stdout and stderr each
};

enum class ProcessOutcome { kExited, kTimedOut, kOutputTooLarge, kNotFound, kError };

struct ProcessResult {
  ProcessOutcome outcome = ProcessOutcome::kError;
  uint32_t exit_code = 0;
  std::string stdout_data;
  std::string stderr_data;
  std::string error;  // for kNotFound / kError: what failed, with the Windows error text
};

ProcessResult RunProcess(const ProcessRequest& request);

// UTF-8 <-> UTF-16 for Win32 W APIs.
std::wstring Widen(const std::string& utf8);
std::string Narrow(const std::wstring& wide);
// FormatMessage text for a Win32 error code: "Access is denied. (5)".
std::string ErrorText(uint32_t code);

}  // namespace smbfleet::agent::windows::shim

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_PROCESS_H_

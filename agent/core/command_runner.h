#ifndef SMBFLEET_AGENT_CORE_COMMAND_RUNNER_H_
#define SMBFLEET_AGENT_CORE_COMMAND_RUNNER_H_

// The one way the agent runs other programs (smbstatus, testparm, smbcontrol, powershell.exe).
// Arguments are an argv vector, never a shell string: nothing the agent reads is ever
// interpolated into a command line. Every call has a timeout and an output cap.

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace smbfleet::agent {

struct Command {
  std::vector<std::string> argv;           // argv[0] is an absolute path or a name on PATH
  std::map<std::string, std::string> env;  // added to (or replacing in) the agent's environment
  std::string stdin_data;
  std::chrono::milliseconds timeout{30'000};
  size_t max_output_bytes = 16 << 20;  // stdout and stderr each
};

struct CommandResult {
  int exit_code = 0;  // -1 when killed by a signal
  std::string stdout_data;
  std::string stderr_data;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;

  // Runs to completion. Errors: NotFound (no such program), DeadlineExceeded (timed out and
  // killed), ResourceExhausted (output over the cap; the process is killed). A non-zero exit
  // code is not an error: callers decide what it means.
  virtual absl::StatusOr<CommandResult> Run(const Command& command) = 0;
};

// fork/exec with pipes; kills the whole process group on timeout. POSIX builds only
// (agent/platform/posix/); the agent itself gets its runner from platform::NewCommandRunner().
std::unique_ptr<CommandRunner> NewPosixCommandRunner();

// "smbstatus --json" style rendering of argv for logs and errors (not for execution).
std::string DescribeCommand(const Command& command);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_COMMAND_RUNNER_H_

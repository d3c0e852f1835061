#include "cli/run.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/admin_call.h"
#include "cli/commands.h"
#include "cli/commands_approvals.h"
#include "cli/commands_enrollment.h"
#include "cli/exit_code.h"
#include "cli/policy_command.h"
#include "cli/render.h"

namespace smbfleet::cli {

int RunCommandLine(const std::vector<std::string>& args, const StubFactory& connect,
                   std::ostream& out, std::ostream& err) {
  absl::StatusOr<Invocation> parsed = ParseCommandLine(args, absl::Now());
  if (!parsed.ok()) {
    // Values from files and flags are echoed in the message: shown escaped, line by line.
    for (absl::string_view line : absl::StrSplit(parsed.status().message(), '\n')) {
      err << "smbfleetctl: " << Clean(line) << "\n";
    }
    err << "Run 'smbfleetctl --help' (or COMMAND --help) for the commands and flags.\n";
    return kExitUsage;
  }
  const Invocation& inv = *parsed;
  SetCallTimeout(absl::ToChronoMilliseconds(inv.global.call_timeout));
  const std::string& cmd = inv.command;
  if (cmd == "help" || cmd == "completion") {
    out << inv.help;
    return kExitOk;
  }
  if (cmd == "policy check") return RunPolicyCheck(inv.policy.files, out, err);
  if (cmd == "policy eval") return RunPolicyEval(inv.policy, inv.global.format, out, err);
  if (absl::StartsWith(cmd, "keys ")) return ExecuteKeys(inv, out, err);
  if (absl::StartsWith(cmd, "trust ")) return ExecuteTrust(inv, connect, out, err);
  if (absl::StartsWith(cmd, "enroll-tokens ") || cmd == "certs list" || cmd == "hosts label") {
    return ExecuteEnrollment(inv, connect, out, err);
  }
  absl::StatusOr<std::unique_ptr<smbfleet::v1::AdminService::StubInterface>> stub =
      connect(inv.global);
  if (!stub.ok()) {
    err << "smbfleetctl: " << Clean(stub.status().message()) << "\n";
    return kExitUsage;
  }
  return Execute(inv, **stub, out, err);
}

}  // namespace smbfleet::cli

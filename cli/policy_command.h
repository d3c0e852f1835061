#ifndef SMBFLEET_CLI_POLICY_COMMAND_H_
#define SMBFLEET_CLI_POLICY_COMMAND_H_

// `smbfleetctl policy ...`: offline policy work, no collector needed.
//   policy check FILE...
//   policy eval --policy FILE --posture POSTURE.json [--posture ...] [--waivers WAIVERS.json]
//               [--now RFC3339] [--format=json|text]
// Exit status: 0 done, 1 a file is invalid or unreadable, 2 bad usage.

#include <ostream>
#include <string>
#include <vector>

namespace smbfleet::cli {

// args start after "policy", e.g. {"eval", "--policy", "f.yaml", "--posture", "p.json"}.
int RunPolicyCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_POLICY_COMMAND_H_

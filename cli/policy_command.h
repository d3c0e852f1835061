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

// `policy check|eval` flags, as parsed by ParseCommandLine (cli/command_line.h).
struct PolicyFlags {
  std::vector<std::string> files;  // check FILE...
  std::string policy_file;
  std::vector<std::string> postures;
  std::string waivers_file;
  std::string now;  // RFC 3339
};

// `policy check FILE...`: each file checked, one line per file. Returns the exit status.
int RunPolicyCheck(const std::vector<std::string>& files, std::ostream& out, std::ostream& err);

// `policy eval`; format: "text" or "json". Returns the exit status.
int RunPolicyEval(const PolicyFlags& flags, const std::string& format, std::ostream& out,
                  std::ostream& err);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_POLICY_COMMAND_H_

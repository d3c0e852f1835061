#ifndef SMBFLEET_CLI_COMMANDS_ENROLLMENT_H_
#define SMBFLEET_CLI_COMMANDS_ENROLLMENT_H_

// Agent enrollment, from the admin's side (docs/smbfleetctl.md "Enrollment"):
//   smbfleetctl enroll-tokens create --uses N --expires 7d [--label K=V ...] [--comment TEXT]
//                                    [--allow-reenrollment]
//   smbfleetctl enroll-tokens list [--all]
//   smbfleetctl enroll-tokens revoke ID --reason TEXT
//   smbfleetctl certs list [--host HOST] [--all]
//   smbfleetctl hosts label HOST key=value ... --reason TEXT
// `create` prints the token's secret once, on stdout only.

#include <ostream>
#include <string>
#include <vector>

#include "cli/commands_trust.h"

namespace smbfleet::cli {

// group: "enroll-tokens", "certs" or "hosts label"; args: what follows it. Returns the exit code.
int RunEnrollmentCommand(const std::string& group, const std::vector<std::string>& args,
                         const StubFactory& connect, std::ostream& out, std::ostream& err);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_COMMANDS_ENROLLMENT_H_

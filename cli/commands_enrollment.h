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

// "enroll-tokens create|list|revoke", "certs list" or "hosts label", parsed by
// ParseCommandLine. Returns the exit code.
int ExecuteEnrollment(const Invocation& invocation, const StubFactory& connect, std::ostream& out,
                      std::ostream& err);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_COMMANDS_ENROLLMENT_H_

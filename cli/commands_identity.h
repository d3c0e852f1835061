#ifndef SMBFLEET_CLI_COMMANDS_IDENTITY_H_
#define SMBFLEET_CLI_COMMANDS_IDENTITY_H_

// Identity from the command line: `whoami`, people's bearer tokens (`tokens create|list|revoke`,
// admin; the secret is printed once, at creation) and certificate revocation (`certs revoke`,
// `certs revocations`). docs/smbfleetctl.md "Identity".

#include <ostream>
#include <string>

#include "cli/command_line.h"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace smbfleet::cli {

bool IsIdentityCommand(const std::string& command);
int ExecuteIdentity(const Invocation& invocation, smbfleet::v1::AdminService::StubInterface& stub,
                    std::ostream& out, std::ostream& err);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_COMMANDS_IDENTITY_H_

#ifndef SMBFLEET_CLI_COMMANDS_H_
#define SMBFLEET_CLI_COMMANDS_H_

// Carries out a parsed smbfleetctl command against the collector and prints the answer (text or
// protobuf JSON). Returns the exit code (cli/exit_code.h).

#include <ostream>

#include "cli/command_line.h"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace smbfleet::cli {

int Execute(const Invocation& invocation, smbfleet::v1::AdminService::StubInterface& stub,
            std::ostream& out, std::ostream& err);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_COMMANDS_H_

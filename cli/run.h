#ifndef SMBFLEET_CLI_RUN_H_
#define SMBFLEET_CLI_RUN_H_

// smbfleetctl from its arguments to its exit code: one CLI11 parse (ParseCommandLine) of every
// command, then the command's runner. The collector is reached through `connect` only by the
// commands that call it (policy, keys and trust init-root never do).

#include <ostream>
#include <string>
#include <vector>

#include "cli/commands_trust.h"

namespace smbfleet::cli {

// args: what follows the program name. Returns the exit code (cli/exit_code.h); a usage mistake
// is reported on err, naming the command and the flag, with kExitUsage.
int RunCommandLine(const std::vector<std::string>& args, const StubFactory& connect,
                   std::ostream& out, std::ostream& err);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_RUN_H_

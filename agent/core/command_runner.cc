#include "agent/core/command_runner.h"

#include "absl/strings/str_join.h"

namespace smbfleet::agent {

std::string DescribeCommand(const Command& command) { return absl::StrJoin(command.argv, " "); }

}  // namespace smbfleet::agent

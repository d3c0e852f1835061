#ifndef SMBFLEET_CLI_COMMANDS_APPROVALS_H_
#define SMBFLEET_CLI_COMMANDS_APPROVALS_H_

// Approvals the agents verify, from the approver's side: the approver's own Ed25519 key
// (`keys init`, `keys show`, never sent anywhere nor printed), the registry of approvers' public
// keys (`approvers add|list|revoke`, admin), and signing `changes approve` / `changes rollback`
// locally over the payload the collector shows. docs/smbfleetctl.md "Approver keys".

#include <ostream>
#include <string>
#include <vector>

#include "cli/command_line.h"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace smbfleet::cli {

// The approver key file: $SMBFLEET_APPROVER_KEY, else ~/.config/smbfleet/approver.key.
std::string DefaultApproverKeyPath();

// `smbfleetctl keys init|show [--key FILE]` (command "keys init" or "keys show"): local, no
// collector. Returns the exit code.
int ExecuteKeys(const Invocation& invocation, std::ostream& out, std::ostream& err);

// Whether Execute hands `command` to ExecuteApprovals: "approvers add|list|revoke", and
// "changes approve" / "changes rollback", which sign.
bool IsApprovalCommand(const std::string& command);
int ExecuteApprovals(const Invocation& invocation, smbfleet::v1::AdminService::StubInterface& stub,
                     std::ostream& out, std::ostream& err);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_COMMANDS_APPROVALS_H_

#ifndef SMBFLEET_CLI_COMMANDS_TRUST_H_
#define SMBFLEET_CLI_COMMANDS_TRUST_H_

// `smbfleetctl trust ...`: the offline root key that signs the approver sets agents trust
// (docs/smbfleetctl.md "trust"). init-root and sign-approvers --approvers run without a
// collector, on the machine that holds the root key; publish, show and --from-collector call it.

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/command_line.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::cli {

using StubFactory =
    std::function<absl::StatusOr<std::unique_ptr<smbfleet::v1::AdminService::StubInterface>>(
        const GlobalFlags& flags)>;

// `trust init-root|sign-approvers|publish|show`, parsed by ParseCommandLine; connects to the
// collector only when the command needs it. Returns the exit code (cli/exit_code.h).
int ExecuteTrust(const Invocation& invocation, const StubFactory& connect, std::ostream& out,
                 std::ostream& err);

// --- The pieces, each tested on its own. ---

// Writes a new Ed25519 key (PKCS#8 PEM, 0600) to key_file; refuses to overwrite one. Returns its
// public key as the agents' `trust.root` value ("ed25519:...").
absl::StatusOr<std::string> InitRoot(const std::string& key_file);

// The --approvers file: a YAML map of approver name to public key ("ed25519:..."), as
// `smbfleetctl keys init` prints it. Every problem is listed with file and line.
absl::StatusOr<std::vector<smbfleet::v1::ApproverKey>> ReadApproversFile(const std::string& file);

// The set of `approvers` (revoked ones left out) with `serial`, signed by the root key.
absl::StatusOr<smbfleet::v1::SignedApproverSet> SignApproverSet(
    const std::string& root_private_pem, uint64_t serial,
    const std::vector<smbfleet::v1::ApproverKey>& approvers, absl::Time now);

// Serial, issue time, root key id and one line per approver (name, key id, public key).
void RenderApproverSet(const smbfleet::v1::SignedApproverSet& set, std::ostream& out);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_COMMANDS_TRUST_H_

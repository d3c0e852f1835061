#ifndef SMBFLEET_CLI_EXIT_CODE_H_
#define SMBFLEET_CLI_EXIT_CODE_H_

// smbfleetctl's exit codes, part of the product contract (docs/smbfleetctl.md): scripts branch on
// them, so the mapping from the collector's answer lives in this one place.

#include <optional>

#include "grpcpp/support/status.h"
#include "smbfleet/v1/change.pb.h"

namespace smbfleet::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,            // anything else, including the server's INVALID_ARGUMENT
  kExitUsage = 2,             // a mistake on the command line, caught before any call
  kExitNotFound = 3,          // NOT_FOUND: unknown change, waiver or host
  kExitPermissionDenied = 4,  // PERMISSION_DENIED: the operator's role may not do this
  kExitRefused = 5,           // FAILED_PRECONDITION: own approval, stale plan, wrong state, ...
};

ExitCode ExitCodeFor(grpc::StatusCode code);

// `changes watch`: the code a change's final state maps to (docs/smbfleetctl.md "watch").
// COMPLETED with every host APPLIED: kExitOk; COMPLETED with a host not applied, REJECTED,
// ROLLED_BACK or EXPIRED: kExitFailed. nullopt while it can still move (PROPOSED, APPROVED,
// ROLLING_OUT, and HALTED, which a person may resume).
std::optional<ExitCode> ExitCodeForChange(const smbfleet::v1::Change& change);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_EXIT_CODE_H_

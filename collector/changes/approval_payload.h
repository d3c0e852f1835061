#ifndef SMBFLEET_COLLECTOR_CHANGES_APPROVAL_PAYLOAD_H_
#define SMBFLEET_COLLECTOR_CHANGES_APPROVAL_PAYLOAD_H_

// What an approval of a change signs (trust.proto ApprovalPayload): the exact order every host
// of the change gets. Built from the change as stored, so that the payload an approver fetched
// (GetChange), the one the collector checks the signature against (ApproveChange) and the one
// the orders carry are the same bytes as long as the change is the same.

#include <string>

#include "absl/status/statusor.h"
#include "smbfleet/v1/change.pb.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::collector::changes {

// The change id, version, approval nonce, not-after, proposer, approvals required, the change a
// rollback undoes, each host (lower case) with its settings' expected and new values, and the
// content hash. INVALID_ARGUMENT naming the change when it has no approval nonce (proposed
// before approvals were signed) or no not-after.
absl::StatusOr<smbfleet::v1::ApprovalPayload> ApprovalPayloadOf(const smbfleet::v1::Change& change);

// CanonicalApprovalPayload(ApprovalPayloadOf(change)): the bytes approvers sign.
absl::StatusOr<std::string> ApprovalPayloadBytes(const smbfleet::v1::Change& change);

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_APPROVAL_PAYLOAD_H_

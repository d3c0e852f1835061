#ifndef SMBFLEET_COLLECTOR_CHANGES_APPROVAL_PAYLOAD_H_
#define SMBFLEET_COLLECTOR_CHANGES_APPROVAL_PAYLOAD_H_

// What an approval of a change signs (trust.proto ApprovalPayload): the exact order every host
// of the change gets. Built from the change as stored, so that the payload an approver fetched
// (GetChange), the one the collector checks the signature against (ApproveChange) and the one
// the orders carry are the same bytes as long as the change is the same.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/approval_signing.h"
#include "smbfleet/v1/change.pb.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::collector::changes {

// Each host of the change (lower case) with its settings' expected and new values, in the
// change's order.
std::vector<smbfleet::v1::HostOrder> ApprovalHostsOf(const smbfleet::v1::Change& change);

// The Merkle tree over ApprovalHostsOf(change) whose head a v2 payload carries; it gives each
// host's order and inclusion proof. INVALID_ARGUMENT naming the change when it has no hosts or
// names one twice.
absl::StatusOr<ApprovalHostTree> ApprovalTreeOf(const smbfleet::v1::Change& change);

// True when the change's stored approval payload (approvals given so far) is v1: its later
// approvals sign v1 too, so that an approval given before the collector made v2 still counts.
bool SignedAsV1(const smbfleet::v1::Change& change);

// The change id, version, approval nonce, not-after, proposer, approvals required, the change a
// rollback undoes and the content hash, with the hosts: v2 (their tree head and count) unless
// SignedAsV1 (each host listed). INVALID_ARGUMENT naming the change when it has no approval
// nonce (proposed before approvals were signed), no not-after or no hosts.
absl::StatusOr<smbfleet::v1::ApprovalPayload> ApprovalPayloadOf(const smbfleet::v1::Change& change);

// CanonicalApprovalPayload(ApprovalPayloadOf(change)): the bytes approvers sign.
absl::StatusOr<std::string> ApprovalPayloadBytes(const smbfleet::v1::Change& change);

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_APPROVAL_PAYLOAD_H_

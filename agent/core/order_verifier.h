#ifndef SMBFLEET_AGENT_CORE_ORDER_VERIFIER_H_
#define SMBFLEET_AGENT_CORE_ORDER_VERIFIER_H_

// What makes a change order applicable on this host (docs/threat-model.md): enough valid Ed25519
// signatures over the canonical approval payload, by distinct approvers the host trusts, none of
// them the proposer, for this host, before the payload's not-after. Pure functions over their
// inputs, so that every rule is unit-tested with real keys; ChangeExecutor calls VerifyOrder and
// applies only what it returns.

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/core/agent_config.h"
#include "smbfleet/v1/agent.pb.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::agent {

// An approver key the host trusts: whose it is and the raw 32-byte Ed25519 public key.
struct TrustedKey {
  std::string approver;
  std::string public_raw;
};
// By KeyId(public_raw).
using TrustedKeys = std::map<std::string, TrustedKey>;

// The keys pinned in the agent's config (`trust.approvers`).
TrustedKeys PinnedKeys(const TrustConfig& trust);

// The approver set's keys added to `base` (a key pinned in the config keeps its pinned owner).
// Entries without a 32-byte public key are skipped.
TrustedKeys WithApproverSet(TrustedKeys base, const smbfleet::v1::ApproverSet& set);

// Checks the root's signature over the set's bytes and parses them. PERMISSION_DENIED when the
// signature does not verify with root_public_raw (or no root is configured), INVALID_ARGUMENT
// when the signed bytes are not an ApproverSet.
absl::StatusOr<smbfleet::v1::ApproverSet> VerifyApproverSet(
    const smbfleet::v1::SignedApproverSet& signed_set, absl::string_view root_public_raw);

struct OrderCheck {
  std::string host;  // this agent's certificate identity; compared in lower case
  absl::Time now;
  uint32_t min_approvals = 1;  // trust.min_approvals
};

struct VerifiedOrder {
  // The order to carry out: change id, version and nonce of the order (the ack names them), and
  // settings, options, not-after and rollback_of from the signed payload, for this host only.
  smbfleet::v1::ChangeOrder order;
  smbfleet::v1::ApprovalPayload payload;
};

// DEADLINE_EXCEEDED "order expired at ..." when the payload's not-after has passed; every other
// failure is PERMISSION_DENIED naming what failed: no keys, no or malformed payload, a payload
// for another change, version or set of hosts, or too few valid signatures (with each signature
// that did not count and why: unknown key, another approver's key, does not verify, the proposer,
// the same approver again).
absl::StatusOr<VerifiedOrder> VerifyOrder(const smbfleet::v1::ChangeOrder& order,
                                          const TrustedKeys& keys, const OrderCheck& check);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_ORDER_VERIFIER_H_

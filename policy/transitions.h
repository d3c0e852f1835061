#ifndef SMBFLEET_POLICY_TRANSITIONS_H_
#define SMBFLEET_POLICY_TRANSITIONS_H_

// What the collector stores after each evaluation: the status changes of a host's
// (rule, share) results. "Failing since" and compliance over time are read from them.

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet::policy {

// One stored current result of a host, as the store keeps it.
struct StoredResult {
  std::string rule_id;
  std::string share;  // "" for host rules
  std::string policy_version;
  smbfleet::v1::ComplianceStatus status = smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED;
};

// Given the host's previously stored results (any policy version) and a new evaluation,
// returns the transitions to store, stamped with current.evaluated_at and its policy version:
//  - a key (rule, share) whose status changed, or that is new: previous status -> new status
//    (from UNSPECIFIED when new);
//  - a key that the new evaluation no longer has (rule removed, share gone): old status ->
//    UNSPECIFIED, so that it stops counting.
// A status that did not change yields nothing, even across policy versions: "failing since"
// survives a policy update that does not touch the rule. Output is sorted by (rule, share).
std::vector<smbfleet::v1::StatusTransition> ComputeTransitions(
    absl::Span<const StoredResult> previous, const smbfleet::v1::HostEvaluation& current);

}  // namespace smbfleet::policy

#endif  // SMBFLEET_POLICY_TRANSITIONS_H_

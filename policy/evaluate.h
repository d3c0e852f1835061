#ifndef SMBFLEET_POLICY_EVALUATE_H_
#define SMBFLEET_POLICY_EVALUATE_H_

// Evaluation: one host's Posture against a Policy, with waivers, at a given time. Pure: the
// clock and the waivers come in as arguments.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "policy/policy.h"
#include "smbfleet/v1/policy.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::policy {

// The classification of one share and the rule ("override:…", a rule name or "default").
struct ShareClass {
  int class_index;
  absl::string_view rule;
};

ShareClass ClassifyShare(const Classification& c, const smbfleet::v1::Posture& posture,
                         const smbfleet::v1::Share& share);

// Every share of the posture, in order, with its classification.
std::vector<smbfleet::v1::ShareClassification> ClassifyShares(const Policy& policy,
                                                              const smbfleet::v1::Posture& posture);

// The Windows build number (20348, 26100) from host.osBuild or host.osVersion; 0 if unknown.
uint32_t WindowsBuild(const smbfleet::v1::HostInfo& host);

// True when the waiver covers (rule, host, share) and is in force at `now`.
bool WaiverApplies(const smbfleet::v1::Waiver& waiver, absl::string_view rule_id,
                   const smbfleet::v1::Posture& posture, absl::string_view share, absl::Time now);

// InvalidArgument naming what is missing: id, rule, exactly one scope, justification,
// approver, expiry.
absl::Status ValidateWaiver(const smbfleet::v1::Waiver& waiver);

// Evaluates every rule. `waivers` come from the store; the policy's own waivers apply as well.
// Results are keyed by (rule_id, share) and carry policy.version.
smbfleet::v1::HostEvaluation EvaluateHost(const Policy& policy,
                                          const smbfleet::v1::Posture& posture,
                                          absl::Span<const smbfleet::v1::Waiver> waivers,
                                          absl::Time now);

// Same, filling *out (cleared first) so that a caller evaluating many hosts can reuse it.
void EvaluateHostInto(const Policy& policy, const smbfleet::v1::Posture& posture,
                      absl::Span<const smbfleet::v1::Waiver> waivers, absl::Time now,
                      smbfleet::v1::HostEvaluation* out);

absl::string_view StatusName(smbfleet::v1::ComplianceStatus s);  // "NON_COMPLIANT"

}  // namespace smbfleet::policy

#endif  // SMBFLEET_POLICY_EVALUATE_H_

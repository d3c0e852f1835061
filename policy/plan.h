#ifndef SMBFLEET_POLICY_PLAN_H_
#define SMBFLEET_POLICY_PLAN_H_

// Remediation plans ("audit before you require"): for a non-compliant host, the typed settings
// (policy/settings.h) that fix it, ordered safely, each with its expected current value and
// rollback value, and the impact: which sessions and clients the new settings would refuse,
// plus the cost model's predicted cost.

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "policy/policy.h"
#include "smbfleet/v1/policy.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::policy {

// A client-side connection (Get-SmbConnection) that another host's agent reported.
struct PeerConnection {
  std::string reporter;  // the reporting host
  smbfleet::v1::Connection connection;
};

// The connections among `all` whose server_name names `host` (hostname, FQDN or the FQDN's
// first label; case-insensitive). The collector passes every stored connection, or a
// pre-filtered set, and this narrows it.
std::vector<PeerConnection> PeerConnectionsTowards(const smbfleet::v1::HostInfo& host,
                                                   absl::Span<const PeerConnection> all);

// Plans the settings that fix the NON_COMPLIANT (not waived) results of `evaluation`.
// `peers` are connections towards this host (PeerConnectionsTowards). Steps are ordered
// audit, protect, require, disable; a setting already at its target is left out, and so is an
// audit switch the host does not report (it does not exist on that build).
smbfleet::v1::RemediationPlan PlanRemediation(const Policy& policy,
                                              const smbfleet::v1::Posture& posture,
                                              const smbfleet::v1::HostEvaluation& evaluation,
                                              absl::Span<const PeerConnection> peers,
                                              absl::Time now);

// The impact of `steps` on the host of `posture` (clients and sessions they would refuse,
// predicted cost), as PlanRemediation computes it; for a subset of a plan or hand-written steps.
smbfleet::v1::Impact PlanImpact(const smbfleet::v1::Posture& posture,
                                const std::vector<smbfleet::v1::PlanStep>& steps,
                                absl::Span<const PeerConnection> peers);

// The value a setting has in the posture ("true", "SMB_3_0"); empty when unknown.
std::string CurrentSettingValue(const SettingInfo& setting, const smbfleet::v1::Posture& posture,
                                absl::string_view share);

}  // namespace smbfleet::policy

#endif  // SMBFLEET_POLICY_PLAN_H_

#ifndef SMBFLEET_COLLECTOR_CHANGES_STALE_PLAN_H_
#define SMBFLEET_COLLECTOR_CHANGES_STALE_PLAN_H_

// A plan is stale when a host's posture moved on since it was planned: some step's expected
// current value (its precondition) no longer holds. Approving it would push an order the agent
// must refuse with PRECONDITION_FAILED, so approval refuses it first and names the setting.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "smbfleet/v1/policy.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::collector::changes {

struct StaleSetting {
  std::string host;
  std::string setting;  // "server.requireSigning"
  std::string share;    // for share settings
  std::string expected;
  std::string current;  // empty: unknown now (not reported, share gone, no posture)

  // "host fs1: server.requireSigning is now \"true\", the plan expected \"false\""
  std::string Describe() const;
};

// The first host (in `plans` order) and step (in plan order) whose expected current value differs
// from the value in that host's latest posture. A step planned without a known current value
// ("" = unknown then) is not checked; a value unknown now is stale. An error for a step
// whose setting is not on the allowlist (LookupSetting's NotFound, naming it).
absl::StatusOr<std::optional<StaleSetting>> FindStaleSetting(
    const std::vector<smbfleet::v1::RemediationPlan>& plans,
    const std::map<std::string, const smbfleet::v1::Posture*>& latest);

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_STALE_PLAN_H_

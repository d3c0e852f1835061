#ifndef SMBFLEET_POLICY_PLAN_COST_H_
#define SMBFLEET_POLICY_PLAN_COST_H_

// The predicted cost of a plan: the protection the host's traffic gets before and after the
// plan's steps, priced by the cost model (policy/cost/) from the host's own benchmark.

#include <vector>

#include "smbfleet/v1/policy.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::policy {

smbfleet::v1::PredictedCost PredictPlanCost(const smbfleet::v1::Posture& posture,
                                            const std::vector<smbfleet::v1::PlanStep>& steps);

}  // namespace smbfleet::policy

#endif  // SMBFLEET_POLICY_PLAN_COST_H_

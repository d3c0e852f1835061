// Used only when the cost model library (policy/cost/) is not in the build: plans then say
// that their cost is unknown instead of guessing.
#include "policy/plan_cost.h"

namespace smbfleet::policy {

smbfleet::v1::PredictedCost PredictPlanCost(const smbfleet::v1::Posture&,
                                            const std::vector<smbfleet::v1::PlanStep>&) {
  smbfleet::v1::PredictedCost out;
  out.set_summary("cost model not built: cost unknown");
  return out;
}

}  // namespace smbfleet::policy

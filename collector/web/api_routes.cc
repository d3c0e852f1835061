#include "collector/web/api_routes.h"

#include <optional>
#include <utility>

namespace smbfleet::collector {

namespace v1 = smbfleet::v1;

ApiRoutes::ApiRoutes(AdminApi* api, ApproverSets* approver_sets) {
  // Every AdminService RPC (api_routes_test walks the service and fails on a missing one).
  routes_ = {
      {"ListHosts", AdminRoute(api, &AdminApi::ListHosts)},
      {"GetHost", AdminRoute(api, &AdminApi::GetHost)},
      {"RequestReport", AdminRoute(api, &AdminApi::RequestReport)},
      {"GetCompliance", AdminRoute(api, &AdminApi::GetCompliance)},
      {"ListFindings", AdminRoute(api, &AdminApi::ListFindings)},
      {"GetFleetOverview", AdminRoute(api, &AdminApi::GetFleetOverview)},
      {"GetReadiness", AdminRoute(api, &AdminApi::GetReadiness)},
      {"ProposeChange", AdminRoute(api, &AdminApi::ProposeChange)},
      {"ListChanges", AdminRoute(api, &AdminApi::ListChanges)},
      {"GetChange", AdminRoute(api, &AdminApi::GetChange)},
      {"ApproveChange", AdminRoute(api, &AdminApi::ApproveChange)},
      {"RejectChange", AdminRoute(api, &AdminApi::RejectChange)},
      {"HaltChange", AdminRoute(api, &AdminApi::HaltChange)},
      {"ResumeChange", AdminRoute(api, &AdminApi::ResumeChange)},
      {"RollbackChange", AdminRoute(api, &AdminApi::RollbackChange)},
      {"ListAudit", AdminRoute(api, &AdminApi::ListAudit)},
      {"CostModelCalibration", AdminRoute(api, &AdminApi::CostModelCalibration)},
      {"SaveCostModelCalibration", AdminRoute(api, &AdminApi::SaveCostModelCalibration)},
      {"ListCostModelCalibrations", AdminRoute(api, &AdminApi::ListCostModelCalibrations)},
      {"ListWaivers", AdminRoute(api, &AdminApi::ListWaivers)},
      {"RequestWaiver", AdminRoute(api, &AdminApi::RequestWaiver)},
      {"ApproveWaiver", AdminRoute(api, &AdminApi::ApproveWaiver)},
      {"RevokeWaiver", AdminRoute(api, &AdminApi::RevokeWaiver)},
      {"RegisterApproverKey", AdminRoute(api, &AdminApi::RegisterApproverKey)},
      {"ListApproverKeys", AdminRoute(api, &AdminApi::ListApproverKeys)},
      {"RevokeApproverKey", AdminRoute(api, &AdminApi::RevokeApproverKey)},
      {"WhoAmI", AdminRoute(api, &AdminApi::WhoAmI)},
      {"CreateApiToken", AdminRoute(api, &AdminApi::CreateApiToken)},
      {"ListApiTokens", AdminRoute(api, &AdminApi::ListApiTokens)},
      {"RevokeApiToken", AdminRoute(api, &AdminApi::RevokeApiToken)},
      {"RevokeCertificate", AdminRoute(api, &AdminApi::RevokeCertificate)},
      {"ListRevocations", AdminRoute(api, &AdminApi::ListRevocations)},
      {"CreateEnrollmentToken", AdminRoute(api, &AdminApi::CreateEnrollmentToken)},
      {"ListEnrollmentTokens", AdminRoute(api, &AdminApi::ListEnrollmentTokens)},
      {"RevokeEnrollmentToken", AdminRoute(api, &AdminApi::RevokeEnrollmentToken)},
      {"ListCertificates", AdminRoute(api, &AdminApi::ListCertificates)},
      {"SetHostLabels", AdminRoute(api, &AdminApi::SetHostLabels)},
      // The approver set is the ApproverSets' (as in AdminServiceImpl), not AdminApi's.
      {"PublishApproverSet",
       JsonRoute<v1::PublishApproverSetRequest, v1::PublishApproverSetResponse>(
           [approver_sets](const Principal& caller, const v1::PublishApproverSetRequest& request)
               -> absl::StatusOr<v1::PublishApproverSetResponse> {
             RETURN_IF_ERROR(Authorize(caller, Permission::kPublishApproverSet));
             if (approver_sets == nullptr) {
               return absl::UnavailableError("this collector does not forward approver sets");
             }
             return approver_sets->Publish(request.set(), caller.name);
           })},
      {"GetApproverSet",
       JsonRoute<v1::GetApproverSetRequest, v1::GetApproverSetResponse>(
           [approver_sets](const Principal& caller, const v1::GetApproverSetRequest&)
               -> absl::StatusOr<v1::GetApproverSetResponse> {
             RETURN_IF_ERROR(Authorize(caller, Permission::kReadApproverKeys));
             if (approver_sets == nullptr) {
               return absl::UnavailableError("this collector does not forward approver sets");
             }
             std::optional<v1::SignedApproverSet> set = approver_sets->Current();
             if (!set.has_value()) return absl::NotFoundError("no approver set has been published");
             v1::GetApproverSetResponse out;
             *out.mutable_set() = *std::move(set);
             return out;
           })},
  };
}

const ApiRoute* ApiRoutes::Find(absl::string_view rpc) const {
  auto it = routes_.find(rpc);
  return it == routes_.end() ? nullptr : &it->second;
}

std::vector<std::string> ApiRoutes::Names() const {
  std::vector<std::string> names;
  names.reserve(routes_.size());
  for (const auto& [name, route] : routes_) names.push_back(name);
  return names;
}

}  // namespace smbfleet::collector

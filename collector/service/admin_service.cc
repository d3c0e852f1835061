#include "collector/service/admin_service.h"

#include "collector/auth/authorize.h"
#include "collector/service/grpc_status.h"
#include "common/status_macros.h"

namespace smbfleet::collector {

namespace v1 = smbfleet::v1;

grpc::ServerUnaryReactor* AdminServiceImpl::ListHosts(grpc::CallbackServerContext* context,
                                                      const v1::ListHostsRequest* request,
                                                      v1::ListHostsResponse* response) {
  return SubmitUnary(context, *authenticator_, work_, response,
                     [this, request](const Principal& p) { return api_->ListHosts(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetHost(grpc::CallbackServerContext* context,
                                                    const v1::GetHostRequest* request,
                                                    v1::GetHostResponse* response) {
  return SubmitUnary(context, *authenticator_, work_, response,
                     [this, request](const Principal& p) { return api_->GetHost(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RequestReport(grpc::CallbackServerContext* context,
                                                          const v1::RequestReportRequest* request,
                                                          v1::RequestReportResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RequestReport(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetCompliance(grpc::CallbackServerContext* context,
                                                          const v1::GetComplianceRequest* request,
                                                          v1::GetComplianceResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->GetCompliance(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListFindings(grpc::CallbackServerContext* context,
                                                         const v1::ListFindingsRequest* request,
                                                         v1::ListFindingsResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ListFindings(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetFleetOverview(
    grpc::CallbackServerContext* context, const v1::GetFleetOverviewRequest* request,
    v1::GetFleetOverviewResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->GetFleetOverview(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetReadiness(grpc::CallbackServerContext* context,
                                                         const v1::GetReadinessRequest* request,
                                                         v1::GetReadinessResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->GetReadiness(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ProposeChange(grpc::CallbackServerContext* context,
                                                          const v1::ProposeChangeRequest* request,
                                                          v1::ProposeChangeResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ProposeChange(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListChanges(grpc::CallbackServerContext* context,
                                                        const v1::ListChangesRequest* request,
                                                        v1::ListChangesResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ListChanges(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetChange(grpc::CallbackServerContext* context,
                                                      const v1::GetChangeRequest* request,
                                                      v1::GetChangeResponse* response) {
  return SubmitUnary(context, *authenticator_, work_, response,
                     [this, request](const Principal& p) { return api_->GetChange(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ApproveChange(grpc::CallbackServerContext* context,
                                                          const v1::ApproveChangeRequest* request,
                                                          v1::ApproveChangeResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ApproveChange(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RejectChange(grpc::CallbackServerContext* context,
                                                         const v1::RejectChangeRequest* request,
                                                         v1::RejectChangeResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RejectChange(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::HaltChange(grpc::CallbackServerContext* context,
                                                       const v1::ChangeActionRequest* request,
                                                       v1::ChangeActionResponse* response) {
  return SubmitUnary(context, *authenticator_, work_, response,
                     [this, request](const Principal& p) { return api_->HaltChange(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ResumeChange(grpc::CallbackServerContext* context,
                                                         const v1::ChangeActionRequest* request,
                                                         v1::ChangeActionResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ResumeChange(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RollbackChange(grpc::CallbackServerContext* context,
                                                           const v1::ChangeActionRequest* request,
                                                           v1::ChangeActionResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RollbackChange(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListAudit(grpc::CallbackServerContext* context,
                                                      const v1::ListAuditRequest* request,
                                                      v1::ListAuditResponse* response) {
  return SubmitUnary(context, *authenticator_, work_, response,
                     [this, request](const Principal& p) { return api_->ListAudit(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::CostModelCalibration(
    grpc::CallbackServerContext* context, const v1::CostModelCalibrationRequest* request,
    v1::CostModelCalibrationResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->CostModelCalibration(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::SaveCostModelCalibration(
    grpc::CallbackServerContext* context, const v1::SaveCostModelCalibrationRequest* request,
    v1::SaveCostModelCalibrationResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->SaveCostModelCalibration(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListCostModelCalibrations(
    grpc::CallbackServerContext* context, const v1::ListCostModelCalibrationsRequest* request,
    v1::ListCostModelCalibrationsResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ListCostModelCalibrations(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListWaivers(grpc::CallbackServerContext* context,
                                                        const v1::ListWaiversRequest* request,
                                                        v1::ListWaiversResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ListWaivers(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RequestWaiver(grpc::CallbackServerContext* context,
                                                          const v1::RequestWaiverRequest* request,
                                                          v1::RequestWaiverResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RequestWaiver(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ApproveWaiver(grpc::CallbackServerContext* context,
                                                          const v1::ApproveWaiverRequest* request,
                                                          v1::ApproveWaiverResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ApproveWaiver(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RevokeWaiver(grpc::CallbackServerContext* context,
                                                         const v1::RevokeWaiverRequest* request,
                                                         v1::RevokeWaiverResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RevokeWaiver(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RegisterApproverKey(
    grpc::CallbackServerContext* context, const v1::RegisterApproverKeyRequest* request,
    v1::RegisterApproverKeyResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RegisterApproverKey(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListApproverKeys(
    grpc::CallbackServerContext* context, const v1::ListApproverKeysRequest* request,
    v1::ListApproverKeysResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ListApproverKeys(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RevokeApproverKey(
    grpc::CallbackServerContext* context, const v1::RevokeApproverKeyRequest* request,
    v1::RevokeApproverKeyResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RevokeApproverKey(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::PublishApproverSet(
    grpc::CallbackServerContext* context, const v1::PublishApproverSetRequest* request,
    v1::PublishApproverSetResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) -> absl::StatusOr<v1::PublishApproverSetResponse> {
        RETURN_IF_ERROR(Authorize(p, Permission::kPublishApproverSet));
        if (approver_sets_ == nullptr) {
          return absl::UnavailableError("this collector does not forward approver sets");
        }
        return approver_sets_->Publish(request->set(), p.name);
      });
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetApproverSet(grpc::CallbackServerContext* context,
                                                           const v1::GetApproverSetRequest*,
                                                           v1::GetApproverSetResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this](const Principal& p) -> absl::StatusOr<v1::GetApproverSetResponse> {
        RETURN_IF_ERROR(Authorize(p, Permission::kReadApproverKeys));
        if (approver_sets_ == nullptr) {
          return absl::UnavailableError("this collector does not forward approver sets");
        }
        std::optional<v1::SignedApproverSet> set = approver_sets_->Current();
        if (!set.has_value()) return absl::NotFoundError("no approver set has been published");
        v1::GetApproverSetResponse out;
        *out.mutable_set() = *std::move(set);
        return out;
      });
}

grpc::ServerUnaryReactor* AdminServiceImpl::WhoAmI(grpc::CallbackServerContext* context,
                                                   const v1::WhoAmIRequest* request,
                                                   v1::WhoAmIResponse* response) {
  return SubmitUnary(context, *authenticator_, work_, response,
                     [this, request](const Principal& p) { return api_->WhoAmI(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::CreateApiToken(grpc::CallbackServerContext* context,
                                                           const v1::CreateApiTokenRequest* request,
                                                           v1::CreateApiTokenResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->CreateApiToken(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListApiTokens(grpc::CallbackServerContext* context,
                                                          const v1::ListApiTokensRequest* request,
                                                          v1::ListApiTokensResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ListApiTokens(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RevokeApiToken(grpc::CallbackServerContext* context,
                                                           const v1::RevokeApiTokenRequest* request,
                                                           v1::RevokeApiTokenResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RevokeApiToken(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RevokeCertificate(
    grpc::CallbackServerContext* context, const v1::RevokeCertificateRequest* request,
    v1::RevokeCertificateResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RevokeCertificate(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListRevocations(
    grpc::CallbackServerContext* context, const v1::ListRevocationsRequest* request,
    v1::ListRevocationsResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ListRevocations(p, *request); });
}

}  // namespace smbfleet::collector

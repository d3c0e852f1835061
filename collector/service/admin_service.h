#ifndef SMBFLEET_COLLECTOR_SERVICE_ADMIN_SERVICE_H_
#define SMBFLEET_COLLECTOR_SERVICE_ADMIN_SERVICE_H_

#include "collector/admin/admin_api.h"
#include "collector/auth/authenticate.h"
#include "collector/service/work_queue.h"
#include "collector/trust/approver_sets.h"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace smbfleet::collector {

// AdminService over gRPC: each call is AdminApi's, run on the work queue.
class AdminServiceImpl final : public smbfleet::v1::AdminService::CallbackService {
 public:
  AdminServiceImpl(AdminApi* api, const Authenticator* authenticator, WorkQueue* work)
      : api_(api), authenticator_(authenticator), work_(work) {}
  // Publish/GetApproverSet (not owned; null: UNAVAILABLE).
  void set_approver_sets(ApproverSets* sets) { approver_sets_ = sets; }

  grpc::ServerUnaryReactor* ListHosts(grpc::CallbackServerContext* context,
                                      const smbfleet::v1::ListHostsRequest* request,
                                      smbfleet::v1::ListHostsResponse* response) override;
  grpc::ServerUnaryReactor* GetHost(grpc::CallbackServerContext* context,
                                    const smbfleet::v1::GetHostRequest* request,
                                    smbfleet::v1::GetHostResponse* response) override;
  grpc::ServerUnaryReactor* RequestReport(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::RequestReportRequest* request,
                                          smbfleet::v1::RequestReportResponse* response) override;
  grpc::ServerUnaryReactor* GetCompliance(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::GetComplianceRequest* request,
                                          smbfleet::v1::GetComplianceResponse* response) override;
  grpc::ServerUnaryReactor* ListFindings(grpc::CallbackServerContext* context,
                                         const smbfleet::v1::ListFindingsRequest* request,
                                         smbfleet::v1::ListFindingsResponse* response) override;
  grpc::ServerUnaryReactor* GetFleetOverview(
      grpc::CallbackServerContext* context, const smbfleet::v1::GetFleetOverviewRequest* request,
      smbfleet::v1::GetFleetOverviewResponse* response) override;
  grpc::ServerUnaryReactor* GetReadiness(grpc::CallbackServerContext* context,
                                         const smbfleet::v1::GetReadinessRequest* request,
                                         smbfleet::v1::GetReadinessResponse* response) override;

  grpc::ServerUnaryReactor* ProposeChange(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::ProposeChangeRequest* request,
                                          smbfleet::v1::ProposeChangeResponse* response) override;
  grpc::ServerUnaryReactor* ListChanges(grpc::CallbackServerContext* context,
                                        const smbfleet::v1::ListChangesRequest* request,
                                        smbfleet::v1::ListChangesResponse* response) override;
  grpc::ServerUnaryReactor* GetChange(grpc::CallbackServerContext* context,
                                      const smbfleet::v1::GetChangeRequest* request,
                                      smbfleet::v1::GetChangeResponse* response) override;
  grpc::ServerUnaryReactor* ApproveChange(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::ApproveChangeRequest* request,
                                          smbfleet::v1::ApproveChangeResponse* response) override;
  grpc::ServerUnaryReactor* RejectChange(grpc::CallbackServerContext* context,
                                         const smbfleet::v1::RejectChangeRequest* request,
                                         smbfleet::v1::RejectChangeResponse* response) override;
  grpc::ServerUnaryReactor* HaltChange(grpc::CallbackServerContext* context,
                                       const smbfleet::v1::ChangeActionRequest* request,
                                       smbfleet::v1::ChangeActionResponse* response) override;
  grpc::ServerUnaryReactor* ResumeChange(grpc::CallbackServerContext* context,
                                         const smbfleet::v1::ChangeActionRequest* request,
                                         smbfleet::v1::ChangeActionResponse* response) override;
  grpc::ServerUnaryReactor* RollbackChange(grpc::CallbackServerContext* context,
                                           const smbfleet::v1::ChangeActionRequest* request,
                                           smbfleet::v1::ChangeActionResponse* response) override;
  grpc::ServerUnaryReactor* ListAudit(grpc::CallbackServerContext* context,
                                      const smbfleet::v1::ListAuditRequest* request,
                                      smbfleet::v1::ListAuditResponse* response) override;
  grpc::ServerUnaryReactor* CostModelCalibration(
      grpc::CallbackServerContext* context,
      const smbfleet::v1::CostModelCalibrationRequest* request,
      smbfleet::v1::CostModelCalibrationResponse* response) override;
  grpc::ServerUnaryReactor* SaveCostModelCalibration(
      grpc::CallbackServerContext* context,
      const smbfleet::v1::SaveCostModelCalibrationRequest* request,
      smbfleet::v1::SaveCostModelCalibrationResponse* response) override;
  grpc::ServerUnaryReactor* ListCostModelCalibrations(
      grpc::CallbackServerContext* context,
      const smbfleet::v1::ListCostModelCalibrationsRequest* request,
      smbfleet::v1::ListCostModelCalibrationsResponse* response) override;
  grpc::ServerUnaryReactor* ListWaivers(grpc::CallbackServerContext* context,
                                        const smbfleet::v1::ListWaiversRequest* request,
                                        smbfleet::v1::ListWaiversResponse* response) override;
  grpc::ServerUnaryReactor* RequestWaiver(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::RequestWaiverRequest* request,
                                          smbfleet::v1::RequestWaiverResponse* response) override;
  grpc::ServerUnaryReactor* ApproveWaiver(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::ApproveWaiverRequest* request,
                                          smbfleet::v1::ApproveWaiverResponse* response) override;
  grpc::ServerUnaryReactor* RevokeWaiver(grpc::CallbackServerContext* context,
                                         const smbfleet::v1::RevokeWaiverRequest* request,
                                         smbfleet::v1::RevokeWaiverResponse* response) override;
  grpc::ServerUnaryReactor* RegisterApproverKey(
      grpc::CallbackServerContext* context, const smbfleet::v1::RegisterApproverKeyRequest* request,
      smbfleet::v1::RegisterApproverKeyResponse* response) override;
  grpc::ServerUnaryReactor* ListApproverKeys(
      grpc::CallbackServerContext* context, const smbfleet::v1::ListApproverKeysRequest* request,
      smbfleet::v1::ListApproverKeysResponse* response) override;
  grpc::ServerUnaryReactor* RevokeApproverKey(
      grpc::CallbackServerContext* context, const smbfleet::v1::RevokeApproverKeyRequest* request,
      smbfleet::v1::RevokeApproverKeyResponse* response) override;

  grpc::ServerUnaryReactor* PublishApproverSet(
      grpc::CallbackServerContext* context, const smbfleet::v1::PublishApproverSetRequest* request,
      smbfleet::v1::PublishApproverSetResponse* response) override;
  grpc::ServerUnaryReactor* GetApproverSet(grpc::CallbackServerContext* context,
                                           const smbfleet::v1::GetApproverSetRequest* request,
                                           smbfleet::v1::GetApproverSetResponse* response) override;

  grpc::ServerUnaryReactor* WhoAmI(grpc::CallbackServerContext* context,
                                   const smbfleet::v1::WhoAmIRequest* request,
                                   smbfleet::v1::WhoAmIResponse* response) override;
  grpc::ServerUnaryReactor* CreateApiToken(grpc::CallbackServerContext* context,
                                           const smbfleet::v1::CreateApiTokenRequest* request,
                                           smbfleet::v1::CreateApiTokenResponse* response) override;
  grpc::ServerUnaryReactor* ListApiTokens(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::ListApiTokensRequest* request,
                                          smbfleet::v1::ListApiTokensResponse* response) override;
  grpc::ServerUnaryReactor* RevokeApiToken(grpc::CallbackServerContext* context,
                                           const smbfleet::v1::RevokeApiTokenRequest* request,
                                           smbfleet::v1::RevokeApiTokenResponse* response) override;
  grpc::ServerUnaryReactor* RevokeCertificate(
      grpc::CallbackServerContext* context, const smbfleet::v1::RevokeCertificateRequest* request,
      smbfleet::v1::RevokeCertificateResponse* response) override;
  grpc::ServerUnaryReactor* ListRevocations(
      grpc::CallbackServerContext* context, const smbfleet::v1::ListRevocationsRequest* request,
      smbfleet::v1::ListRevocationsResponse* response) override;
  // Enrollment (admin_service_enrollment.cc).
  grpc::ServerUnaryReactor* CreateEnrollmentToken(
      grpc::CallbackServerContext* context,
      const smbfleet::v1::CreateEnrollmentTokenRequest* request,
      smbfleet::v1::CreateEnrollmentTokenResponse* response) override;
  grpc::ServerUnaryReactor* ListEnrollmentTokens(
      grpc::CallbackServerContext* context,
      const smbfleet::v1::ListEnrollmentTokensRequest* request,
      smbfleet::v1::ListEnrollmentTokensResponse* response) override;
  grpc::ServerUnaryReactor* RevokeEnrollmentToken(
      grpc::CallbackServerContext* context,
      const smbfleet::v1::RevokeEnrollmentTokenRequest* request,
      smbfleet::v1::RevokeEnrollmentTokenResponse* response) override;
  grpc::ServerUnaryReactor* ListCertificates(
      grpc::CallbackServerContext* context, const smbfleet::v1::ListCertificatesRequest* request,
      smbfleet::v1::ListCertificatesResponse* response) override;
  grpc::ServerUnaryReactor* SetHostLabels(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::SetHostLabelsRequest* request,
                                          smbfleet::v1::SetHostLabelsResponse* response) override;

 private:
  AdminApi* api_;
  const Authenticator* authenticator_;
  WorkQueue* work_;
  ApproverSets* approver_sets_ = nullptr;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_ADMIN_SERVICE_H_

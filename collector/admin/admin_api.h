#ifndef SMBFLEET_COLLECTOR_ADMIN_ADMIN_API_H_
#define SMBFLEET_COLLECTOR_ADMIN_ADMIN_API_H_

// Every AdminService call as a plain function returning its response, shared by the gRPC
// service and (later) the web console's JSON API. Each call authorizes its caller itself, so
// no adapter can forget to.

#include <memory>

#include "absl/status/statusor.h"
#include "collector/admin/nudge_limiter.h"
#include "collector/auth/api_tokens.h"
#include "collector/auth/authorize.h"
#include "collector/auth/revocations.h"
#include "collector/changes/change_service.h"
#include "collector/push/push_router.h"
#include "collector/store/approver_key_store.h"
#include "collector/store/change_store.h"
#include "collector/store/compliance_store.h"
#include "collector/store/enrollment_store.h"
#include "collector/store/host_store.h"
#include "collector/store/identity_store.h"
#include "smbfleet/v1/admin.pb.h"

namespace smbfleet::collector {

class AdminApi {
 public:
  // `changes` and `workflow` may be null: then the change and waiver calls answer
  // UNIMPLEMENTED and hosts carry no change status.
  AdminApi(HostStore* hosts, ComplianceStore* compliance, PushRouter* router,
           ChangeStore* changes = nullptr, changes::ChangeService* workflow = nullptr);

  // Where approvers' public keys are registered; the key calls answer UNIMPLEMENTED without it.
  void SetApproverKeys(ApproverKeyStore* keys) { keys_ = keys; }
  // People's tokens and certificate revocation (identity_api.cc); the calls answer
  // UNIMPLEMENTED without them. `revocations` is told of each new revocation at once.
  void SetIdentity(IdentityStore* store, ApiTokens* tokens, Revocations* revocations) {
    identity_ = store;
    tokens_ = tokens;
    revocations_ = revocations;
  }
  // Enrollment tokens, issued certificates and trusted host labels; without it those calls
  // answer UNIMPLEMENTED and hosts show no trusted labels.
  void SetEnrollment(EnrollmentStore* enrollment) { enrollment_ = enrollment; }

  // Filters (admin.proto ListHostsRequest) are ANDed; INVALID_ARGUMENT names a bad one.
  absl::StatusOr<smbfleet::v1::ListHostsResponse> ListHosts(
      const Principal& caller, const smbfleet::v1::ListHostsRequest& request);
  // A host not seen for `stale_after` is stale (config stale_after, default 2h); `clock` is
  // now for the stale window, the trend's last day and generated_at.
  void SetStaleAfter(absl::Duration stale_after, NudgeLimiter::Clock clock = absl::Now);

  // The console's overview and readiness (overview_api.cc).
  absl::StatusOr<smbfleet::v1::GetFleetOverviewResponse> GetFleetOverview(
      const Principal& caller, const smbfleet::v1::GetFleetOverviewRequest& request);
  absl::StatusOr<smbfleet::v1::GetReadinessResponse> GetReadiness(
      const Principal& caller, const smbfleet::v1::GetReadinessRequest& request);
  // NOT_FOUND for a host that never reported.
  absl::StatusOr<smbfleet::v1::GetHostResponse> GetHost(
      const Principal& caller, const smbfleet::v1::GetHostRequest& request);
  // Replaces the RequestReport limits (defaults: NudgeLimits{}); before serving calls.
  void SetNudgeLimits(NudgeLimits limits, NudgeLimiter::Clock clock = absl::Now);

  // FAILED_PRECONDITION when the host has no open stream; RESOURCE_EXHAUSTED when the host was
  // asked too recently or the caller asked too often (NudgeLimiter).
  absl::StatusOr<smbfleet::v1::RequestReportResponse> RequestReport(
      const Principal& caller, const smbfleet::v1::RequestReportRequest& request);
  absl::StatusOr<smbfleet::v1::GetComplianceResponse> GetCompliance(
      const Principal& caller, const smbfleet::v1::GetComplianceRequest& request);
  absl::StatusOr<smbfleet::v1::ListFindingsResponse> ListFindings(
      const Principal& caller, const smbfleet::v1::ListFindingsRequest& request);

  // Change management and waivers (admin.proto): each authorizes by role, then runs one
  // workflow step.
  absl::StatusOr<smbfleet::v1::ProposeChangeResponse> ProposeChange(
      const Principal& caller, const smbfleet::v1::ProposeChangeRequest& request);
  absl::StatusOr<smbfleet::v1::ListChangesResponse> ListChanges(
      const Principal& caller, const smbfleet::v1::ListChangesRequest& request);
  absl::StatusOr<smbfleet::v1::GetChangeResponse> GetChange(
      const Principal& caller, const smbfleet::v1::GetChangeRequest& request);
  absl::StatusOr<smbfleet::v1::ApproveChangeResponse> ApproveChange(
      const Principal& caller, const smbfleet::v1::ApproveChangeRequest& request);
  absl::StatusOr<smbfleet::v1::RejectChangeResponse> RejectChange(
      const Principal& caller, const smbfleet::v1::RejectChangeRequest& request);
  absl::StatusOr<smbfleet::v1::ChangeActionResponse> HaltChange(
      const Principal& caller, const smbfleet::v1::ChangeActionRequest& request);
  absl::StatusOr<smbfleet::v1::ChangeActionResponse> ResumeChange(
      const Principal& caller, const smbfleet::v1::ChangeActionRequest& request);
  absl::StatusOr<smbfleet::v1::ChangeActionResponse> RollbackChange(
      const Principal& caller, const smbfleet::v1::ChangeActionRequest& request);
  absl::StatusOr<smbfleet::v1::ListAuditResponse> ListAudit(
      const Principal& caller, const smbfleet::v1::ListAuditRequest& request);
  // The cost model against what changes measured (calibration_api.cc): whoever reads changes
  // computes it and lists the saved ones; saving (with its inputs, audited) needs
  // calibrate-cost-model. INVALID_ARGUMENT for a since that is not a positive duration.
  absl::StatusOr<smbfleet::v1::CostModelCalibrationResponse> CostModelCalibration(
      const Principal& caller, const smbfleet::v1::CostModelCalibrationRequest& request);
  absl::StatusOr<smbfleet::v1::SaveCostModelCalibrationResponse> SaveCostModelCalibration(
      const Principal& caller, const smbfleet::v1::SaveCostModelCalibrationRequest& request);
  absl::StatusOr<smbfleet::v1::ListCostModelCalibrationsResponse> ListCostModelCalibrations(
      const Principal& caller, const smbfleet::v1::ListCostModelCalibrationsRequest& request);
  absl::StatusOr<smbfleet::v1::ListWaiversResponse> ListWaivers(
      const Principal& caller, const smbfleet::v1::ListWaiversRequest& request);
  absl::StatusOr<smbfleet::v1::RequestWaiverResponse> RequestWaiver(
      const Principal& caller, const smbfleet::v1::RequestWaiverRequest& request);
  absl::StatusOr<smbfleet::v1::ApproveWaiverResponse> ApproveWaiver(
      const Principal& caller, const smbfleet::v1::ApproveWaiverRequest& request);
  absl::StatusOr<smbfleet::v1::RevokeWaiverResponse> RevokeWaiver(
      const Principal& caller, const smbfleet::v1::RevokeWaiverRequest& request);

  // Approver keys (approver_keys_api.cc): an admin registers a person's public key under their
  // operator name (INVALID_ARGUMENT names a bad name or key; ALREADY_EXISTS for a key id that
  // is registered) and revokes it (a reason is required); any operator lists them.
  absl::StatusOr<smbfleet::v1::RegisterApproverKeyResponse> RegisterApproverKey(
      const Principal& caller, const smbfleet::v1::RegisterApproverKeyRequest& request);
  absl::StatusOr<smbfleet::v1::ListApproverKeysResponse> ListApproverKeys(
      const Principal& caller, const smbfleet::v1::ListApproverKeysRequest& request);
  absl::StatusOr<smbfleet::v1::RevokeApproverKeyResponse> RevokeApproverKey(
      const Principal& caller, const smbfleet::v1::RevokeApproverKeyRequest& request);

  // Identity (identity_api.cc). WhoAmI: the caller as the collector sees it. Tokens: an admin
  // creates one for a person (the secret is in this response only), lists and revokes them.
  // RevokeCertificate: by serial or fingerprint with a reason; refused on every replica from
  // then on, and this replica's streams of it are closed before the response.
  absl::StatusOr<smbfleet::v1::WhoAmIResponse> WhoAmI(const Principal& caller,
                                                      const smbfleet::v1::WhoAmIRequest& request);
  absl::StatusOr<smbfleet::v1::CreateApiTokenResponse> CreateApiToken(
      const Principal& caller, const smbfleet::v1::CreateApiTokenRequest& request);
  absl::StatusOr<smbfleet::v1::ListApiTokensResponse> ListApiTokens(
      const Principal& caller, const smbfleet::v1::ListApiTokensRequest& request);
  absl::StatusOr<smbfleet::v1::RevokeApiTokenResponse> RevokeApiToken(
      const Principal& caller, const smbfleet::v1::RevokeApiTokenRequest& request);
  absl::StatusOr<smbfleet::v1::RevokeCertificateResponse> RevokeCertificate(
      const Principal& caller, const smbfleet::v1::RevokeCertificateRequest& request);
  absl::StatusOr<smbfleet::v1::ListRevocationsResponse> ListRevocations(
      const Principal& caller, const smbfleet::v1::ListRevocationsRequest& request);
  // Enrollment (enrollment_admin_api.cc): an admin creates enrollment tokens (the secret is in
  // the response only), lists and revokes them (a reason is required), and sets the labels
  // policy trusts for a host; certificates are listed by whoever may read them.
  absl::StatusOr<smbfleet::v1::CreateEnrollmentTokenResponse> CreateEnrollmentToken(
      const Principal& caller, const smbfleet::v1::CreateEnrollmentTokenRequest& request);
  absl::StatusOr<smbfleet::v1::ListEnrollmentTokensResponse> ListEnrollmentTokens(
      const Principal& caller, const smbfleet::v1::ListEnrollmentTokensRequest& request);
  absl::StatusOr<smbfleet::v1::RevokeEnrollmentTokenResponse> RevokeEnrollmentToken(
      const Principal& caller, const smbfleet::v1::RevokeEnrollmentTokenRequest& request);
  absl::StatusOr<smbfleet::v1::ListCertificatesResponse> ListCertificates(
      const Principal& caller, const smbfleet::v1::ListCertificatesRequest& request);
  absl::StatusOr<smbfleet::v1::SetHostLabelsResponse> SetHostLabels(
      const Principal& caller, const smbfleet::v1::SetHostLabelsRequest& request);

 private:
  // Authorizes `permission` and maps the caller to the change rules' actor; UNIMPLEMENTED when
  // this collector has no change workflow.
  absl::StatusOr<changes::Actor> ChangeActor(const Principal& caller, Permission permission);
  // Calibrates over the change hosts acked within `since` (unset: 30 days) before now; the
  // inputs are kept in the answer only when `with_inputs`.
  absl::StatusOr<smbfleet::v1::CostModelCalibration> ComputeCalibration(
      const google::protobuf::Duration& since, bool has_since, bool with_inputs);
  // Also puts the trusted labels in place of the reported ones in each summary's labels.
  absl::Status FillChangeStatus(std::vector<smbfleet::v1::HostSummary*> hosts);

  HostStore* hosts_;
  ComplianceStore* compliance_;
  PushRouter* router_;
  ChangeStore* changes_;
  changes::ChangeService* workflow_;
  std::unique_ptr<NudgeLimiter> nudges_;
  ApproverKeyStore* keys_ = nullptr;
  IdentityStore* identity_ = nullptr;
  ApiTokens* tokens_ = nullptr;
  Revocations* revocations_ = nullptr;
  EnrollmentStore* enrollment_ = nullptr;
  absl::Duration stale_after_ = absl::Hours(2);
  NudgeLimiter::Clock clock_ = absl::Now;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_ADMIN_ADMIN_API_H_

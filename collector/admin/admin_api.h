#ifndef SMBFLEET_COLLECTOR_ADMIN_ADMIN_API_H_
#define SMBFLEET_COLLECTOR_ADMIN_ADMIN_API_H_

// Every AdminService call as a plain function returning its response, shared by the gRPC
// service and (later) the web console's JSON API. Each call authorizes its caller itself, so
// no adapter can forget to.

#include "absl/status/statusor.h"
#include "collector/auth/authorize.h"
#include "collector/push/push_router.h"
#include "collector/store/compliance_store.h"
#include "collector/store/host_store.h"
#include "smbfleet/v1/admin.pb.h"

namespace smbfleet::collector {

class AdminApi {
 public:
  AdminApi(HostStore* hosts, ComplianceStore* compliance, PushRouter* router);

  absl::StatusOr<smbfleet::v1::ListHostsResponse> ListHosts(
      const Principal& caller, const smbfleet::v1::ListHostsRequest& request);
  // NOT_FOUND for a host that never reported.
  absl::StatusOr<smbfleet::v1::GetHostResponse> GetHost(
      const Principal& caller, const smbfleet::v1::GetHostRequest& request);
  // FAILED_PRECONDITION when the host has no open stream.
  absl::StatusOr<smbfleet::v1::RequestReportResponse> RequestReport(
      const Principal& caller, const smbfleet::v1::RequestReportRequest& request);
  absl::StatusOr<smbfleet::v1::GetComplianceResponse> GetCompliance(
      const Principal& caller, const smbfleet::v1::GetComplianceRequest& request);
  absl::StatusOr<smbfleet::v1::ListFindingsResponse> ListFindings(
      const Principal& caller, const smbfleet::v1::ListFindingsRequest& request);

 private:
  HostStore* hosts_;
  ComplianceStore* compliance_;
  PushRouter* router_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_ADMIN_ADMIN_API_H_

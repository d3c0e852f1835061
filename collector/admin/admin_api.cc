#include "collector/admin/admin_api.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace smbfleet::collector {
namespace {

constexpr uint32_t kDefaultPageSize = 500;
constexpr uint32_t kMaxPageSize = 5000;
constexpr uint32_t kDefaultFindings = 1000;
constexpr uint32_t kMaxFindings = 10000;

uint32_t Bounded(uint32_t asked, uint32_t fallback, uint32_t max) {
  return asked == 0 ? fallback : std::min(asked, max);
}

}  // namespace

AdminApi::AdminApi(HostStore* hosts, ComplianceStore* compliance, PushRouter* router)
    : hosts_(hosts), compliance_(compliance), router_(router) {}

absl::StatusOr<smbfleet::v1::ListHostsResponse> AdminApi::ListHosts(
    const Principal& caller, const smbfleet::v1::ListHostsRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadFleet));
  HostQuery q;
  q.name_prefix = request.name_prefix();
  q.after_name = request.page_token();
  q.limit = Bounded(request.page_size(), kDefaultPageSize, kMaxPageSize);
  ASSIGN_OR_RETURN(auto hosts, hosts_->ListHosts(q));
  smbfleet::v1::ListHostsResponse response;
  for (auto& h : hosts) {
    h.set_connected(router_->Connected(h.name()));
    *response.add_hosts() = std::move(h);
  }
  // A full page may have more behind it.
  if (response.hosts_size() == static_cast<int>(q.limit)) {
    response.set_next_page_token(response.hosts(response.hosts_size() - 1).name());
  }
  return response;
}

absl::StatusOr<smbfleet::v1::GetHostResponse> AdminApi::GetHost(
    const Principal& caller, const smbfleet::v1::GetHostRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadFleet));
  ASSIGN_OR_RETURN(std::optional<HostRecord> host, hosts_->GetHost(request.name()));
  if (!host.has_value()) {
    return absl::NotFoundError(absl::StrCat("no host named '", request.name(), "'"));
  }
  host->summary.set_connected(router_->Connected(request.name()));
  smbfleet::v1::GetHostResponse response;
  *response.mutable_summary() = std::move(host->summary);
  *response.mutable_posture() = std::move(host->posture);
  response.set_last_report_id(host->last_report_id);
  return response;
}

absl::StatusOr<smbfleet::v1::RequestReportResponse> AdminApi::RequestReport(
    const Principal& caller, const smbfleet::v1::RequestReportRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kRequestReport));
  smbfleet::v1::WatchResponse nudge;
  nudge.mutable_report_now()->set_reason(request.reason().empty()
                                             ? absl::StrCat("requested by ", caller.name)
                                             : request.reason().substr(0, 200));
  if (!router_->Send(request.name(), nudge)) {
    return absl::FailedPreconditionError(
        absl::StrCat("host '", request.name(), "' has no open stream to this collector"));
  }
  Logger("collector")->info("{} asked {} to report now", caller.name, request.name());
  smbfleet::v1::RequestReportResponse response;
  response.set_delivered(true);
  return response;
}

absl::StatusOr<smbfleet::v1::GetComplianceResponse> AdminApi::GetCompliance(
    const Principal& caller, const smbfleet::v1::GetComplianceRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadFleet));
  return compliance_->GetCompliance();
}

absl::StatusOr<smbfleet::v1::ListFindingsResponse> AdminApi::ListFindings(
    const Principal& caller, const smbfleet::v1::ListFindingsRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadFleet));
  ASSIGN_OR_RETURN(auto findings, compliance_->ListFindings(
                                      request.host(), request.rule_id(),
                                      Bounded(request.limit(), kDefaultFindings, kMaxFindings)));
  smbfleet::v1::ListFindingsResponse response;
  for (auto& f : findings) *response.add_findings() = std::move(f);
  return response;
}

}  // namespace smbfleet::collector

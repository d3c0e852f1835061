// The console's fleet overview and readiness ("who would break"): aggregates the stores compute
// (in SQL for PostgreSQL), put together and bounded here.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "collector/admin/admin_api.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

constexpr uint32_t kDefaultTrendDays = 30;
constexpr uint32_t kMaxTrendDays = 366;
constexpr uint32_t kDefaultTop = 10;
constexpr uint32_t kMaxTop = 100;

}  // namespace

absl::StatusOr<smbfleet::v1::GetFleetOverviewResponse> AdminApi::GetFleetOverview(
    const Principal& caller, const smbfleet::v1::GetFleetOverviewRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadFleet));
  if (request.trend_days() > kMaxTrendDays) {
    return absl::InvalidArgumentError(absl::StrCat("trend_days: ", request.trend_days(),
                                                   " days, at most ", kMaxTrendDays, " are kept"));
  }
  if (request.top() > kMaxTop) {
    return absl::InvalidArgumentError(absl::StrCat("top: ", request.top(), ", at most ", kMaxTop));
  }
  OverviewQuery q;
  q.trend_days = request.trend_days() == 0 ? kDefaultTrendDays : request.trend_days();
  q.top = request.top() == 0 ? kDefaultTop : request.top();
  q.now = clock_();
  q.stale_before = q.now - stale_after_;
  ASSIGN_OR_RETURN(smbfleet::v1::GetFleetOverviewResponse out, compliance_->GetFleetOverview(q));
  if (changes_ != nullptr) {
    ASSIGN_OR_RETURN(ChangeStore::Drift drift, changes_->DriftedHosts(q.top));
    out.set_drift_count(drift.count);
    for (const std::string& name : drift.hosts) {
      ASSIGN_OR_RETURN(std::optional<HostRecord> host, hosts_->GetHost(name));
      smbfleet::v1::HostSummary* summary = out.add_drift();
      if (host.has_value()) {
        *summary = std::move(host->summary);
      } else {
        summary->set_name(name);  // a change's host that never reported
      }
      summary->set_connected(router_->Connected(name));
    }
    std::vector<smbfleet::v1::HostSummary*> summaries;
    for (auto& h : *out.mutable_drift()) summaries.push_back(&h);
    RETURN_IF_ERROR(FillChangeStatus(summaries));
  }
  *out.mutable_generated_at() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(q.now));
  return out;
}

absl::StatusOr<smbfleet::v1::GetReadinessResponse> AdminApi::GetReadiness(
    const Principal& caller, const smbfleet::v1::GetReadinessRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadFleet));
  return absl::UnimplementedError("GetReadiness is not implemented yet");
}

}  // namespace smbfleet::collector

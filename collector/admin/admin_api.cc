#include "collector/admin/admin_api.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/changes/approval_payload.h"
#include "common/logging.h"
#include "common/safe_text.h"
#include "common/status_macros.h"

namespace smbfleet::collector {
namespace {

constexpr uint32_t kDefaultPageSize = 500;
constexpr uint32_t kMaxPageSize = 5000;
constexpr uint32_t kDefaultFindings = 1000;
constexpr uint32_t kMaxFindings = 10000;
constexpr uint32_t kDefaultChanges = 100;
constexpr uint32_t kMaxChanges = 1000;
constexpr uint32_t kDefaultAudit = 1000;
constexpr uint32_t kMaxAudit = 10000;

uint32_t Bounded(uint32_t asked, uint32_t fallback, uint32_t max) {
  return asked == 0 ? fallback : std::min(asked, max);
}

}  // namespace

AdminApi::AdminApi(HostStore* hosts, ComplianceStore* compliance, PushRouter* router,
                   ChangeStore* changes, changes::ChangeService* workflow)
    : hosts_(hosts),
      compliance_(compliance),
      router_(router),
      changes_(changes),
      workflow_(workflow),
      nudges_(std::make_unique<NudgeLimiter>()) {}

void AdminApi::SetStaleAfter(absl::Duration stale_after, NudgeLimiter::Clock clock) {
  stale_after_ = stale_after;
  clock_ = std::move(clock);
}

void AdminApi::SetNudgeLimits(NudgeLimits limits, NudgeLimiter::Clock clock) {
  nudges_ = std::make_unique<NudgeLimiter>(limits, std::move(clock));
}

absl::Status AdminApi::FillChangeStatus(std::vector<smbfleet::v1::HostSummary*> hosts) {
  // The labels shown as the host's are those policy trusts; the agent's own stay in
  // reported_labels.
  for (auto* h : hosts) {
    h->mutable_labels()->clear();
    if (enrollment_ == nullptr) continue;
    ASSIGN_OR_RETURN(HostLabels trusted, enrollment_->GetHostLabels(h->name()));
    h->mutable_labels()->insert(trusted.begin(), trusted.end());
  }
  if (changes_ == nullptr || hosts.empty()) return absl::OkStatus();
  std::vector<std::string> names;
  for (const auto* h : hosts) names.push_back(h->name());
  ASSIGN_OR_RETURN(auto statuses, changes_->HostStatuses(names));
  for (auto* h : hosts) {
    auto it = statuses.find(h->name());
    if (it != statuses.end()) *h->mutable_change_status() = it->second;
  }
  return absl::OkStatus();
}

absl::StatusOr<changes::Actor> AdminApi::ChangeActor(const Principal& caller,
                                                     Permission permission) {
  RETURN_IF_ERROR(Authorize(caller, permission));
  if (workflow_ == nullptr || changes_ == nullptr) {
    return absl::UnimplementedError("this collector has no change store configured");
  }
  return ActorOf(caller, permission);
}

absl::StatusOr<smbfleet::v1::ListHostsResponse> AdminApi::ListHosts(
    const Principal& caller, const smbfleet::v1::ListHostsRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadFleet));
  if (!smbfleet::v1::Platform_IsValid(request.platform())) {
    return absl::InvalidArgumentError(
        absl::StrCat("platform: ", request.platform(), " is not a Platform value"));
  }
  for (const auto& [key, value] : request.labels()) {
    if (key.empty()) return absl::InvalidArgumentError("labels: a label key is empty");
  }
  HostQuery q;
  q.name_prefix = request.name_prefix();
  q.after_name = request.page_token();
  q.limit = Bounded(request.page_size(), kDefaultPageSize, kMaxPageSize);
  q.query = request.query();
  q.labels.insert(request.labels().begin(), request.labels().end());
  q.os = request.os();
  q.platform = request.platform();
  q.failing_rule = request.failing_rule();
  if (request.stale_only()) q.seen_before = clock_() - stale_after_;
  ASSIGN_OR_RETURN(HostPage page, hosts_->FindHosts(q));
  smbfleet::v1::ListHostsResponse response;
  response.set_total(page.total);
  for (auto& h : page.hosts) {
    h.set_connected(router_->Connected(h.name()));
    *response.add_hosts() = std::move(h);
  }
  std::vector<smbfleet::v1::HostSummary*> summaries;
  for (auto& h : *response.mutable_hosts()) summaries.push_back(&h);
  RETURN_IF_ERROR(FillChangeStatus(summaries));
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
  RETURN_IF_ERROR(FillChangeStatus({&host->summary}));
  smbfleet::v1::GetHostResponse response;
  *response.mutable_summary() = std::move(host->summary);
  *response.mutable_posture() = std::move(host->posture);
  response.set_last_report_id(host->last_report_id);
  return response;
}

absl::StatusOr<smbfleet::v1::RequestReportResponse> AdminApi::RequestReport(
    const Principal& caller, const smbfleet::v1::RequestReportRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kRequestReport));
  RETURN_IF_ERROR(nudges_->Admit(caller.name, request.name()));
  smbfleet::v1::WatchResponse nudge;
  nudge.mutable_report_now()->set_reason(request.reason().empty()
                                             ? absl::StrCat("requested by ", caller.name)
                                             : std::string(Utf8Prefix(request.reason(), 200)));
  if (!router_->Send(request.name(), nudge)) {
    nudges_->Undelivered(request.name());
    return absl::FailedPreconditionError(
        absl::StrCat("host '", request.name(), "' has no open stream to this collector"));
  }
  Logger("collector")
      ->info("{} asked {} to report now", LogSafe(caller.name), LogSafe(request.name()));
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
  if (request.include_waived()) {
    const uint32_t limit = Bounded(request.limit(), kDefaultFindings, kMaxFindings);
    const uint32_t left = limit - std::min<uint32_t>(limit, findings.size());
    ASSIGN_OR_RETURN(auto waived,
                     compliance_->ListWaivedFindings(request.host(), request.rule_id(), left));
    for (auto& f : waived) findings.push_back(std::move(f));
  }
  smbfleet::v1::ListFindingsResponse response;
  for (auto& f : findings) *response.add_findings() = std::move(f);
  return response;
}

absl::StatusOr<smbfleet::v1::ProposeChangeResponse> AdminApi::ProposeChange(
    const Principal& caller, const smbfleet::v1::ProposeChangeRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kProposeChange));
  ASSIGN_OR_RETURN(auto response, workflow_->Propose(actor, request));
  Logger("collector")
      ->info("{} proposed change {} for {} hosts", LogSafe(caller.name),
             LogSafe(response.change().id()), response.change().hosts_size());
  return response;
}

absl::StatusOr<smbfleet::v1::ListChangesResponse> AdminApi::ListChanges(
    const Principal& caller, const smbfleet::v1::ListChangesRequest& request) {
  RETURN_IF_ERROR(ChangeActor(caller, Permission::kReadChanges).status());
  ChangeQuery q;
  q.state = request.state();
  q.limit = Bounded(request.limit(), kDefaultChanges, kMaxChanges);
  ASSIGN_OR_RETURN(auto list, changes_->ListChanges(q));
  smbfleet::v1::ListChangesResponse response;
  for (auto& c : list) {
    c.clear_approval_payload();  // as large as the change; GetChange has it
    *response.add_changes() = std::move(c);
  }
  return response;
}

absl::StatusOr<smbfleet::v1::GetChangeResponse> AdminApi::GetChange(
    const Principal& caller, const smbfleet::v1::GetChangeRequest& request) {
  RETURN_IF_ERROR(ChangeActor(caller, Permission::kReadChanges).status());
  ASSIGN_OR_RETURN(std::optional<smbfleet::v1::Change> change, changes_->GetChange(request.id()));
  if (!change.has_value()) {
    return absl::NotFoundError(absl::StrCat("no change '", request.id().substr(0, 64), "'"));
  }
  smbfleet::v1::GetChangeResponse response;
  // What an approval signs, while one can be given.
  if (change->state() == smbfleet::v1::CHANGE_STATE_PROPOSED) {
    auto payload = changes::ApprovalPayloadBytes(*change);
    if (payload.ok()) {
      response.set_approval_payload(*std::move(payload));
      // A v2 payload names its hosts by their tree head: the approver reads and checks them.
      if (!changes::SignedAsV1(*change)) {
        std::vector<smbfleet::v1::HostOrder> hosts = changes::ApprovalHostsOf(*change);
        std::sort(hosts.begin(), hosts.end(),
                  [](const auto& a, const auto& b) { return a.host() < b.host(); });
        for (auto& h : hosts) *response.add_approval_hosts() = std::move(h);
      }
    } else {
      Logger("collector")
          ->warn("change {}: no approval payload: {}", change->id(),
                 std::string(payload.status().message()));
    }
  }
  *response.mutable_change() = std::move(*change);
  return response;
}

absl::StatusOr<smbfleet::v1::ApproveChangeResponse> AdminApi::ApproveChange(
    const Principal& caller, const smbfleet::v1::ApproveChangeRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kApproveChange));
  return workflow_->Approve(actor, request);
}

absl::StatusOr<smbfleet::v1::RejectChangeResponse> AdminApi::RejectChange(
    const Principal& caller, const smbfleet::v1::RejectChangeRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kApproveChange));
  ASSIGN_OR_RETURN(smbfleet::v1::Change change,
                   workflow_->Reject(actor, request.id(), request.reason()));
  smbfleet::v1::RejectChangeResponse response;
  *response.mutable_change() = std::move(change);
  return response;
}

absl::StatusOr<smbfleet::v1::ChangeActionResponse> AdminApi::HaltChange(
    const Principal& caller, const smbfleet::v1::ChangeActionRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kHaltChange));
  ASSIGN_OR_RETURN(smbfleet::v1::Change change,
                   workflow_->Halt(actor, request.id(), request.reason()));
  smbfleet::v1::ChangeActionResponse response;
  *response.mutable_change() = std::move(change);
  return response;
}

absl::StatusOr<smbfleet::v1::ChangeActionResponse> AdminApi::ResumeChange(
    const Principal& caller, const smbfleet::v1::ChangeActionRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kApproveChange));
  ASSIGN_OR_RETURN(smbfleet::v1::Change change,
                   workflow_->Resume(actor, request.id(), request.reason()));
  smbfleet::v1::ChangeActionResponse response;
  *response.mutable_change() = std::move(change);
  return response;
}

absl::StatusOr<smbfleet::v1::ChangeActionResponse> AdminApi::RollbackChange(
    const Principal& caller, const smbfleet::v1::ChangeActionRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kApproveChange));
  return workflow_->Rollback(actor, request.id(), request.reason());
}

absl::StatusOr<smbfleet::v1::ListAuditResponse> AdminApi::ListAudit(
    const Principal& caller, const smbfleet::v1::ListAuditRequest& request) {
  RETURN_IF_ERROR(ChangeActor(caller, Permission::kReadChanges).status());
  AuditQuery q;
  q.change_id = request.change_id();
  q.waiver_id = request.waiver_id();
  q.after_seq = request.after_seq();
  q.limit = Bounded(request.limit(), kDefaultAudit, kMaxAudit);
  ASSIGN_OR_RETURN(auto entries, changes_->ListAudit(q));
  smbfleet::v1::ListAuditResponse response;
  for (auto& e : entries) *response.add_entries() = std::move(e);
  return response;
}

absl::StatusOr<smbfleet::v1::ListWaiversResponse> AdminApi::ListWaivers(
    const Principal& caller, const smbfleet::v1::ListWaiversRequest& request) {
  RETURN_IF_ERROR(ChangeActor(caller, Permission::kReadChanges).status());
  ASSIGN_OR_RETURN(auto waivers, changes_->ListWaivers(request.include_inactive(), absl::Now()));
  smbfleet::v1::ListWaiversResponse response;
  for (auto& w : waivers) *response.add_waivers() = std::move(w);
  return response;
}

absl::StatusOr<smbfleet::v1::RequestWaiverResponse> AdminApi::RequestWaiver(
    const Principal& caller, const smbfleet::v1::RequestWaiverRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kRequestWaiver));
  ASSIGN_OR_RETURN(smbfleet::v1::Waiver waiver, workflow_->RequestWaiver(actor, request.waiver()));
  smbfleet::v1::RequestWaiverResponse response;
  *response.mutable_waiver() = std::move(waiver);
  return response;
}

absl::StatusOr<smbfleet::v1::ApproveWaiverResponse> AdminApi::ApproveWaiver(
    const Principal& caller, const smbfleet::v1::ApproveWaiverRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kApproveWaiver));
  ASSIGN_OR_RETURN(smbfleet::v1::Waiver waiver,
                   workflow_->ApproveWaiver(actor, request.id(), request.comment()));
  smbfleet::v1::ApproveWaiverResponse response;
  *response.mutable_waiver() = std::move(waiver);
  return response;
}

absl::StatusOr<smbfleet::v1::RevokeWaiverResponse> AdminApi::RevokeWaiver(
    const Principal& caller, const smbfleet::v1::RevokeWaiverRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kRevokeWaiver));
  ASSIGN_OR_RETURN(smbfleet::v1::Waiver waiver,
                   workflow_->RevokeWaiver(actor, request.id(), request.reason()));
  smbfleet::v1::RevokeWaiverResponse response;
  *response.mutable_waiver() = std::move(waiver);
  return response;
}

}  // namespace smbfleet::collector

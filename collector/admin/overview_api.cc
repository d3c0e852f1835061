// The console's fleet overview and readiness ("who would break"): aggregates the stores compute
// (in SQL for PostgreSQL), put together and bounded here.

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collector/admin/admin_api.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "policy/evaluate.h"
#include "policy/plan.h"
#include "policy/settings.h"

namespace smbfleet::collector {
namespace {

constexpr uint32_t kDefaultTrendDays = 30;
constexpr uint32_t kMaxTrendDays = 366;
constexpr uint32_t kDefaultTop = 10;
constexpr uint32_t kMaxTop = 100;
constexpr uint32_t kDefaultClients = 500;
constexpr uint32_t kMaxClients = 5000;
constexpr int kEvidencePerClient = 5;
constexpr uint32_t kMaxRuleHosts = 10000;

using google::protobuf::util::TimeUtil;

// One client (or, for client.* settings, one server) that enforcing would cut off, gathered
// over hosts.
struct ClientSeen {
  std::set<std::string> hosts;
  std::set<std::string> reasons;
  std::optional<google::protobuf::Timestamp> first, last;
  std::vector<smbfleet::v1::Evidence> evidence;
  std::string name, address;  // servers: as first reported (the key is case-folded)
};

using ClientKey = std::tuple<std::string, std::string, std::string>;  // address, name, user

// Which side a setting ("client.minDialect", "share.encryptData[HR]") constrains.
policy::SettingScope ScopeOf(absl::string_view setting) {
  absl::StatusOr<policy::SettingInfo> info =
      policy::LookupSetting(setting.substr(0, setting.find('[')));
  return info.ok() ? info->scope : policy::SettingScope::kServer;
}

void Gather(const std::string& host, const smbfleet::v1::AffectedClient& c, ClientSeen* seen) {
  seen->hosts.insert(host);
  if (!c.reason().empty()) seen->reasons.insert(c.reason());
  if (c.has_first_seen() && (!seen->first || c.first_seen() < *seen->first)) {
    seen->first = c.first_seen();
  }
  if (c.has_last_seen() && (!seen->last || *seen->last < c.last_seen())) {
    seen->last = c.last_seen();
  }
  if (seen->name.empty()) seen->name = c.client_name();
  if (seen->address.empty()) seen->address = c.client_address();
  if (seen->evidence.size() < kEvidencePerClient) {
    smbfleet::v1::Evidence e;
    e.set_field(c.setting());
    e.set_observed(c.dialect() == smbfleet::v1::DIALECT_UNSPECIFIED
                       ? std::string()
                       : smbfleet::v1::Dialect_Name(c.dialect()));
    e.set_expected(c.reason());
    e.set_share(c.share());
    e.set_session_id(c.session_id());
    e.set_client_address(c.client_address());
    e.set_client_name(c.client_name());
    e.set_user(c.user());
    e.set_note(absl::StrCat(host, ": ", c.evidence()));
    seen->evidence.push_back(std::move(e));
  }
}

// What enforcing would cut off: clients for server and share settings; for client settings the
// servers the fleet's own clients talk to, one per server name (case-insensitive).
struct CutOff {
  std::map<ClientKey, ClientSeen> clients;
  std::map<std::string, ClientSeen> servers;
  std::set<policy::SettingScope> scopes;

  void Add(const std::string& host, const smbfleet::v1::AffectedClient& c) {
    if (ScopeOf(c.setting()) == policy::SettingScope::kClient) {
      const std::string& id = c.client_name().empty() ? c.client_address() : c.client_name();
      Gather(host, c, &servers[absl::AsciiStrToLower(id)]);
    } else {
      Gather(host, c, &clients[{c.client_address(), c.client_name(), c.user()}]);
    }
  }

  std::string Side() const {
    bool client = scopes.count(policy::SettingScope::kClient) > 0;
    bool server = scopes.size() > (client ? 1u : 0u);
    return client && server ? "both" : client ? "client" : server ? "server" : "";
  }
};

// Most hosts first; ties keep the map's order.
template <typename Key>
std::vector<std::pair<const Key*, const ClientSeen*>> MostHostsFirst(
    const std::map<Key, ClientSeen>& seen) {
  std::vector<std::pair<const Key*, const ClientSeen*>> sorted;
  for (const auto& [key, s] : seen) sorted.emplace_back(&key, &s);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second->hosts.size() > b.second->hosts.size();
  });
  return sorted;
}

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
  if (request.rule_id().empty() == request.change_id().empty()) {
    return absl::InvalidArgumentError("exactly one of rule_id and change_id is required");
  }
  if (request.limit() > kMaxClients) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: ", request.limit(), ", at most ", kMaxClients));
  }
  const uint32_t limit = request.limit() == 0 ? kDefaultClients : request.limit();
  smbfleet::v1::GetReadinessResponse out;
  CutOff cut;
  const absl::Time now = clock_();

  if (!request.change_id().empty()) {
    // A change: the steps of each of its hosts against that host's latest posture.
    if (changes_ == nullptr) {
      return absl::UnimplementedError("this collector has no change store configured");
    }
    ASSIGN_OR_RETURN(std::optional<smbfleet::v1::Change> change,
                     changes_->GetChange(request.change_id()));
    if (!change.has_value()) {
      return absl::NotFoundError(absl::StrCat("no change '", request.change_id(), "'"));
    }
    std::set<std::string> settings;
    for (const auto& h : change->hosts()) {
      std::vector<smbfleet::v1::PlanStep> steps(h.steps().begin(), h.steps().end());
      for (const auto& s : steps) {
        settings.insert(absl::StrCat(s.setting(), s.share().empty() ? "" : "[", s.share(),
                                     s.share().empty() ? "" : "]", " = ", s.value()));
        cut.scopes.insert(ScopeOf(s.setting()));
      }
      ASSIGN_OR_RETURN(std::optional<HostRecord> host, hosts_->GetHost(h.host()));
      out.set_hosts_considered(out.hosts_considered() + 1);
      // A host without a stored posture keeps the impact computed when the change was proposed.
      const smbfleet::v1::Impact impact =
          host.has_value() ? policy::PlanImpact(host->posture, steps, {}) : h.impact();
      for (const auto& c : impact.clients()) cut.Add(h.host(), c);
    }
    out.set_requirement(absl::StrCat("change ", change->id(), ": ", absl::StrJoin(settings, ", ")));
  } else {
    // A rule: what enforcing it would set on each host that fails it, as a proposal plans it.
    const policy::Policy* policy = workflow_ == nullptr ? nullptr : workflow_->policy();
    if (policy == nullptr) {
      return absl::FailedPreconditionError("this collector has no policy to plan a rule with");
    }
    for (const policy::Rule& r : policy->rules) {
      if (r.id != request.rule_id()) continue;
      for (const policy::RemediationStep& rs : r.remediation) {
        cut.scopes.insert(policy::InfoOf(rs.setting).scope);
      }
    }
    ASSIGN_OR_RETURN(auto findings,
                     compliance_->ListFindings("", request.rule_id(), kMaxRuleHosts));
    std::set<std::string> failing;
    for (const auto& f : findings) failing.insert(f.host());
    std::set<std::string> settings;
    for (const std::string& name : failing) {
      ASSIGN_OR_RETURN(std::optional<HostRecord> host, hosts_->GetHost(name));
      if (!host.has_value()) continue;
      out.set_hosts_considered(out.hosts_considered() + 1);
      const smbfleet::v1::HostEvaluation eval =
          policy::EvaluateHost(*policy, host->posture, {}, now);
      const smbfleet::v1::RemediationPlan plan =
          policy::PlanRemediation(*policy, host->posture, eval, {}, now);
      std::vector<smbfleet::v1::PlanStep> steps;
      for (const auto& s : plan.steps()) {
        if (std::find(s.rule_ids().begin(), s.rule_ids().end(), request.rule_id()) !=
            s.rule_ids().end()) {
          settings.insert(absl::StrCat(s.setting(), " = ", s.value()));
          steps.push_back(s);
        }
      }
      const smbfleet::v1::Impact impact = policy::PlanImpact(host->posture, steps, {});
      for (const auto& c : impact.clients()) cut.Add(name, c);
    }
    out.set_requirement(absl::StrCat("rule ", request.rule_id(),
                                     settings.empty()
                                         ? " (no typed setting on the failing hosts)"
                                         : absl::StrCat(": ", absl::StrJoin(settings, ", "))));
  }

  out.set_side(cut.Side());
  auto sorted = MostHostsFirst(cut.clients);
  for (size_t i = 0; i < sorted.size() && i < limit; ++i) {
    const auto& [key, seen] = sorted[i];
    auto* c = out.add_clients();
    c->set_client_address(std::get<0>(*key));
    c->set_client_name(std::get<1>(*key));
    c->set_user(std::get<2>(*key));
    for (const auto& h : seen->hosts) c->add_hosts(h);
    for (const auto& r : seen->reasons) c->add_reasons(r);
    if (seen->first) *c->mutable_first_seen() = *seen->first;
    if (seen->last) *c->mutable_last_seen() = *seen->last;
    for (const auto& e : seen->evidence) *c->add_evidence() = e;
  }
  auto servers = MostHostsFirst(cut.servers);
  for (size_t i = 0; i < servers.size() && i < limit; ++i) {
    const ClientSeen& seen = *servers[i].second;
    auto* s = out.add_servers();
    s->set_server_name(seen.name);
    s->set_server_address(seen.address);
    for (const auto& h : seen.hosts) s->add_hosts(h);
    for (const auto& r : seen.reasons) s->add_reasons(r);
    if (seen.first) *s->mutable_first_seen() = *seen.first;
    if (seen.last) *s->mutable_last_seen() = *seen.last;
    for (const auto& e : seen.evidence) *s->add_evidence() = e;
  }
  return out;
}

}  // namespace smbfleet::collector

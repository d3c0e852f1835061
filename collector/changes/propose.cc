// ChangeService::Propose: a change from the collector's view of the fleet. Each target host is
// planned from its latest stored posture with the active policy (peers: the other hosts'
// client connections), or gets the hand-written typed settings; hosts that need nothing are
// skipped with why, and a change with no host left is refused and not stored.

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collector/changes/change_rollout.h"
#include "collector/changes/change_service.h"
#include "collector/ingest/pipeline.h"
#include "common/change_calibration.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "policy/evaluate.h"
#include "policy/plan.h"
#include "policy/settings.h"

namespace smbfleet::collector::changes {

namespace v1 = smbfleet::v1;

namespace {

constexpr uint32_t kFleetPage = 1000;
constexpr size_t kMaxShareName = 80;

google::protobuf::Timestamp Ts(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

// What the error messages quote of an input: short and printable.
std::string Quoted(const std::string& s) {
  std::string out;
  for (char ch : s.substr(0, 64)) out += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
  return absl::StrCat("'", out, s.size() > 64 ? "...'" : "'");
}

// A share name as SMB allows it (no path separators, wildcards or control characters).
bool ValidShareName(const std::string& name) {
  if (name.empty() || name.size() > kMaxShareName) return false;
  for (unsigned char ch : name) {
    if (ch < 0x20 || ch == 0x7f || absl::StrContains("\\/[]:|<>+=;,*?\"", static_cast<char>(ch))) {
      return false;
    }
  }
  return name != "." && name != "..";
}

bool MatchesLabels(const v1::HostSummary& host,
                   const google::protobuf::Map<std::string, std::string>& selector) {
  for (const auto& [k, v] : selector) {
    auto it = host.labels().find(k);
    if (it == host.labels().end() || it->second != v) return false;
  }
  return true;
}

// Every host's stored record, by name: the targets, and the peers' client connections.
absl::StatusOr<std::map<std::string, HostRecord>> LoadFleet(HostStore& hosts) {
  std::map<std::string, HostRecord> fleet;
  HostQuery q;
  q.limit = kFleetPage;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<v1::HostSummary> page, hosts.ListHosts(q));
    std::vector<std::string> names;
    names.reserve(page.size());
    for (const auto& s : page) names.push_back(s.name());
    ASSIGN_OR_RETURN(auto records, hosts.GetHosts(names));  // the page in one read
    fleet.merge(records);
    if (page.size() < q.limit) break;
    q.after_name = page.back().name();
  }
  return fleet;
}

// Every stored connection, in fleet (name) order, and where each server name (lower case) is
// named: a target's peers are a lookup of its names, not a scan of the fleet's connections
// (which made a proposal to every host quadratic).
struct PeerIndex {
  std::vector<policy::PeerConnection> all;
  std::map<std::string, std::vector<size_t>> by_server;  // positions in `all`
};

PeerIndex IndexPeers(const std::map<std::string, HostRecord>& fleet) {
  PeerIndex index;
  for (const auto& [name, record] : fleet) {
    for (const auto& c : record.posture.connections()) {
      if (c.server_name().empty()) continue;
      index.by_server[absl::AsciiStrToLower(c.server_name())].push_back(index.all.size());
      index.all.push_back({name, c});
    }
  }
  return index;
}

// The connections of other hosts towards `host`, as policy::PeerConnectionsTowards picks them
// from every stored connection (and in the same order).
std::vector<policy::PeerConnection> PeersOf(const std::string& host, const v1::Posture& posture,
                                            const PeerIndex& index) {
  const v1::HostInfo& info = posture.host();
  std::vector<size_t> at;
  for (const std::string& key :
       {info.hostname(), info.fqdn(), info.fqdn().substr(0, info.fqdn().find('.'))}) {
    if (key.empty()) continue;
    auto it = index.by_server.find(absl::AsciiStrToLower(key));
    if (it != index.by_server.end()) at.insert(at.end(), it->second.begin(), it->second.end());
  }
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  std::vector<policy::PeerConnection> candidates;
  candidates.reserve(at.size());
  for (size_t i : at) {
    if (index.all[i].reporter != host) candidates.push_back(index.all[i]);
  }
  return policy::PeerConnectionsTowards(info, candidates);
}

bool HasShare(const v1::Posture& posture, const std::string& share) {
  for (const auto& s : posture.shares()) {
    if (s.name() == share) return true;
  }
  return false;
}

struct TypedSetting {
  policy::SettingInfo info;
  std::string share;
  std::string value;  // normalised
};

absl::StatusOr<std::vector<TypedSetting>> ValidateSettings(
    const google::protobuf::RepeatedPtrField<v1::SettingChange>& settings) {
  std::vector<TypedSetting> out;
  for (int i = 0; i < settings.size(); ++i) {
    const v1::SettingChange& s = settings[i];
    const std::string field = absl::StrCat("settings[", i, "]");
    absl::StatusOr<policy::SettingInfo> info = policy::LookupSetting(s.setting());
    if (!info.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".setting: ", Quoted(s.setting()),
                                                     " is not a setting on the allowlist"));
    }
    absl::StatusOr<std::string> value = policy::NormalizeSettingValue(*info, s.value());
    if (!value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".value: ", Quoted(s.value()), " for ",
                                                     info->name, ": ", value.status().message()));
    }
    const bool share_scoped = info->scope == policy::SettingScope::kShare;
    if (share_scoped && !ValidShareName(s.share())) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".share: ", Quoted(s.share()), " is not a valid share name for ", info->name));
    }
    if (!share_scoped && !s.share().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".share: ", info->name, " is not a share setting, got share ", Quoted(s.share())));
    }
    out.push_back({*info, s.share(), *value});
  }
  return out;
}

}  // namespace

absl::StatusOr<v1::ProposeChangeResponse> ChangeService::Propose(
    const Actor& actor, const v1::ProposeChangeRequest& request) {
  if (actor.role != Role::kProposer && actor.role != Role::kAdmin) {
    return absl::PermissionDeniedError(
        absl::StrCat(actor.name, " is ", RoleName(actor.role), ": proposing needs proposer"));
  }
  const bool by_rule = !request.rule_id().empty();
  const bool by_settings = !request.settings().empty();
  const bool by_hosts = !request.hosts().empty();
  if (by_rule && (by_hosts || by_settings)) {
    return absl::InvalidArgumentError(
        "rule_id: give hosts, rule_id or settings (with hosts or labels), not several");
  }
  if (!by_rule && !by_settings && !by_hosts) {
    return absl::InvalidArgumentError("hosts, rule_id or settings: one is required");
  }
  if (by_settings && !by_hosts && request.labels().empty()) {
    return absl::InvalidArgumentError("settings: name the hosts (hosts or labels) they are for");
  }
  if (!by_rule && !by_settings && !request.labels().empty()) {
    return absl::InvalidArgumentError("labels: select hosts only with rule_id or settings");
  }
  if (!by_settings && policy_ == nullptr) {
    return absl::FailedPreconditionError(
        "nothing to plan with: the collector has no policy configured (propose --settings)");
  }
  if (by_rule) {
    bool known = false;
    for (const auto& r : policy_->rules) known = known || r.id == request.rule_id();
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("rule_id: ", Quoted(request.rule_id()),
                                                     " is not a rule of policy ", policy_->name));
    }
  }
  std::vector<TypedSetting> typed;
  if (by_settings) {
    ASSIGN_OR_RETURN(typed, ValidateSettings(request.settings()));
  }

  const absl::Time now = clock_();
  ASSIGN_OR_RETURN(auto fleet, LoadFleet(*hosts_));
  if (trusted_labels_ != nullptr) {
    std::vector<std::string> names;
    names.reserve(fleet.size());
    for (const auto& [name, record] : fleet) names.push_back(name);
    ASSIGN_OR_RETURN(auto trusted, trusted_labels_->GetHostLabelsOf(names));  // one read
    for (auto& [name, record] : fleet) {
      const HostLabels& labels = trusted[name];
      record.summary.mutable_labels()->clear();
      record.summary.mutable_labels()->insert(labels.begin(), labels.end());
    }
  }

  // The targets, in name order.
  std::vector<std::string> targets;
  if (by_hosts) {
    std::set<std::string> seen;
    for (const std::string& name : request.hosts()) {
      if (fleet.count(name) == 0) {
        return absl::NotFoundError(
            absl::StrCat("hosts: no host named ", Quoted(name), " has reported"));
      }
      if (seen.insert(name).second) targets.push_back(name);
    }
  } else {
    for (const auto& [name, record] : fleet) {
      if (MatchesLabels(record.summary, request.labels())) targets.push_back(name);
    }
  }
  if (by_rule) {
    std::vector<std::string> failing;
    for (const std::string& name : targets) {
      ASSIGN_OR_RETURN(std::vector<ResultStatus> results,
                       compliance_->CurrentResults(name, policy_->name));
      for (const ResultStatus& r : results) {
        if (r.rule_id == request.rule_id() && r.policy_version == policy_->version &&
            r.status == v1::COMPLIANCE_STATUS_NON_COMPLIANT) {
          failing.push_back(name);
          break;
        }
      }
    }
    targets = std::move(failing);
  }

  std::vector<v1::Waiver> waivers;
  if (!by_settings) {
    ASSIGN_OR_RETURN(waivers, compliance_->ActiveWaivers());
  }

  // The newest saved calibration corrects the CPU predictions of its host classes
  // (docs/cost-model.md "Calibration against measured changes"); a store without calibrations
  // leaves the model's.
  std::optional<v1::CostModelCalibration> calibration;
  if (auto saved = changes_->ListCostModelCalibrations(1); saved.ok()) {
    if (!saved->empty()) calibration = std::move(saved->front());
  } else if (!absl::IsUnimplemented(saved.status())) {
    return saved.status();
  }

  const PeerIndex peer_index = IndexPeers(fleet);
  v1::Change change;
  v1::ProposeChangeResponse response;
  for (const std::string& name : targets) {
    const HostRecord& record = fleet.at(name);
    // Policies match on the host's identity, which is its certificate's (as the pipeline does).
    v1::Posture subject =
        trusted_labels_ == nullptr
            ? record.posture
            : TrustedSubject(
                  name, HostLabels(record.summary.labels().begin(), record.summary.labels().end()),
                  record.posture);
    subject.mutable_host()->set_hostname(name);
    const auto peers = PeersOf(name, subject, peer_index);
    v1::ChangeHost host;
    host.set_host(name);
    host.set_state(v1::HOST_CHANGE_STATE_PENDING);
    host.set_wave(-1);
    *host.mutable_labels() = record.summary.labels();
    std::vector<v1::PlanStep> steps;
    if (by_settings) {
      std::string skip_why = "every setting already has its value";
      for (const TypedSetting& t : typed) {
        if (!t.share.empty() && !HasShare(subject, t.share)) {
          if (by_hosts) {
            return absl::InvalidArgumentError(absl::StrCat(
                "settings: host ", name, " has no share ", Quoted(t.share), " for ", t.info.name));
          }
          skip_why = absl::StrCat("no share ", Quoted(t.share));
          steps.clear();
          break;
        }
        std::string current = policy::CurrentSettingValue(t.info, subject, t.share);
        if (current == t.value) continue;
        v1::PlanStep step;
        step.set_order(static_cast<uint32_t>(steps.size() + 1));
        step.set_setting(std::string(t.info.name));
        step.set_share(t.share);
        step.set_expected_current(current);
        step.set_value(t.value);
        step.set_rollback_value(current);
        step.set_reason(request.reason().empty() ? "written by hand" : request.reason());
        steps.push_back(std::move(step));
      }
      if (steps.empty()) {
        response.add_skipped(absl::StrCat(name, ": ", skip_why));
        continue;
      }
    } else {
      const v1::HostEvaluation eval = policy::EvaluateHost(*policy_, subject, waivers, now);
      if (eval.non_compliant() == 0) {
        response.add_skipped(absl::StrCat(name, ": compliant with policy ", policy_->name));
        continue;
      }
      v1::RemediationPlan plan = policy::PlanRemediation(*policy_, subject, eval, peers, now);
      for (const auto& s : plan.steps()) {
        if (by_rule && std::find(s.rule_ids().begin(), s.rule_ids().end(), request.rule_id()) ==
                           s.rule_ids().end()) {
          continue;
        }
        steps.push_back(s);
      }
      for (size_t i = 0; i < steps.size(); ++i) steps[i].set_order(static_cast<uint32_t>(i + 1));
      if (steps.empty()) {
        response.add_skipped(absl::StrCat(
            name, ": the plan is empty",
            plan.not_remediable().empty()
                ? ""
                : absl::StrCat(" (needs a person: ", absl::StrJoin(plan.not_remediable(), ", "),
                               ")")));
        continue;
      }
      if (by_rule) {
        host.add_rule_ids(request.rule_id());
      } else {
        *host.mutable_rule_ids() = plan.rule_ids();
        *host.mutable_not_remediable() = plan.not_remediable();
      }
    }
    *host.mutable_impact() = policy::PlanImpact(subject, steps, peers);
    if (calibration.has_value()) {
      ApplyCalibration(*calibration, CalibrationPlatform(record.summary.platform()),
                       host.mutable_impact()->mutable_cost());
    }
    for (auto& s : steps) *host.add_steps() = std::move(s);
    *change.add_hosts() = std::move(host);
  }
  if (change.hosts_size() == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "nothing to change: ",
        response.skipped().empty() ? "no host matches" : absl::StrJoin(response.skipped(), "; ")));
  }

  change.set_id(NewChangeId());
  change.set_state(v1::CHANGE_STATE_PROPOSED);
  change.set_version(1);
  // What approvers sign names the order with this: an agent never applies (id, version, nonce)
  // twice.
  change.set_approval_nonce(NewNonce());
  change.set_source(by_rule       ? v1::CHANGE_SOURCE_RULE
                    : by_settings ? v1::CHANGE_SOURCE_SETTINGS
                                  : v1::CHANGE_SOURCE_HOSTS);
  change.set_rule_id(request.rule_id());
  *change.mutable_label_selector() = request.labels();
  change.set_reason(request.reason().substr(0, 2000));
  change.set_proposed_by(actor.name);
  *change.mutable_proposed_at() = Ts(now);
  *change.mutable_updated_at() = Ts(now);
  *change.mutable_not_after() = Ts(now + options_.lifetime);
  if (policy_ != nullptr) {
    change.set_policy_name(policy_->name);
    change.set_policy_version(policy_->version);
  }
  // The fleet-wide impact: distinct clients over every host.
  v1::ChangeImpactSummary* impact = change.mutable_impact();
  impact->set_hosts(static_cast<uint32_t>(change.hosts_size()));
  std::set<std::pair<std::string, std::string>> clients;
  for (const auto& h : change.hosts()) {
    if (h.impact().clients_size() > 0)
      impact->set_hosts_with_impact(impact->hosts_with_impact() + 1);
    for (const auto& c : h.impact().clients()) {
      if (clients.insert({c.client_name(), c.client_address()}).second) {
        *impact->add_clients() = c;
      }
    }
  }
  impact->set_refused_clients(static_cast<uint32_t>(clients.size()));
  change.set_approvals_required(
      static_cast<uint32_t>(RequiredApprovals(FactsOf(change), options_.approval)));
  change.set_content_hash(ContentHash(change));

  v1::AuditEntry proposed;
  proposed.set_actor(actor.name);
  proposed.set_action("proposed");
  proposed.set_change_id(change.id());
  proposed.set_reason(change.reason());
  proposed.set_content_hash(change.content_hash());
  *proposed.mutable_at() = Ts(now);
  proposed.set_detail(absl::StrCat(change.hosts_size(), " hosts, ", impact->refused_clients(),
                                   " clients refused, ", change.approvals_required(),
                                   " approvals required"));
  RETURN_IF_ERROR(changes_->CreateChange(change, {proposed}));
  *response.mutable_change() = std::move(change);
  return response;
}

}  // namespace smbfleet::collector::changes

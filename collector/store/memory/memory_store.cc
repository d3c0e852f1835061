#include "collector/store/memory/memory_store.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp ToProto(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

void SetFromPosture(const smbfleet::v1::Posture& p, smbfleet::v1::HostSummary* s) {
  s->set_platform(p.host().platform());
  s->set_os_name(p.host().os_name());
  s->set_os_version(p.host().os_version());
  s->set_agent_version(p.host().agent_version());
  *s->mutable_labels() = p.host().labels();
  *s->mutable_reported_labels() = p.host().labels();
  s->set_shares(static_cast<uint32_t>(p.shares_size()));
  s->set_sessions(static_cast<uint32_t>(p.sessions_size()));
  s->set_probe_errors(static_cast<uint32_t>(p.probe_errors_size()));
}

}  // namespace

absl::StatusOr<SaveOutcome> MemoryHostStore::SaveReport(const IncomingReport& report) {
  absl::MutexLock lock(&mu_);
  if (!report_ids_.insert(report.report_id).second) return SaveOutcome::kDuplicate;
  auto [it, created] = hosts_.try_emplace(report.host);
  Host& h = it->second;
  const auto received = ToProto(report.received_at);
  if (created) {
    h.summary.set_name(report.host);
    *h.summary.mutable_first_seen() = received;
  }
  *h.summary.mutable_last_seen() = std::max(h.summary.last_seen(), received);
  h.last_report_id = report.report_id;
  if (!created && h.digest == report.digest) return SaveOutcome::kUnchanged;
  h.digest = report.digest;
  h.posture = *report.posture;
  h.classifications.clear();  // as host_shares is rewritten
  *h.summary.mutable_last_changed() = received;
  SetFromPosture(h.posture, &h.summary);
  ++postures_stored_;
  return SaveOutcome::kStored;
}

absl::StatusOr<std::vector<smbfleet::v1::HostSummary>> MemoryHostStore::ListHosts(
    const HostQuery& query) {
  absl::MutexLock lock(&mu_);
  std::vector<smbfleet::v1::HostSummary> out;
  for (auto it = hosts_.upper_bound(query.after_name);
       it != hosts_.end() && out.size() < query.limit; ++it) {
    if (absl::StartsWith(it->first, query.name_prefix)) out.push_back(it->second.summary);
  }
  return out;
}

absl::StatusOr<std::optional<HostRecord>> MemoryHostStore::GetHost(const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = hosts_.find(name);
  if (it == hosts_.end()) return std::optional<HostRecord>();
  HostRecord record{it->second.summary, it->second.posture, it->second.last_report_id};
  for (auto& share : *record.posture.mutable_shares()) {
    auto c = it->second.classifications.find(share.name());
    if (c == it->second.classifications.end()) continue;
    share.set_classification(c->second.classification());
    share.set_classification_rule(c->second.rule());
  }
  return std::optional<HostRecord>(std::move(record));
}

bool MemoryHostStore::Exists(const std::string& host) const {
  absl::MutexLock lock(&mu_);
  return hosts_.count(host) > 0;
}

void MemoryHostStore::SetClassifications(const std::string& host,
                                         const smbfleet::v1::HostEvaluation& eval) {
  absl::MutexLock lock(&mu_);
  auto it = hosts_.find(host);
  if (it == hosts_.end()) return;
  for (const auto& c : eval.classifications()) it->second.classifications[c.share()] = c;
}

size_t MemoryHostStore::postures_stored() const {
  absl::MutexLock lock(&mu_);
  return postures_stored_;
}

absl::Status MemoryComplianceStore::ActivatePolicy(const std::string& name,
                                                   const std::string& version,
                                                   const std::string& source) {
  absl::MutexLock lock(&mu_);
  active_versions_[name] = version;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<smbfleet::v1::Waiver>> MemoryComplianceStore::ActiveWaivers() {
  WaiverSource source;
  {
    absl::MutexLock lock(&mu_);
    if (!waiver_source_) return waivers_;
    source = waiver_source_;
  }
  return source();
}

void MemoryComplianceStore::SetWaiverSource(WaiverSource source) {
  absl::MutexLock lock(&mu_);
  waiver_source_ = std::move(source);
}

absl::StatusOr<std::string> MemoryComplianceStore::EvaluationKey(const std::string& host) {
  absl::MutexLock lock(&mu_);
  auto it = keys_.find(host);
  return it == keys_.end() ? std::string() : it->second;
}

absl::StatusOr<std::vector<ResultStatus>> MemoryComplianceStore::CurrentResults(
    const std::string& host, const std::string& policy_name) {
  absl::MutexLock lock(&mu_);
  std::vector<ResultStatus> out;
  auto h = results_.find(host);
  if (h == results_.end()) return out;
  auto e = h->second.find(policy_name);
  if (e == h->second.end()) return out;
  for (const auto& r : e->second.results()) {
    out.push_back({r.rule_id(), r.share(), e->second.policy_version(), r.status()});
  }
  return out;
}

absl::Status MemoryComplianceStore::SaveEvaluation(const EvaluationWrite& w) {
  if (!hosts_->Exists(w.host)) {
    return absl::NotFoundError(absl::StrCat("no host named '", w.host, "'"));
  }
  {
    absl::MutexLock lock(&mu_);
    if (!fail_evaluations_.ok()) return fail_evaluations_;
    if (keys_[w.host] != w.expected_key) {
      return absl::AbortedError(
          absl::StrCat("the results of ", w.host, " changed while it was evaluated"));
    }
    auto& t = transitions_[w.host];
    t.insert(t.end(), w.transitions.begin(), w.transitions.end());
    results_[w.host][w.evaluation->policy_name()] = *w.evaluation;
    keys_[w.host] = w.evaluation_key;
    ++evaluations_saved_;
  }
  hosts_->SetClassifications(w.host, *w.evaluation);
  return absl::OkStatus();
}

absl::StatusOr<smbfleet::v1::GetComplianceResponse> MemoryComplianceStore::GetCompliance() {
  absl::MutexLock lock(&mu_);
  smbfleet::v1::GetComplianceResponse out;
  if (!active_versions_.empty()) {
    out.set_policy_name(active_versions_.begin()->first);
    out.set_policy_version(active_versions_.begin()->second);
  }
  std::map<std::pair<std::string, std::string>, smbfleet::v1::RuleCompliance> rules;
  for (const auto& [host, by_policy] : results_) {
    for (const auto& [policy, eval] : by_policy) {
      auto active = active_versions_.find(policy);
      if (active == active_versions_.end() || active->second != eval.policy_version()) continue;
      for (const auto& r : eval.results()) {
        auto& rc = rules[{policy, r.rule_id()}];
        rc.set_policy_name(policy);
        rc.set_rule_id(r.rule_id());
        switch (r.status()) {
          case smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT:
            rc.set_compliant(rc.compliant() + 1);
            break;
          case smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT:
            rc.set_non_compliant(rc.non_compliant() + 1);
            break;
          case smbfleet::v1::COMPLIANCE_STATUS_WAIVED:
            rc.set_waived(rc.waived() + 1);
            break;
          case smbfleet::v1::COMPLIANCE_STATUS_UNKNOWN:
            rc.set_unknown(rc.unknown() + 1);
            break;
          case smbfleet::v1::COMPLIANCE_STATUS_ERROR:
            rc.set_errors(rc.errors() + 1);
            break;
          default:
            rc.set_not_applicable(rc.not_applicable() + 1);
        }
      }
    }
  }
  for (auto& [key, rc] : rules) {
    const uint32_t applicable =
        rc.compliant() + rc.non_compliant() + rc.waived() + rc.unknown() + rc.errors();
    rc.set_compliant_pct(applicable == 0 ? -1
                                         : 100.0 * (rc.compliant() + rc.waived()) / applicable);
    *out.add_rules() = std::move(rc);
  }
  return out;
}

absl::StatusOr<std::vector<smbfleet::v1::Finding>> MemoryComplianceStore::ListFindings(
    const std::string& host, const std::string& rule_id, uint32_t limit) {
  absl::MutexLock lock(&mu_);
  return Findings(host, rule_id, limit, smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
}

absl::StatusOr<std::vector<smbfleet::v1::Finding>> MemoryComplianceStore::ListWaivedFindings(
    const std::string& host, const std::string& rule_id, uint32_t limit) {
  absl::MutexLock lock(&mu_);
  return Findings(host, rule_id, limit, smbfleet::v1::COMPLIANCE_STATUS_WAIVED);
}

std::vector<smbfleet::v1::Finding> MemoryComplianceStore::Findings(
    const std::string& host, const std::string& rule_id, uint32_t limit,
    smbfleet::v1::ComplianceStatus status) {
  std::vector<smbfleet::v1::Finding> out;
  for (const auto& [name, by_policy] : results_) {
    if (!host.empty() && name != host) continue;
    for (const auto& [policy, eval] : by_policy) {
      for (const auto& r : eval.results()) {
        if (r.status() != status) continue;
        if (!rule_id.empty() && r.rule_id() != rule_id) continue;
        if (out.size() == limit) return out;
        smbfleet::v1::Finding f;
        f.set_host(name);
        f.set_rule_id(r.rule_id());
        f.set_share(r.share());
        f.set_classification(r.classification());
        f.set_severity(r.severity());
        f.set_message(r.message());
        *f.mutable_evidence() = r.evidence();
        f.set_policy_version(eval.policy_version());
        f.set_waiver_id(r.waiver_id());
        *f.mutable_failing_since() = eval.evaluated_at();
        for (const auto& t : transitions_[name]) {
          if (t.rule_id() == r.rule_id() && t.share() == r.share() &&
              t.to_status() == smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT) {
            *f.mutable_failing_since() = t.at();
          }
        }
        out.push_back(std::move(f));
      }
    }
  }
  return out;
}

void MemoryComplianceStore::SetActiveWaivers(std::vector<smbfleet::v1::Waiver> waivers) {
  absl::MutexLock lock(&mu_);
  waivers_ = std::move(waivers);
}

void MemoryComplianceStore::FailEvaluations(absl::Status status) {
  absl::MutexLock lock(&mu_);
  fail_evaluations_ = std::move(status);
}

size_t MemoryComplianceStore::evaluations_saved() const {
  absl::MutexLock lock(&mu_);
  return evaluations_saved_;
}

std::vector<smbfleet::v1::StatusTransition> MemoryComplianceStore::transitions(
    const std::string& host) const {
  absl::MutexLock lock(&mu_);
  auto it = transitions_.find(host);
  return it == transitions_.end() ? std::vector<smbfleet::v1::StatusTransition>() : it->second;
}

}  // namespace smbfleet::collector

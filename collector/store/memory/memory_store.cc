#include "collector/store/memory/memory_store.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
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

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

bool ContainsIgnoreCase(const std::string& text, const std::string& part) {
  return absl::StrContains(absl::AsciiStrToLower(text), absl::AsciiStrToLower(part));
}

bool Legacy(smbfleet::v1::Dialect d) {
  return d == smbfleet::v1::DIALECT_SMB1 || d == smbfleet::v1::DIALECT_SMB_2_0_2 ||
         d == smbfleet::v1::DIALECT_SMB_2_1;
}

void Count(smbfleet::v1::ComplianceStatus status, smbfleet::v1::ComplianceSlice* slice) {
  switch (status) {
    case smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT:
      slice->set_compliant(slice->compliant() + 1);
      break;
    case smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT:
      slice->set_non_compliant(slice->non_compliant() + 1);
      break;
    case smbfleet::v1::COMPLIANCE_STATUS_WAIVED:
      slice->set_waived(slice->waived() + 1);
      break;
    case smbfleet::v1::COMPLIANCE_STATUS_UNKNOWN:
      slice->set_unknown(slice->unknown() + 1);
      break;
    case smbfleet::v1::COMPLIANCE_STATUS_ERROR:
      slice->set_errors(slice->errors() + 1);
      break;
    default:
      break;
  }
}

double Pct(uint32_t good, uint32_t applicable) {
  return applicable == 0 ? -1 : 100.0 * good / applicable;
}

void SetPct(smbfleet::v1::ComplianceSlice* s) {
  s->set_compliant_pct(
      Pct(s->compliant() + s->waived(),
          s->compliant() + s->non_compliant() + s->waived() + s->unknown() + s->errors()));
}

}  // namespace

absl::StatusOr<SavedReport> MemoryHostStore::StoreReport(const IncomingReport& report) {
  absl::MutexLock lock(&mu_);
  auto [it, created] = hosts_.try_emplace(report.host);
  Host& h = it->second;
  const bool changed = created || h.digest != report.digest;
  SavedReport saved;
  if (report.posture == nullptr && changed) {
    if (created) hosts_.erase(it);
    saved.unknown_digest = true;
    return saved;
  }
  saved.current = !changed;
  if (!report_ids_.emplace(report.host, report.report_id).second) {
    saved.outcome = SaveOutcome::kDuplicate;
    return saved;
  }
  const auto received = ToProto(report.received_at);
  if (created) {
    h.summary.set_name(report.host);
    *h.summary.mutable_first_seen() = received;
  }
  *h.summary.mutable_last_seen() = std::max(h.summary.last_seen(), received);
  saved.outcome = changed ? SaveOutcome::kStored : SaveOutcome::kUnchanged;
  std::optional<absl::Time> collected;
  const google::protobuf::Timestamp& collected_at =
      report.posture != nullptr ? report.posture->collected_at() : report.collected_at;
  if (collected_at.seconds() != 0 || collected_at.nanos() != 0) collected = FromProto(collected_at);
  if (collected.has_value() && h.last_collected_at.has_value() &&
      *collected < *h.last_collected_at) {
    if (changed) ++postures_stored_;  // history only
    return saved;
  }
  saved.current = true;
  if (collected.has_value()) h.last_collected_at = collected;
  h.last_report_id = report.report_id;
  if (!changed) return saved;
  h.digest = report.digest;
  h.posture = *report.posture;
  h.classifications.clear();  // as host_shares is rewritten
  *h.summary.mutable_last_changed() = received;
  SetFromPosture(h.posture, &h.summary);
  ++postures_stored_;
  return saved;
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
  HostRecord record{it->second.summary, it->second.posture, it->second.last_report_id,
                    it->second.digest};
  for (auto& share : *record.posture.mutable_shares()) {
    auto c = it->second.classifications.find(share.name());
    if (c == it->second.classifications.end()) continue;
    share.set_classification(c->second.classification());
    share.set_classification_rule(c->second.rule());
  }
  return std::optional<HostRecord>(std::move(record));
}

absl::StatusOr<HostPage> MemoryHostStore::FindHosts(const HostQuery& q) {
  std::vector<smbfleet::v1::HostSummary> candidates;
  EnrollmentStore* enrollment = nullptr;
  FailingFn failing;
  {
    absl::MutexLock lock(&mu_);
    enrollment = enrollment_;
    failing = failing_;
    for (const auto& [name, h] : hosts_) {
      const auto& s = h.summary;
      if (!absl::StartsWith(name, q.name_prefix)) continue;
      if (!q.query.empty() && !ContainsIgnoreCase(name, q.query)) continue;
      if (!q.os.empty() && !ContainsIgnoreCase(s.os_name(), q.os) &&
          !ContainsIgnoreCase(s.os_version(), q.os)) {
        continue;
      }
      if (q.platform != smbfleet::v1::PLATFORM_UNSPECIFIED && s.platform() != q.platform) continue;
      if (q.seen_before.has_value() && !(FromProto(s.last_seen()) < *q.seen_before)) continue;
      candidates.push_back(s);
    }
  }
  // Trusted labels and results live in other stores: asked outside this store's lock.
  HostPage page;
  for (auto& s : candidates) {
    if (!q.labels.empty()) {
      if (enrollment == nullptr) continue;
      ASSIGN_OR_RETURN(HostLabels labels, enrollment->GetHostLabels(s.name()));
      bool all = true;
      for (const auto& [k, v] : q.labels) {
        auto it = labels.find(k);
        all = all && it != labels.end() && it->second == v;
      }
      if (!all) continue;
    }
    if (!q.failing_rule.empty() && (!failing || !failing(s.name(), q.failing_rule))) continue;
    ++page.total;
    if (s.name() > q.after_name && page.hosts.size() < q.limit) page.hosts.push_back(std::move(s));
  }
  return page;
}

void MemoryHostStore::SetTrustedLabels(EnrollmentStore* enrollment) {
  absl::MutexLock lock(&mu_);
  enrollment_ = enrollment;
}

absl::StatusOr<HostLabels> MemoryHostStore::TrustedLabels(const std::string& host) const {
  EnrollmentStore* enrollment = nullptr;
  {
    absl::MutexLock lock(&mu_);
    enrollment = enrollment_;
  }
  if (enrollment == nullptr) return HostLabels();
  return enrollment->GetHostLabels(host);
}

void MemoryHostStore::SetFailing(FailingFn failing) {
  absl::MutexLock lock(&mu_);
  failing_ = std::move(failing);
}

std::vector<HostRecord> MemoryHostStore::Snapshot() const {
  std::vector<std::string> names;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, h] : hosts_) names.push_back(name);
  }
  std::vector<HostRecord> out;
  for (const auto& name : names) {
    auto record = const_cast<MemoryHostStore*>(this)->GetHost(name);
    if (record.ok() && record->has_value()) out.push_back(std::move(**record));
  }
  return out;
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

MemoryComplianceStore::MemoryComplianceStore(MemoryHostStore* hosts) : hosts_(hosts) {
  hosts_->SetFailing(
      [this](const std::string& host, const std::string& rule) { return Failing(host, rule); });
}

MemoryComplianceStore::~MemoryComplianceStore() { hosts_->SetFailing(nullptr); }

bool MemoryComplianceStore::Failing(const std::string& host, const std::string& rule) const {
  absl::MutexLock lock(&mu_);
  auto results = ActiveResults();
  auto it = results.find(host);
  if (it == results.end()) return false;
  for (const auto* r : it->second) {
    if (r->status() == smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT &&
        (rule == "*" || r->rule_id() == rule)) {
      return true;
    }
  }
  return false;
}

std::map<std::string, std::vector<const smbfleet::v1::RuleResult*>>
MemoryComplianceStore::ActiveResults() const {
  std::map<std::string, std::vector<const smbfleet::v1::RuleResult*>> out;
  for (const auto& [host, by_policy] : results_) {
    for (const auto& [policy, eval] : by_policy) {
      auto active = active_versions_.find(policy);
      if (active == active_versions_.end() || active->second != eval.policy_version()) continue;
      for (const auto& r : eval.results()) out[host].push_back(&r);
    }
  }
  return out;
}

absl::StatusOr<smbfleet::v1::GetFleetOverviewResponse> MemoryComplianceStore::GetFleetOverview(
    const OverviewQuery& q) {
  namespace v1 = smbfleet::v1;
  ASSIGN_OR_RETURN(v1::GetComplianceResponse compliance, GetCompliance());
  const std::vector<HostRecord> hosts = hosts_->Snapshot();
  std::map<std::string, HostLabels> labels;
  for (const auto& h : hosts) {
    ASSIGN_OR_RETURN(labels[h.summary.name()], hosts_->TrustedLabels(h.summary.name()));
  }
  v1::GetFleetOverviewResponse out;
  out.set_policy_name(compliance.policy_name());
  out.set_policy_version(compliance.policy_version());
  out.set_hosts(static_cast<uint32_t>(hosts.size()));
  *out.mutable_by_rule() = compliance.rules();

  std::map<std::string, v1::ComplianceSlice> by_class;
  std::map<std::string, v1::ComplianceSlice> by_label;
  // (since, name) -> failing rules
  std::vector<std::tuple<absl::Time, std::string, uint32_t>> failing;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [host, results] : ActiveResults()) {
      absl::Time since = absl::InfiniteFuture();
      std::set<std::string> rules;
      for (const auto* r : results) {
        if (!r->share().empty()) Count(r->status(), &by_class[r->classification()]);
        for (const auto& [k, v] : labels[host])
          Count(r->status(), &by_label[absl::StrCat(k, "=", v)]);
        if (r->status() != v1::COMPLIANCE_STATUS_NON_COMPLIANT) continue;
        rules.insert(r->rule_id());
        absl::Time failing_since = absl::InfinitePast();
        for (const auto& t : transitions_[host]) {
          if (t.rule_id() == r->rule_id() && t.share() == r->share() &&
              t.to_status() == v1::COMPLIANCE_STATUS_NON_COMPLIANT) {
            failing_since = std::max(failing_since, FromProto(t.at()));
          }
        }
        if (failing_since == absl::InfinitePast()) {
          for (const auto& [policy, eval] : results_[host]) {
            if (policy == compliance.policy_name()) failing_since = FromProto(eval.evaluated_at());
          }
        }
        since = std::min(since, failing_since);
      }
      if (!rules.empty()) {
        failing.emplace_back(since, host, static_cast<uint32_t>(rules.size()));
      }
    }

    // The trend: each day's last status of every (host, rule, share) key.
    const absl::Time today = absl::FromUnixSeconds(absl::ToUnixSeconds(q.now) / 86400 * 86400);
    for (int64_t i = static_cast<int64_t>(q.trend_days) - 1; i >= 0; --i) {
      const absl::Time day = today - absl::Hours(24 * i);
      const absl::Time end = day + absl::Hours(24);
      v1::ComplianceSlice counts;
      for (const auto& [host, transitions] : transitions_) {
        std::map<std::pair<std::string, std::string>, v1::ComplianceStatus> last;
        for (const auto& t : transitions) {
          if (FromProto(t.at()) < end) last[{t.rule_id(), t.share()}] = t.to_status();
        }
        for (const auto& [key, status] : last) Count(status, &counts);
      }
      SetPct(&counts);
      auto* point = out.add_trend();
      point->set_day(absl::FormatTime("%Y-%m-%d", day, absl::UTCTimeZone()));
      point->set_compliant_pct(counts.compliant_pct());
      point->set_compliant(counts.compliant());
      point->set_non_compliant(counts.non_compliant());
    }
  }
  for (auto& [key, slice] : by_class) {
    slice.set_key(key);
    SetPct(&slice);
    *out.add_by_classification() = slice;
  }
  for (auto& [key, slice] : by_label) {
    slice.set_key(key);
    SetPct(&slice);
    *out.add_by_label() = slice;
  }
  std::sort(failing.begin(), failing.end());
  for (size_t i = 0; i < failing.size() && i < q.top; ++i) {
    auto* h = out.add_failing_longest();
    h->set_name(std::get<1>(failing[i]));
    *h->mutable_since() = ToProto(std::get<0>(failing[i]));
    h->set_count(std::get<2>(failing[i]));
  }

  std::vector<std::pair<absl::Time, std::string>> stale;
  std::map<std::string, v1::EncryptionCoverage> encryption;
  v1::SessionExposure* sessions = out.mutable_sessions();
  std::vector<std::pair<uint32_t, std::string>> exposed;  // (-count, name) order below
  for (const auto& h : hosts) {
    const absl::Time seen = FromProto(h.summary.last_seen());
    if (seen < q.stale_before) stale.emplace_back(seen, h.summary.name());
    const bool server_encrypts =
        h.posture.server().has_encrypt_data() && h.posture.server().encrypt_data();
    for (const auto& share : h.posture.shares()) {
      if (share.classification().empty()) continue;
      auto& c = encryption[share.classification()];
      c.set_shares(c.shares() + 1);
      if (server_encrypts || (share.has_encrypt_data() && share.encrypt_data())) {
        c.set_encrypted(c.encrypted() + 1);
      }
    }
    uint32_t host_exposed = 0;
    for (const auto& s : h.posture.sessions()) {
      sessions->set_sessions(sessions->sessions() + 1);
      const bool unsigned_session = s.signing() == v1::PROTECTION_NONE;
      if (unsigned_session) sessions->set_unsigned_sessions(sessions->unsigned_sessions() + 1);
      if (s.encryption() == v1::PROTECTION_NONE) {
        sessions->set_unencrypted_sessions(sessions->unencrypted_sessions() + 1);
      }
      if (Legacy(s.dialect())) {
        sessions->set_legacy_dialect_sessions(sessions->legacy_dialect_sessions() + 1);
      }
      (*sessions->mutable_by_dialect())[v1::Dialect_Name(s.dialect())] += 1;
      if (unsigned_session || Legacy(s.dialect())) ++host_exposed;
    }
    if (host_exposed > 0) exposed.emplace_back(host_exposed, h.summary.name());
  }
  out.set_stale_count(static_cast<uint32_t>(stale.size()));
  std::sort(stale.begin(), stale.end());
  for (size_t i = 0; i < stale.size() && i < q.top; ++i) {
    auto* h = out.add_stale();
    h->set_name(stale[i].second);
    *h->mutable_since() = ToProto(stale[i].first);
  }
  for (auto& [classification, c] : encryption) {
    c.set_classification(classification);
    c.set_encrypted_pct(c.shares() == 0 ? -1 : 100.0 * c.encrypted() / c.shares());
    *out.add_encryption() = c;
  }
  std::sort(exposed.begin(), exposed.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t i = 0; i < exposed.size() && i < q.top; ++i) {
    auto* h = sessions->add_top_hosts();
    h->set_name(exposed[i].second);
    h->set_count(exposed[i].first);
  }
  return out;
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

absl::StatusOr<std::vector<EvaluationState>> MemoryComplianceStore::EvaluationStates(
    const std::string& after_host, uint32_t limit) {
  std::vector<HostRecord> hosts = hosts_->Snapshot();  // by name
  absl::MutexLock lock(&mu_);
  std::vector<EvaluationState> out;
  for (const HostRecord& h : hosts) {
    if (out.size() >= limit) break;
    if (h.summary.name() <= after_host || h.posture_digest.empty()) continue;
    auto key = keys_.find(h.summary.name());
    out.push_back(
        {h.summary.name(), h.posture_digest, key == keys_.end() ? std::string() : key->second});
  }
  return out;
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
    RETURN_IF_ERROR(SaveLocked(w));
  }
  hosts_->SetClassifications(w.host, *w.evaluation);
  return absl::OkStatus();
}

absl::Status MemoryComplianceStore::SaveLocked(const EvaluationWrite& w) {
  if (keys_[w.host] != w.expected_key) {
    return absl::AbortedError(
        absl::StrCat("the results of ", w.host, " changed while it was evaluated"));
  }
  auto& t = transitions_[w.host];
  t.insert(t.end(), w.transitions.begin(), w.transitions.end());
  results_[w.host][w.evaluation->policy_name()] = *w.evaluation;
  keys_[w.host] = w.evaluation_key;
  ++evaluations_saved_;
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, StoredEvaluation>> MemoryComplianceStore::StoredEvaluations(
    const std::vector<std::string>& hosts, const std::string& policy_name) {
  std::vector<bool> exists;
  exists.reserve(hosts.size());
  for (const std::string& host : hosts) exists.push_back(hosts_->Exists(host));
  absl::MutexLock lock(&mu_);
  std::map<std::string, StoredEvaluation> out;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!exists[i]) continue;
    StoredEvaluation& e = out[hosts[i]];
    auto key = keys_.find(hosts[i]);
    if (key != keys_.end()) e.evaluation_key = key->second;
    auto h = results_.find(hosts[i]);
    if (h == results_.end()) continue;
    auto eval = h->second.find(policy_name);
    if (eval == h->second.end()) continue;
    for (const auto& r : eval->second.results()) {
      e.results.push_back({r.rule_id(), r.share(), eval->second.policy_version(), r.status()});
    }
  }
  return out;
}

absl::StatusOr<std::vector<absl::Status>> MemoryComplianceStore::SaveEvaluations(
    const std::vector<EvaluationWrite>& writes) {
  std::set<std::string> distinct;
  std::vector<bool> exists;
  exists.reserve(writes.size());
  for (const EvaluationWrite& w : writes) {
    if (!distinct.insert(w.host).second) {
      return absl::InvalidArgumentError("SaveEvaluations: a host is written twice");
    }
    exists.push_back(hosts_->Exists(w.host));
  }
  std::vector<absl::Status> out(writes.size());
  {
    absl::MutexLock lock(&mu_);
    if (!fail_evaluations_.ok()) return fail_evaluations_;
    for (size_t i = 0; i < writes.size(); ++i) {
      out[i] = exists[i]
                   ? SaveLocked(writes[i])
                   : absl::NotFoundError(absl::StrCat("no host named '", writes[i].host, "'"));
    }
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    if (out[i].ok()) hosts_->SetClassifications(writes[i].host, *writes[i].evaluation);
  }
  return out;
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

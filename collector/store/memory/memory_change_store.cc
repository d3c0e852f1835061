#include "collector/store/memory/memory_change_store.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp ToProto(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

bool IsAckResult(v1::HostChangeState s) {
  return s == v1::HOST_CHANGE_STATE_APPLIED || s == v1::HOST_CHANGE_STATE_FAILED ||
         s == v1::HOST_CHANGE_STATE_PRECONDITION_FAILED || s == v1::HOST_CHANGE_STATE_REFUSED ||
         s == v1::HOST_CHANGE_STATE_ROLLED_BACK;
}

bool IsLive(v1::ChangeState s) {
  return s == v1::CHANGE_STATE_APPROVED || s == v1::CHANGE_STATE_ROLLING_OUT ||
         s == v1::CHANGE_STATE_HALTED;
}

const v1::ChangeHost* FindHost(const v1::Change& change, const std::string& host) {
  for (const auto& h : change.hosts()) {
    if (h.host() == host) return &h;
  }
  return nullptr;
}

bool HasCounters(const v1::ChangeHost& h) {
  return h.has_counters_before() || h.has_counters_after() || h.has_measured();
}

// Only the counter fields of `h`.
v1::ChangeHost CountersOf(const v1::ChangeHost& h) {
  v1::ChangeHost out;
  if (h.has_counters_before()) *out.mutable_counters_before() = h.counters_before();
  if (h.has_counters_after()) *out.mutable_counters_after() = h.counters_after();
  if (h.has_measured()) *out.mutable_measured() = h.measured();
  return out;
}

void ClearCounters(v1::ChangeHost* h) {
  h->clear_counters_before();
  h->clear_counters_after();
  h->clear_measured();
}

}  // namespace

MemoryChangeStore::MemoryChangeStore(MemoryComplianceStore* compliance) : compliance_(compliance) {
  if (compliance_ != nullptr) {
    compliance_->SetWaiverSource([this] { return ListWaivers(false, absl::Now()); });
  }
}

MemoryChangeStore::~MemoryChangeStore() {
  if (compliance_ != nullptr) compliance_->SetWaiverSource(nullptr);
}

std::shared_ptr<absl::Mutex> MemoryChangeStore::StepLock(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto& m = step_locks_[id];
  if (!m) m = std::make_shared<absl::Mutex>();
  return m;
}

absl::Status MemoryChangeStore::CheckNewChangeLocked(const v1::Change& change) const {
  if (change.id().empty()) return absl::InvalidArgumentError("change: id is empty");
  if (changes_.count(change.id()) > 0) {
    return absl::AlreadyExistsError(absl::StrCat("change ", change.id(), " already exists"));
  }
  for (const auto& a : change.approvals()) {
    if (a.approver() == change.proposed_by()) {
      return absl::FailedPreconditionError(absl::StrCat("change ", change.id(), ": ", a.approver(),
                                                        " cannot approve their own change"));
    }
  }
  return absl::OkStatus();
}

void MemoryChangeStore::InsertLocked(const v1::Change& change) {
  Stored& stored = changes_[change.id()] = Stored{next_change_seq_++, change, {}};
  for (auto& h : *stored.change.mutable_hosts()) {
    if (HasCounters(h)) stored.counters[h.host()] = CountersOf(h);
    ClearCounters(&h);
  }
  UpdateHostStatusesLocked(nullptr, change);
}

void MemoryChangeStore::AppendAuditLocked(std::vector<v1::AuditEntry> entries) {
  for (auto& e : entries) {
    e.set_seq(static_cast<int64_t>(audit_.size()) + 1);
    if (!e.has_at()) *e.mutable_at() = ToProto(absl::Now());
    audit_.push_back(std::move(e));
  }
}

void MemoryChangeStore::UpdateHostStatusesLocked(const v1::Change* before,
                                                 const v1::Change& after) {
  for (const auto& h : after.hosts()) {
    const v1::ChangeHost* old = before == nullptr ? nullptr : FindHost(*before, h.host());
    const bool state_changed = old == nullptr || old->state() != h.state();
    if (h.state() == v1::HOST_CHANGE_STATE_DISPATCHED &&
        (state_changed || old->nonce() != h.nonce())) {
      auto& s = host_statuses_[h.host()];
      s.set_desired_change_id(after.id());
      s.set_desired_version(after.version());
      continue;
    }
    if (!state_changed) continue;
    if (IsAckResult(h.state()) || h.state() == v1::HOST_CHANGE_STATE_TIMED_OUT) {
      auto& s = host_statuses_[h.host()];
      s.set_last_result(h.state());
      s.set_last_error(h.state() == v1::HOST_CHANGE_STATE_APPLIED ? "" : h.message());
      if (IsAckResult(h.state())) *s.mutable_last_ack_at() = h.finished_at();
      if (h.state() == v1::HOST_CHANGE_STATE_APPLIED) {
        s.set_applied_change_id(after.id());
        s.set_applied_version(after.version());
      }
    }
  }
}

absl::Status MemoryChangeStore::CreateChange(const v1::Change& change,
                                             const std::vector<v1::AuditEntry>& audit) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckNewChangeLocked(change));
  InsertLocked(change);
  AppendAuditLocked(audit);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::Change>> MemoryChangeStore::GetChange(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = changes_.find(id);
  if (it == changes_.end()) return std::optional<v1::Change>();
  v1::Change change = it->second.change;
  for (auto& h : *change.mutable_hosts()) {
    auto c = it->second.counters.find(h.host());
    if (c != it->second.counters.end()) h.MergeFrom(c->second);
  }
  return std::optional<v1::Change>(std::move(change));
}

absl::StatusOr<std::vector<v1::Change>> MemoryChangeStore::ListChanges(const ChangeQuery& query) {
  absl::MutexLock lock(&mu_);
  std::vector<const Stored*> matching;
  for (const auto& [id, s] : changes_) {
    if (query.state == v1::CHANGE_STATE_UNSPECIFIED || s.change.state() == query.state) {
      matching.push_back(&s);
    }
  }
  std::sort(matching.begin(), matching.end(),
            [](const Stored* a, const Stored* b) { return a->created_seq > b->created_seq; });
  std::vector<v1::Change> out;
  for (const Stored* s : matching) {
    if (out.size() >= query.limit) break;
    out.push_back(s->change);
    out.back().clear_hosts();
  }
  return out;
}

absl::StatusOr<v1::Change> MemoryChangeStore::UpdateChange(const std::string& id,
                                                           const StepFn& step) {
  std::shared_ptr<absl::Mutex> step_lock = StepLock(id);
  absl::MutexLock in_order(step_lock.get());
  v1::Change current;
  {
    absl::MutexLock lock(&mu_);
    auto it = changes_.find(id);
    if (it == changes_.end()) return absl::NotFoundError(absl::StrCat("no change ", id));
    current = it->second.change;
  }
  // The step runs without mu_: it may take its time (and read other changes) while only this
  // change is held.
  ASSIGN_OR_RETURN(ChangeUpdate update, step(current));
  if (update.change.id() != id) {
    return absl::InvalidArgumentError(
        absl::StrCat("change ", id, ": the step returned change '", update.change.id(), "'"));
  }
  for (const auto& a : update.change.approvals()) {
    if (a.approver() == update.change.proposed_by()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "change ", id, ": ", a.approver(), " cannot approve their own change (four-eyes)"));
    }
  }
  absl::MutexLock lock(&mu_);
  if (update.created.has_value()) RETURN_IF_ERROR(CheckNewChangeLocked(*update.created));
  auto it = changes_.find(id);
  UpdateHostStatusesLocked(&current, update.change);
  it->second.change = update.change;
  std::map<std::string, v1::ChangeHost> kept;
  for (auto& h : *it->second.change.mutable_hosts()) {
    ClearCounters(&h);
    auto c = it->second.counters.find(h.host());
    if (c != it->second.counters.end()) kept.insert(*c);
  }
  it->second.counters = std::move(kept);  // a host the step dropped goes with its counters
  if (update.created.has_value()) InsertLocked(*update.created);
  AppendAuditLocked(std::move(update.audit));
  return update.change;
}

absl::Status MemoryChangeStore::UpdateChangeHosts(const std::string& id,
                                                  const std::vector<std::string>& hosts,
                                                  const HostsStepFn& step) {
  std::shared_ptr<absl::Mutex> step_lock = StepLock(id);
  absl::MutexLock in_order(step_lock.get());
  v1::Change change;
  std::vector<v1::ChangeHost> mine;
  OtherHosts others;
  {
    absl::MutexLock lock(&mu_);
    auto it = changes_.find(id);
    if (it == changes_.end()) return absl::NotFoundError(absl::StrCat("no change ", id));
    const v1::Change& stored = it->second.change;
    std::map<std::string, const v1::ChangeHost*> named;
    for (const std::string& host : hosts) named.emplace(host, nullptr);
    for (const auto& h : stored.hosts()) {
      auto n = named.find(h.host());
      if (n != named.end()) {
        n->second = &h;
        continue;
      }
      const bool in_wave = h.wave() == stored.current_wave();
      if (h.state() == v1::HOST_CHANGE_STATE_PENDING && in_wave) others.wave_pending = true;
      if (h.state() == v1::HOST_CHANGE_STATE_DISPATCHED) {
        if (in_wave) others.wave_dispatched = true;
        others.earliest_dispatched =
            std::min(others.earliest_dispatched,
                     h.has_dispatched_at() ? FromProto(h.dispatched_at()) : absl::InfinitePast());
      }
      if (h.state() == v1::HOST_CHANGE_STATE_PRECONDITION_FAILED) ++others.precondition_failed;
    }
    for (const std::string& host : hosts) {
      auto n = named.find(host);
      if (n == named.end() || n->second == nullptr) continue;
      mine.push_back(*n->second);
      named.erase(n);  // each once
    }
    change = stored;
    change.clear_hosts();
    change.clear_approvals();
  }
  ASSIGN_OR_RETURN(std::optional<HostsUpdate> update, step(change, mine, others));
  if (!update.has_value()) return absl::OkStatus();
  if (update->change.id() != id) {
    return absl::InvalidArgumentError(
        absl::StrCat("change ", id, ": the step returned change '", update->change.id(), "'"));
  }
  v1::Change before, after;
  for (const v1::ChangeHost& h : update->hosts) {
    auto given = std::find_if(mine.begin(), mine.end(),
                              [&](const v1::ChangeHost& m) { return m.host() == h.host(); });
    if (given == mine.end()) {
      return absl::InvalidArgumentError(absl::StrCat("change ", id, ": the step returned host '",
                                                     h.host(), "', which it was not given"));
    }
    *before.add_hosts() = *given;
    *after.add_hosts() = h;
    ClearCounters(after.mutable_hosts(after.hosts_size() - 1));
  }
  absl::MutexLock lock(&mu_);
  auto it = changes_.find(id);
  v1::Change& stored = it->second.change;
  // The change's own fields from the step; its hosts and approvals as stored.
  v1::Change row = std::move(update->change);
  *row.mutable_hosts() = std::move(*stored.mutable_hosts());
  *row.mutable_approvals() = std::move(*stored.mutable_approvals());
  stored = std::move(row);
  after.set_id(stored.id());
  after.set_version(stored.version());
  UpdateHostStatusesLocked(&before, after);
  std::map<std::string, const v1::ChangeHost*> written;
  for (const v1::ChangeHost& h : after.hosts()) written[h.host()] = &h;
  for (auto& h : *stored.mutable_hosts()) {
    auto w = written.find(h.host());
    if (w != written.end()) h = *w->second;
  }
  AppendAuditLocked(std::move(update->audit));
  return absl::OkStatus();
}

absl::Status MemoryChangeStore::UpdateHostCounters(const std::string& change_id,
                                                   const std::string& host,
                                                   const CountersStepFn& step) {
  std::shared_ptr<absl::Mutex> step_lock = StepLock(change_id);
  absl::MutexLock in_order(step_lock.get());
  v1::Change change;
  v1::ChangeHost current;
  {
    absl::MutexLock lock(&mu_);
    auto it = changes_.find(change_id);
    if (it == changes_.end()) return absl::NotFoundError(absl::StrCat("no change ", change_id));
    const v1::ChangeHost* h = FindHost(it->second.change, host);
    if (h == nullptr) {
      return absl::NotFoundError(absl::StrCat("change ", change_id, " has no host ", host));
    }
    current = *h;
    auto c = it->second.counters.find(host);
    if (c != it->second.counters.end()) current.MergeFrom(c->second);
    change = it->second.change;
    change.clear_hosts();
  }
  ASSIGN_OR_RETURN(HostCounters counters, step(change, current));
  absl::MutexLock lock(&mu_);
  auto it = changes_.find(change_id);
  if (it == changes_.end() || FindHost(it->second.change, host) == nullptr) {
    return absl::NotFoundError(absl::StrCat("change ", change_id, " has no host ", host));
  }
  v1::ChangeHost& stored = it->second.counters[host];
  if (counters.before.has_value()) *stored.mutable_counters_before() = std::move(*counters.before);
  if (counters.after.has_value()) *stored.mutable_counters_after() = std::move(*counters.after);
  if (counters.measured.has_value()) *stored.mutable_measured() = std::move(*counters.measured);
  return absl::OkStatus();
}

absl::StatusOr<MeasuredChangeHosts> MemoryChangeStore::ListMeasuredChangeHosts(absl::Time since,
                                                                               uint32_t limit) {
  std::vector<MeasuredChangeHost> found;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, s] : changes_) {
      for (const auto& [name, counters] : s.counters) {
        if (!counters.has_measured()) continue;
        const v1::ChangeHost* h = FindHost(s.change, name);
        if (h == nullptr || !h->has_finished_at() || FromProto(h->finished_at()) < since) continue;
        MeasuredChangeHost m;
        m.change_id = id;
        m.host = *h;
        *m.host.mutable_measured() = counters.measured();
        found.push_back(std::move(m));
      }
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    const absl::Time at = FromProto(a.host.finished_at()), bt = FromProto(b.host.finished_at());
    if (at != bt) return at > bt;
    return std::tie(a.change_id, a.host.host()) < std::tie(b.change_id, b.host.host());
  });
  MeasuredChangeHosts out;
  out.truncated = found.size() > limit;
  if (out.truncated) found.resize(limit);
  // The host store is asked without this store's lock held, as the SQL join reads another table.
  MemoryHostStore* hosts = compliance_ == nullptr ? nullptr : compliance_->host_store();
  for (auto& m : found) {
    if (hosts != nullptr) {
      auto record = hosts->GetHost(m.host.host());
      if (!record.ok()) return record.status();
      if (record->has_value()) m.platform = (*record)->summary.platform();
    }
    out.hosts.push_back(std::move(m));
  }
  return out;
}

absl::StatusOr<int64_t> MemoryChangeStore::SaveCostModelCalibration(
    const v1::CostModelCalibration& calibration, v1::AuditEntry audit) {
  if (calibration.saved_by().empty()) {
    return absl::InvalidArgumentError("calibration: saved_by is empty");
  }
  if (!calibration.has_since()) return absl::InvalidArgumentError("calibration: since is unset");
  absl::MutexLock lock(&mu_);
  const int64_t id = static_cast<int64_t>(calibrations_.size()) + 1;
  v1::CostModelCalibration& saved = calibrations_.emplace_back(calibration);
  saved.set_id(id);
  if (!saved.has_saved_at()) *saved.mutable_saved_at() = ToProto(absl::Now());
  audit.set_detail(absl::StrCat(audit.detail(), " (calibration ", id, ")"));
  AppendAuditLocked({std::move(audit)});
  return id;
}

absl::StatusOr<std::vector<v1::CostModelCalibration>> MemoryChangeStore::ListCostModelCalibrations(
    uint32_t limit) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::CostModelCalibration> out;
  for (auto it = calibrations_.rbegin(); it != calibrations_.rend() && out.size() < limit; ++it) {
    v1::CostModelCalibration& c = out.emplace_back(*it);
    c.clear_inputs();
  }
  return out;
}

absl::StatusOr<std::vector<v1::Change>> MemoryChangeStore::PendingForHost(const std::string& host,
                                                                          absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<const Stored*> matching;
  for (const auto& [id, s] : changes_) {
    const v1::ChangeHost* h = FindHost(s.change, host);
    if (h == nullptr || h->state() != v1::HOST_CHANGE_STATE_DISPATCHED) continue;
    if (FromProto(h->order_not_after()) <= now) continue;
    matching.push_back(&s);
  }
  std::sort(matching.begin(), matching.end(),
            [](const Stored* a, const Stored* b) { return a->created_seq < b->created_seq; });
  std::vector<v1::Change> out;
  for (const Stored* s : matching) {
    v1::Change c = s->change;
    c.clear_hosts();
    *c.add_hosts() = *FindHost(s->change, host);
    out.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::vector<v1::Change>>> MemoryChangeStore::PendingForHosts(
    const std::vector<std::string>& hosts, absl::Time now) {
  const std::set<std::string> wanted(hosts.begin(), hosts.end());
  absl::MutexLock lock(&mu_);
  std::vector<const Stored*> by_age;
  for (const auto& [id, s] : changes_) by_age.push_back(&s);
  std::sort(by_age.begin(), by_age.end(),
            [](const Stored* a, const Stored* b) { return a->created_seq < b->created_seq; });
  std::map<std::string, std::vector<v1::Change>> out;
  for (const Stored* s : by_age) {
    std::optional<v1::Change> bare;  // the change without its hosts, copied once
    for (const v1::ChangeHost& h : s->change.hosts()) {
      if (h.state() != v1::HOST_CHANGE_STATE_DISPATCHED || wanted.count(h.host()) == 0) continue;
      if (FromProto(h.order_not_after()) <= now) continue;
      if (!bare.has_value()) {
        bare = s->change;
        bare->clear_hosts();
      }
      v1::Change& c = out[h.host()].emplace_back(*bare);
      *c.add_hosts() = h;
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> MemoryChangeStore::LiveChangeIds() {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [id, s] : changes_) {
    if (IsLive(s.change.state())) out.push_back(id);
  }
  return out;
}

absl::StatusOr<std::map<std::string, v1::HostChangeStatus>> MemoryChangeStore::HostStatuses(
    const std::vector<std::string>& hosts) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, v1::HostChangeStatus> out;
  for (const auto& h : hosts) {
    auto it = host_statuses_.find(h);
    if (it != host_statuses_.end()) out[h] = it->second;
  }
  return out;
}

absl::StatusOr<ChangeStore::Drift> MemoryChangeStore::DriftedHosts(uint32_t limit) {
  absl::MutexLock lock(&mu_);
  Drift out;
  for (const auto& [host, s] : host_statuses_) {  // by name
    if (s.desired_change_id() == s.applied_change_id()) continue;
    ++out.count;
    if (out.hosts.size() < limit) out.hosts.push_back(host);
  }
  return out;
}

absl::Status MemoryChangeStore::AppendAudit(const std::vector<v1::AuditEntry>& entries) {
  absl::MutexLock lock(&mu_);
  AppendAuditLocked(entries);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::AuditEntry>> MemoryChangeStore::ListAudit(const AuditQuery& query) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::AuditEntry> out;
  for (const auto& e : audit_) {
    if (out.size() >= query.limit) break;
    if (e.seq() <= query.after_seq) continue;
    if (!query.change_id.empty() && e.change_id() != query.change_id) continue;
    if (!query.waiver_id.empty() && e.waiver_id() != query.waiver_id) continue;
    out.push_back(e);
  }
  return out;
}

absl::Status MemoryChangeStore::CreateWaiver(const v1::Waiver& waiver,
                                             const v1::AuditEntry& audit) {
  absl::MutexLock lock(&mu_);
  if (waiver.id().empty()) return absl::InvalidArgumentError("waiver: id is empty");
  if (waivers_.count(waiver.id()) > 0) {
    return absl::AlreadyExistsError(absl::StrCat("waiver ", waiver.id(), " already exists"));
  }
  waivers_[waiver.id()] = waiver;
  AppendAuditLocked({audit});
  return absl::OkStatus();
}

absl::StatusOr<v1::Waiver> MemoryChangeStore::UpdateWaiver(const std::string& id,
                                                           const WaiverStepFn& step) {
  std::shared_ptr<absl::Mutex> step_lock;
  {
    absl::MutexLock lock(&mu_);
    auto& m = waiver_locks_[id];
    if (!m) m = std::make_shared<absl::Mutex>();
    step_lock = m;
  }
  absl::MutexLock in_order(step_lock.get());
  v1::Waiver current;
  {
    absl::MutexLock lock(&mu_);
    auto it = waivers_.find(id);
    if (it == waivers_.end()) return absl::NotFoundError(absl::StrCat("no waiver ", id));
    current = it->second;
  }
  ASSIGN_OR_RETURN(auto update, step(current));
  v1::Waiver& next = update.first;
  if (next.id() != id) {
    return absl::InvalidArgumentError(
        absl::StrCat("waiver ", id, ": the step returned waiver '", next.id(), "'"));
  }
  if (!next.approved_by().empty() && next.approved_by() == next.created_by()) {
    return absl::FailedPreconditionError(
        absl::StrCat("waiver ", id, ": ", next.approved_by(), " cannot approve their own waiver"));
  }
  absl::MutexLock lock(&mu_);
  waivers_[id] = next;
  AppendAuditLocked({std::move(update.second)});
  return next;
}

absl::StatusOr<std::vector<v1::Waiver>> MemoryChangeStore::ListWaivers(bool include_inactive,
                                                                       absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Waiver> out;
  for (const auto& [id, w] : waivers_) {
    v1::Waiver shown = w;
    if (w.state() == v1::WAIVER_STATE_APPROVED && FromProto(w.expires_at()) <= now) {
      shown.set_state(v1::WAIVER_STATE_EXPIRED);
    }
    if (!include_inactive && shown.state() != v1::WAIVER_STATE_APPROVED) continue;
    out.push_back(std::move(shown));
  }
  return out;
}

}  // namespace smbfleet::collector

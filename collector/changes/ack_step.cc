// Acks applied in a step on the acking hosts alone (ChangeStore::UpdateChangeHosts). Most acks
// of a push only record their host's result; the whole-change step (RunStep) is kept for those
// that can move the rollout on. The tests below mirror rollout.cc (OnAck, Advance): what they
// let through, Step would have done nothing with but record.

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/changes/change_service.h"
#include "collector/changes/rollout.h"
#include "collector/changes/rollout_spec.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector::changes {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

namespace {

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

bool Waiting(v1::HostChangeState s) {
  return s == v1::HOST_CHANGE_STATE_PENDING || s == v1::HOST_CHANGE_STATE_DISPATCHED;
}

// Whether Step would only record this ack (OnAck): the host was waiting for it or timed out,
// and the result halts nothing and sends no rollback in the change's state.
bool OnlyRecords(const v1::Change& c, const v1::ChangeHost& h, v1::HostChangeState result) {
  const bool ack_result =
      result == v1::HOST_CHANGE_STATE_APPLIED || result == v1::HOST_CHANGE_STATE_FAILED ||
      result == v1::HOST_CHANGE_STATE_PRECONDITION_FAILED ||
      result == v1::HOST_CHANGE_STATE_REFUSED || result == v1::HOST_CHANGE_STATE_ROLLED_BACK;
  if (!ack_result || (h.state() != v1::HOST_CHANGE_STATE_DISPATCHED &&
                      h.state() != v1::HOST_CHANGE_STATE_TIMED_OUT)) {
    return false;  // Step refuses it; the whole-change step says why
  }
  switch (c.state()) {
    case v1::CHANGE_STATE_ROLLING_OUT:
      // FAILED, ROLLED_BACK and REFUSED halt; PRECONDITION_FAILED is counted (MayAdvance).
      return result == v1::HOST_CHANGE_STATE_APPLIED ||
             result == v1::HOST_CHANGE_STATE_PRECONDITION_FAILED;
    case v1::CHANGE_STATE_APPROVED:
      return result != v1::HOST_CHANGE_STATE_REFUSED;
    case v1::CHANGE_STATE_ROLLED_BACK:
      return result != v1::HOST_CHANGE_STATE_APPLIED || h.rollback_sent();
    default:
      return true;
  }
}

// Whether Step's Advance could do anything after these acks: expire the change, time a host
// out, halt on PRECONDITION_FAILED acks over the limit, finish the wave (its watch, the next
// wave, completion) or dispatch a host whose window opened. `mine`: the acking hosts after the
// acks; `others`: every other host, as counted by the store.
bool MayAdvance(const v1::Change& c, const std::vector<v1::ChangeHost>& mine,
                const OtherHosts& others, bool precondition_failed_acked,
                absl::Duration default_ack_timeout, absl::Time now) {
  const v1::ChangeState state = c.state();
  if (state != v1::CHANGE_STATE_APPROVED && state != v1::CHANGE_STATE_ROLLING_OUT &&
      state != v1::CHANGE_STATE_HALTED) {
    return state == v1::CHANGE_STATE_PROPOSED;  // not live: Advance does nothing
  }
  if (c.has_not_after() && now >= FromProto(c.not_after())) return true;
  absl::StatusOr<RolloutSpec> spec = ParseRolloutOptions(c.rollout(), default_ack_timeout);
  if (!spec.ok()) return true;  // the whole-change step reports it
  absl::Time earliest = others.earliest_dispatched;
  bool wave_waiting = others.wave_pending || others.wave_dispatched;
  bool wave_pending = others.wave_pending;
  int precondition_failed = static_cast<int>(others.precondition_failed);
  for (const v1::ChangeHost& h : mine) {
    if (h.state() == v1::HOST_CHANGE_STATE_DISPATCHED) {
      earliest = std::min(
          earliest, h.has_dispatched_at() ? FromProto(h.dispatched_at()) : absl::InfinitePast());
    }
    if (h.wave() == c.current_wave() && Waiting(h.state())) wave_waiting = true;
    if (h.wave() == c.current_wave() && h.state() == v1::HOST_CHANGE_STATE_PENDING) {
      wave_pending = true;
    }
    if (h.state() == v1::HOST_CHANGE_STATE_PRECONDITION_FAILED) ++precondition_failed;
  }
  if (earliest != absl::InfiniteFuture() && now >= earliest + spec->ack_timeout) {
    return true;  // a host times out (one never dispatched at a known time at once, as in Advance)
  }
  if (state == v1::CHANGE_STATE_HALTED) return false;
  if (state == v1::CHANGE_STATE_ROLLING_OUT && precondition_failed_acked &&
      precondition_failed - static_cast<int>(c.precondition_failed_forgiven()) >
          spec->max_precondition_failed) {
    return true;
  }
  return !wave_waiting || wave_pending;
}

}  // namespace

bool ChangeService::ApplyAcksToHosts(const std::string& id, const std::vector<PendingAck*>& acks) {
  const absl::Time now = clock_();
  std::vector<std::string> names;
  names.reserve(acks.size());
  for (const PendingAck* a : acks) names.push_back(a->host);
  bool whole = false;
  auto step = [&](const v1::Change& c, const std::vector<v1::ChangeHost>& hosts,
                  const OtherHosts& others) -> absl::StatusOr<std::optional<HostsUpdate>> {
    whole = false;
    HostsUpdate u;
    u.change = c;
    u.hosts = hosts;
    std::map<std::string, v1::ChangeHost*> by_name;
    for (v1::ChangeHost& h : u.hosts) by_name[h.host()] = &h;
    bool moved = false;
    bool precondition_failed = false;
    for (PendingAck* a : acks) {
      a->status = absl::OkStatus();
      a->moved = false;
      a->since_dispatch.reset();
      const v1::AckChangeRequest& ack = a->ack;
      auto found = by_name.find(a->host);
      v1::ChangeHost* h = found == by_name.end() ? nullptr : found->second;
      a->status = MatchesOrder(id, c, h, *a);
      if (!a->status.ok()) continue;
      if (h->state() == a->result) continue;  // the same ack again: already recorded and audited
      if (!OnlyRecords(c, *h, a->result)) {
        whole = true;
        return std::optional<HostsUpdate>();
      }
      a->moved = true;
      moved = true;
      precondition_failed |= a->result == v1::HOST_CHANGE_STATE_PRECONDITION_FAILED;
      if (h->has_dispatched_at()) a->since_dispatch = now - FromProto(h->dispatched_at());
      const std::string message = ack.message().substr(0, 2000);
      *h->mutable_before() = ack.before();
      *h->mutable_after() = ack.after();
      h->set_state(a->result);
      *h->mutable_finished_at() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
      h->set_message(message);
      v1::AuditEntry& e = u.audit.emplace_back();
      e.set_actor(a->host);
      e.set_action("acked");
      e.set_change_id(c.id());
      e.set_host(a->host);
      e.set_reason(message);
      e.set_detail(HostStateName(a->result));
      e.set_content_hash(c.content_hash());
      *e.mutable_at() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
    }
    if (!moved) return std::optional<HostsUpdate>(std::move(u));  // writes nothing
    if (MayAdvance(c, u.hosts, others, precondition_failed, options_.ack_timeout, now)) {
      whole = true;
      return std::optional<HostsUpdate>();
    }
    *u.change.mutable_updated_at() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
    return std::optional<HostsUpdate>(std::move(u));
  };
  absl::Status s = changes_->UpdateChangeHosts(id, names, step);
  return s.ok() && !whole;
}

}  // namespace smbfleet::collector::changes

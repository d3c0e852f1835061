#include "collector/changes/change_rollout.h"

#include <map>
#include <string>
#include <utility>

#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector::changes {
namespace {

using google::protobuf::util::TimeUtil;

// An unset timestamp is the rollout's "never" (InfinitePast), or InfiniteFuture for not_after.
absl::Time FromProto(const google::protobuf::Timestamp& t, bool has, absl::Time unset) {
  if (!has) return unset;
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

void SetTime(absl::Time t, google::protobuf::Timestamp* out, const std::function<void()>& clear) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) {
    clear();
    return;
  }
  *out = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

}  // namespace

absl::StatusOr<Rollout> RolloutFromChange(const smbfleet::v1::Change& change,
                                          absl::Duration ack_timeout) {
  std::vector<HostRollout> hosts;
  hosts.reserve(change.hosts_size());
  for (const auto& h : change.hosts()) {
    HostRollout r;
    r.host = h.host();
    r.labels = Labels(h.labels().begin(), h.labels().end());
    for (const auto& c : h.impact().clients()) {
      if (!c.client_name().empty()) r.expected_refusals.push_back(c.client_name());
      if (!c.client_address().empty()) r.expected_refusals.push_back(c.client_address());
    }
    r.wave = h.wave();
    r.state = h.state();
    r.dispatched_at = FromProto(h.dispatched_at(), h.has_dispatched_at(), absl::InfinitePast());
    r.finished_at = FromProto(h.finished_at(), h.has_finished_at(), absl::InfinitePast());
    r.message = h.message();
    r.rollback_sent = h.rollback_sent();
    hosts.push_back(std::move(r));
  }
  Rollout rollout =
      NewRollout(change.id(), std::move(hosts),
                 FromProto(change.not_after(), change.has_not_after(), absl::InfiniteFuture()));
  rollout.state = change.state();
  ASSIGN_OR_RETURN(rollout.spec, ParseRolloutOptions(change.rollout(), ack_timeout));
  rollout.wave = change.current_wave();
  rollout.wave_count = change.wave_count();
  rollout.resumed_at =
      FromProto(change.resumed_at(), change.has_resumed_at(), absl::InfinitePast());
  rollout.precondition_failed_forgiven = static_cast<int>(change.precondition_failed_forgiven());
  rollout.halt_reason = change.halt_reason();
  return rollout;
}

void ApplyRollout(const Rollout& rollout, smbfleet::v1::Change* change) {
  change->set_state(rollout.state);
  change->set_current_wave(rollout.wave);
  change->set_wave_count(rollout.wave_count);
  change->set_halt_reason(rollout.halt_reason);
  SetTime(rollout.resumed_at, change->mutable_resumed_at(), [&] { change->clear_resumed_at(); });
  change->set_precondition_failed_forgiven(
      static_cast<uint32_t>(rollout.precondition_failed_forgiven));
  std::map<std::string, const HostRollout*> by_name;
  for (const HostRollout& h : rollout.hosts) by_name[h.host] = &h;
  for (auto& h : *change->mutable_hosts()) {
    auto it = by_name.find(h.host());
    if (it == by_name.end()) continue;
    const HostRollout& r = *it->second;
    h.set_state(r.state);
    h.set_wave(r.wave);
    SetTime(r.dispatched_at, h.mutable_dispatched_at(), [&] { h.clear_dispatched_at(); });
    SetTime(r.finished_at, h.mutable_finished_at(), [&] { h.clear_finished_at(); });
    h.set_message(r.message);
    h.set_rollback_sent(r.rollback_sent);
  }
}

ChangeFacts FactsOf(const smbfleet::v1::Change& change) {
  ChangeFacts facts;
  facts.id = change.id();
  facts.state = change.state();
  facts.proposer = change.proposed_by();
  for (const auto& a : change.approvals()) facts.approvers.push_back(a.approver());
  facts.host_count = change.hosts_size();
  facts.refused_clients = static_cast<int>(change.impact().refused_clients());
  facts.approvals_required = static_cast<int>(change.approvals_required());
  return facts;
}

}  // namespace smbfleet::collector::changes

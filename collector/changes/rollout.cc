#include "collector/changes/rollout.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "collector/changes/approval.h"
#include "common/status_macros.h"

namespace smbfleet::collector::changes {
namespace {

using smbfleet::v1::ChangeState;
using smbfleet::v1::HostChangeState;

constexpr ChangeState kProposed = smbfleet::v1::CHANGE_STATE_PROPOSED;
constexpr ChangeState kApproved = smbfleet::v1::CHANGE_STATE_APPROVED;
constexpr ChangeState kRollingOut = smbfleet::v1::CHANGE_STATE_ROLLING_OUT;
constexpr ChangeState kHalted = smbfleet::v1::CHANGE_STATE_HALTED;
constexpr HostChangeState kPending = smbfleet::v1::HOST_CHANGE_STATE_PENDING;
constexpr HostChangeState kDispatched = smbfleet::v1::HOST_CHANGE_STATE_DISPATCHED;
constexpr HostChangeState kApplied = smbfleet::v1::HOST_CHANGE_STATE_APPLIED;
constexpr HostChangeState kPreconditionFailed = smbfleet::v1::HOST_CHANGE_STATE_PRECONDITION_FAILED;
constexpr HostChangeState kTimedOut = smbfleet::v1::HOST_CHANGE_STATE_TIMED_OUT;

bool IsAckResult(HostChangeState result) {
  return result == kApplied || result == smbfleet::v1::HOST_CHANGE_STATE_FAILED ||
         result == kPreconditionFailed || result == smbfleet::v1::HOST_CHANGE_STATE_REFUSED ||
         result == smbfleet::v1::HOST_CHANGE_STATE_ROLLED_BACK;
}

// A change that may still dispatch (or be approved and then dispatch).
bool Live(ChangeState state) {
  return state == kProposed || state == kApproved || state == kRollingOut || state == kHalted;
}

bool Waiting(const HostRollout& host) {
  return host.state == kPending || host.state == kDispatched;
}

absl::StatusOr<HostRollout*> FindHost(Rollout& rollout, const std::string& host) {
  for (HostRollout& h : rollout.hosts) {
    if (h.host == host) return &h;
  }
  return absl::NotFoundError(
      absl::StrCat("change ", rollout.change_id, ": no host \"", host, "\" in this change"));
}

// When every host of the current wave had acked or timed out (or the last resume, if later);
// InfiniteFuture while one is still waiting.
absl::Time WaveFinishedAt(const Rollout& rollout) {
  absl::Time finished = rollout.resumed_at;
  for (const HostRollout& h : rollout.hosts) {
    if (h.wave != rollout.wave) continue;
    if (Waiting(h)) return absl::InfiniteFuture();
    finished = std::max(finished, h.finished_at);
  }
  return finished;
}

void HaltBy(Rollout& rollout, std::string reason, std::vector<Action>& actions) {
  rollout.state = kHalted;
  rollout.halt_reason = reason;
  Action halt;
  halt.kind = Action::Kind::kHalt;
  halt.reason = std::move(reason);
  actions.push_back(std::move(halt));
}

void SendRollback(HostRollout& host, std::string reason, std::vector<Action>& actions) {
  host.rollback_sent = true;
  Action rollback;
  rollback.kind = Action::Kind::kSendRollback;
  rollback.hosts = {host.host};
  rollback.reason = std::move(reason);
  actions.push_back(std::move(rollback));
}

// Dispatches the current wave's pending hosts that are inside their windows.
void DispatchOpenHosts(Rollout& rollout, absl::Time now, std::vector<Action>& actions) {
  Action dispatch;
  dispatch.kind = Action::Kind::kDispatch;
  dispatch.wave = rollout.wave;
  dispatch.not_after = std::min(rollout.not_after, now + rollout.spec.ack_timeout);
  for (HostRollout& h : rollout.hosts) {
    if (h.wave != rollout.wave || h.state != kPending) continue;
    if (!InsideWindows(rollout.spec.windows, h.labels, now)) continue;
    h.state = kDispatched;
    h.dispatched_at = now;
    dispatch.hosts.push_back(h.host);
  }
  if (dispatch.hosts.empty()) return;
  rollout.state = kRollingOut;
  actions.push_back(std::move(dispatch));
}

// What time alone decides: expiry, ack timeouts, the end of a wave and its watch period, and
// dispatching the hosts whose windows are open.
void Advance(Rollout& rollout, absl::Time now, std::vector<Action>& actions) {
  if (!Live(rollout.state)) return;
  if (now >= rollout.not_after) {
    rollout.state = smbfleet::v1::CHANGE_STATE_EXPIRED;
    Action expire;
    expire.kind = Action::Kind::kExpire;
    expire.reason = absl::StrCat("not finished by its not-after time ",
                                 absl::FormatTime(rollout.not_after, absl::UTCTimeZone()));
    actions.push_back(std::move(expire));
    return;
  }
  if (rollout.state == kProposed) return;
  for (HostRollout& h : rollout.hosts) {
    absl::Time deadline = h.dispatched_at + rollout.spec.ack_timeout;
    if (h.state == kDispatched && now >= deadline) {
      h.state = kTimedOut;
      h.finished_at = deadline;
      h.message = absl::StrCat("no ack within ", absl::FormatDuration(rollout.spec.ack_timeout));
    }
  }
  if (rollout.state == kHalted) return;
  while (true) {
    absl::Time finished = WaveFinishedAt(rollout);
    if (finished == absl::InfiniteFuture()) {
      DispatchOpenHosts(rollout, now, actions);
      return;
    }
    if (now < finished + rollout.spec.watch) return;
    if (rollout.wave + 1 >= rollout.wave_count) {
      rollout.state = smbfleet::v1::CHANGE_STATE_COMPLETED;
      Action complete;
      complete.kind = Action::Kind::kComplete;
      actions.push_back(std::move(complete));
      return;
    }
    ++rollout.wave;
  }
}

int CountPreconditionFailed(const Rollout& rollout) {
  return static_cast<int>(
      std::count_if(rollout.hosts.begin(), rollout.hosts.end(),
                    [](const HostRollout& h) { return h.state == kPreconditionFailed; }));
}

absl::Status OnApprove(Rollout& rollout, const RolloutSpec& spec) {
  RETURN_IF_ERROR(CheckState(ChangeAction::kApprove, rollout.change_id, rollout.state));
  std::vector<std::string> names;
  for (const HostRollout& h : rollout.hosts) names.push_back(h.host);
  absl::StatusOr<std::vector<std::vector<std::string>>> waves = AssignWaves(names, spec);
  if (!waves.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("change ", rollout.change_id, ": ", waves.status().message()));
  }
  // By name once (the first of a name, as FindHost finds it): a lookup per host of every wave
  // would be quadratic in the hosts.
  std::map<absl::string_view, HostRollout*> by_name;
  for (HostRollout& h : rollout.hosts) by_name.try_emplace(h.host, &h);
  for (size_t w = 0; w < waves->size(); ++w) {
    for (const std::string& name : (*waves)[w]) {
      auto found = by_name.find(name);
      if (found == by_name.end()) {
        return absl::NotFoundError(
            absl::StrCat("change ", rollout.change_id, ": no host \"", name, "\" in this change"));
      }
      found->second->wave = static_cast<int>(w);
    }
  }
  rollout.spec = spec;
  rollout.wave = 0;
  rollout.wave_count = static_cast<int>(waves->size());
  rollout.state = kApproved;
  return absl::OkStatus();
}

absl::Status OnAck(Rollout& rollout, const Event& event, absl::Time now,
                   std::vector<Action>& actions) {
  if (!IsAckResult(event.result)) {
    return absl::InvalidArgumentError(
        absl::StrCat("change ", rollout.change_id, ": host ", event.host, " acked ",
                     HostStateName(event.result), ", not an ack result"));
  }
  ASSIGN_OR_RETURN(HostRollout * host, FindHost(rollout, event.host));
  if (host->state == event.result) return absl::OkStatus();  // the same ack again
  if (host->state != kDispatched && host->state != kTimedOut) {
    return absl::FailedPreconditionError(
        absl::StrCat("change ", rollout.change_id, ": host ", event.host, " acked ",
                     HostStateName(event.result), " but is ", HostStateName(host->state)));
  }
  host->state = event.result;
  host->finished_at = now;
  host->message = event.reason;

  if (rollout.state == smbfleet::v1::CHANGE_STATE_ROLLED_BACK && event.result == kApplied &&
      !host->rollback_sent) {
    SendRollback(*host, "the change was rolled back before this host acked", actions);
  }
  if (rollout.state != kRollingOut) return absl::OkStatus();
  std::string detail = event.reason.empty() ? "" : absl::StrCat(": ", event.reason);
  if (event.result == smbfleet::v1::HOST_CHANGE_STATE_FAILED ||
      event.result == smbfleet::v1::HOST_CHANGE_STATE_ROLLED_BACK) {
    HaltBy(rollout,
           absl::StrCat("host ", event.host, " acked ", HostStateName(event.result), detail),
           actions);
  } else if (event.result == kPreconditionFailed) {
    int failed = CountPreconditionFailed(rollout) - rollout.precondition_failed_forgiven;
    if (failed > rollout.spec.max_precondition_failed) {
      HaltBy(rollout,
             absl::StrCat(failed, " hosts acked PRECONDITION_FAILED, more than the ",
                          rollout.spec.max_precondition_failed, " allowed (last: host ", event.host,
                          detail, ")"),
             actions);
    }
  }
  return absl::OkStatus();
}

void OnRefusalSeen(Rollout& rollout, const HostRollout& host, const Event& event,
                   std::vector<Action>& actions) {
  if (rollout.state != kRollingOut || host.wave != rollout.wave || host.state != kApplied) return;
  if (event.at < std::max(host.finished_at, rollout.resumed_at)) return;  // not new
  absl::Time finished = WaveFinishedAt(rollout);
  if (finished != absl::InfiniteFuture() && event.at >= finished + rollout.spec.watch) return;
  const auto& expected = host.expected_refusals;
  if (std::find(expected.begin(), expected.end(), event.client) != expected.end()) return;
  HaltBy(rollout,
         absl::StrCat("host ", host.host, " refused client ", event.client, " at ",
                      absl::FormatTime(event.at, absl::UTCTimeZone()), " during wave ",
                      rollout.wave + 1, " of ", rollout.wave_count),
         actions);
}

}  // namespace

Event Event::Approve(RolloutSpec spec) {
  Event e;
  e.kind = Kind::kApprove;
  e.spec = std::move(spec);
  return e;
}

Event Event::Reject(std::string reason) {
  Event e;
  e.kind = Kind::kReject;
  e.reason = std::move(reason);
  return e;
}

Event Event::Ack(std::string host, HostChangeState result, std::string message) {
  Event e;
  e.kind = Kind::kAck;
  e.host = std::move(host);
  e.result = result;
  e.reason = std::move(message);
  return e;
}

Event Event::RefusalSeen(std::string host, std::string client, absl::Time at) {
  Event e;
  e.kind = Kind::kRefusalSeen;
  e.host = std::move(host);
  e.client = std::move(client);
  e.at = at;
  return e;
}

Event Event::Tick() { return Event(); }

Event Event::Halt(std::string reason) {
  Event e;
  e.kind = Kind::kHalt;
  e.reason = std::move(reason);
  return e;
}

Event Event::Resume() {
  Event e;
  e.kind = Kind::kResume;
  return e;
}

Event Event::Rollback(std::string reason) {
  Event e;
  e.kind = Kind::kRollback;
  e.reason = std::move(reason);
  return e;
}

Event Event::Expire() {
  Event e;
  e.kind = Kind::kExpire;
  return e;
}

Rollout NewRollout(std::string change_id, std::vector<HostRollout> hosts, absl::Time not_after) {
  Rollout rollout;
  rollout.change_id = std::move(change_id);
  rollout.hosts = std::move(hosts);
  rollout.not_after = not_after;
  return rollout;
}

absl::StatusOr<Transition> Step(Rollout rollout, const Event& event, absl::Time now) {
  Transition t;
  std::vector<Action>& actions = t.actions;
  const std::string& id = rollout.change_id;
  switch (event.kind) {
    case Event::Kind::kApprove:
      RETURN_IF_ERROR(OnApprove(rollout, event.spec));
      break;
    case Event::Kind::kReject:
      RETURN_IF_ERROR(CheckState(ChangeAction::kReject, id, rollout.state));
      rollout.state = smbfleet::v1::CHANGE_STATE_REJECTED;
      break;
    case Event::Kind::kAck:
      RETURN_IF_ERROR(OnAck(rollout, event, now, actions));
      break;
    case Event::Kind::kRefusalSeen: {
      ASSIGN_OR_RETURN(HostRollout * host, FindHost(rollout, event.host));
      OnRefusalSeen(rollout, *host, event, actions);
      break;
    }
    case Event::Kind::kTick:
      break;
    case Event::Kind::kHalt:
      RETURN_IF_ERROR(CheckState(ChangeAction::kHalt, id, rollout.state));
      HaltBy(rollout, event.reason, actions);
      break;
    case Event::Kind::kResume: {
      RETURN_IF_ERROR(CheckState(ChangeAction::kResume, id, rollout.state));
      bool dispatched = std::any_of(rollout.hosts.begin(), rollout.hosts.end(),
                                    [](const HostRollout& h) { return h.state != kPending; });
      rollout.state = dispatched ? kRollingOut : kApproved;
      rollout.resumed_at = now;
      rollout.precondition_failed_forgiven = CountPreconditionFailed(rollout);
      rollout.halt_reason.clear();
      break;
    }
    case Event::Kind::kRollback:
      RETURN_IF_ERROR(CheckState(ChangeAction::kRollback, id, rollout.state));
      rollout.state = smbfleet::v1::CHANGE_STATE_ROLLED_BACK;
      for (HostRollout& h : rollout.hosts) {
        if (h.state == kApplied && !h.rollback_sent) SendRollback(h, event.reason, actions);
      }
      break;
    case Event::Kind::kExpire: {
      if (!Live(rollout.state)) {
        return absl::FailedPreconditionError(
            absl::StrCat("change ", id, ": cannot expire: it is ", ChangeStateName(rollout.state)));
      }
      rollout.not_after = std::min(rollout.not_after, now);
      break;
    }
  }
  Advance(rollout, now, actions);
  t.rollout = std::move(rollout);
  return t;
}

absl::Time NextDeadline(const Rollout& rollout) {
  if (!Live(rollout.state)) return absl::InfiniteFuture();
  absl::Time next = rollout.not_after;
  for (const HostRollout& h : rollout.hosts) {
    if (h.state == kDispatched) next = std::min(next, h.dispatched_at + rollout.spec.ack_timeout);
  }
  if (rollout.state == kRollingOut) {
    absl::Time finished = WaveFinishedAt(rollout);
    if (finished != absl::InfiniteFuture()) next = std::min(next, finished + rollout.spec.watch);
  }
  return next;
}

std::string ChangeStateName(ChangeState state) {
  return smbfleet::v1::ChangeState_Name(state).substr(sizeof("CHANGE_STATE_") - 1);
}

std::string HostStateName(HostChangeState state) {
  return smbfleet::v1::HostChangeState_Name(state).substr(sizeof("HOST_CHANGE_STATE_") - 1);
}

}  // namespace smbfleet::collector::changes

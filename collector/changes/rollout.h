#ifndef SMBFLEET_COLLECTOR_CHANGES_ROLLOUT_H_
#define SMBFLEET_COLLECTOR_CHANGES_ROLLOUT_H_

// The rollout state machine of one change: a plain struct (Rollout) and one function,
//
//   Step(rollout, event, now) -> {new rollout, actions}
//
// Events are what happened (approved, a host acked, a refusal event was seen, time passed, a
// person halted / resumed / rolled back, the change expired); actions are what the caller must
// do (dispatch orders to a wave's hosts, announce a halt, send a host its rollback order, record
// completion or expiry). Step reads no clock and does no I/O: the caller stores the new rollout
// and carries out the actions in one transaction, then audits the transition.
//
// The rules:
// - Approve assigns the waves (AssignWaves) and starts the first one.
// - A host is dispatched only while it is inside its maintenance windows, and never at or after
//   the change's not-after time (the change then EXPIRES). Each order's own not-after is the
//   earlier of the change's and now + ack timeout, so a host that timed out never applies it.
// - The next wave starts when every host of the current one acked or timed out AND the watch
//   period passed since the last of them (or since a resume, if later).
// - The rollout halts by itself on a FAILED or ROLLED_BACK ack, on more PRECONDITION_FAILED acks
//   than the spec allows (counted since the last resume), and on a refusal event from an applied
//   host of the current wave after it applied and before its wave's watch period ends, unless
//   the refused client is one the approved impact already named.
// - Halted: nothing is dispatched; acks and timeouts are still recorded. Resume continues.
// - Rollback sends each APPLIED host its rollback order once, including hosts whose APPLIED ack
//   arrives after the rollback.
// - Events that the change's state does not allow are FailedPrecondition, naming the change
//   (approval.h's table, the same one the approval rules use).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collector/changes/rollout_spec.h"
#include "smbfleet/v1/change.pb.h"

namespace smbfleet::collector::changes {

struct HostRollout {
  std::string host;
  Labels labels;  // the host's labels, for maintenance windows
  // Clients (name or address) that the approved impact says this change refuses: refusal events
  // naming them were expected and do not halt the rollout.
  std::vector<std::string> expected_refusals;

  int wave = -1;  // assigned at approval
  smbfleet::v1::HostChangeState state = smbfleet::v1::HOST_CHANGE_STATE_PENDING;
  absl::Time dispatched_at = absl::InfinitePast();
  absl::Time finished_at = absl::InfinitePast();  // when it acked or timed out
  std::string message;                            // the ack's message, or the timeout
  bool rollback_sent = false;
};

struct Rollout {
  std::string change_id;
  smbfleet::v1::ChangeState state = smbfleet::v1::CHANGE_STATE_PROPOSED;
  absl::Time not_after = absl::InfiniteFuture();  // the change expires then
  RolloutSpec spec;                               // set at approval
  std::vector<HostRollout> hosts;                 // each target host once
  int wave = 0;                                   // the current wave
  int wave_count = 0;
  absl::Time resumed_at = absl::InfinitePast();
  int precondition_failed_forgiven = 0;  // PRECONDITION_FAILED hosts the last resume accepted
  std::string halt_reason;
};

struct Event {
  enum class Kind {
    kApprove,
    kReject,
    kAck,
    kRefusalSeen,
    kTick,
    kHalt,
    kResume,
    kRollback,
    kExpire
  };

  Kind kind = Kind::kTick;
  std::string host;  // kAck, kRefusalSeen
  // kAck: APPLIED, FAILED, PRECONDITION_FAILED, REFUSED or ROLLED_BACK (the agent's result).
  smbfleet::v1::HostChangeState result = smbfleet::v1::HOST_CHANGE_STATE_UNSPECIFIED;
  std::string client;                    // kRefusalSeen: who was refused (name or address)
  absl::Time at = absl::InfinitePast();  // kRefusalSeen: when the host refused
  std::string reason;                    // kAck: the agent's message; kHalt, kReject, kRollback
  RolloutSpec spec;                      // kApprove

  static Event Approve(RolloutSpec spec);
  static Event Reject(std::string reason);
  static Event Ack(std::string host, smbfleet::v1::HostChangeState result,
                   std::string message = "");
  static Event RefusalSeen(std::string host, std::string client, absl::Time at);
  static Event Tick();
  static Event Halt(std::string reason);
  static Event Resume();
  static Event Rollback(std::string reason);
  static Event Expire();
};

struct Action {
  enum class Kind { kDispatch, kHalt, kSendRollback, kComplete, kExpire };

  Kind kind = Kind::kDispatch;
  std::vector<std::string> hosts;  // kDispatch: hosts of the wave now; kSendRollback: one
  int wave = -1;                   // kDispatch: 0 = the first wave
  absl::Time not_after = absl::InfiniteFuture();  // kDispatch: the orders' not-after time
  std::string reason;                             // kHalt, kExpire, kSendRollback
};

struct Transition {
  Rollout rollout;
  std::vector<Action> actions;
};

// A PROPOSED change over `hosts`, expiring at `not_after`.
Rollout NewRollout(std::string change_id, std::vector<HostRollout> hosts, absl::Time not_after);

// The rollout after `event` at `now`, and what to do about it. Pass std::move(rollout) when the
// old state is not needed: Step works on its own copy. Errors: FailedPrecondition (the state
// does not allow the event, an ack from a host never dispatched or acked differently before),
// NotFound (a host not in the change), InvalidArgument (a bad ack result or rollout spec).
absl::StatusOr<Transition> Step(Rollout rollout, const Event& event, absl::Time now);

// The earliest time at which a Tick would change something other than a window opening (an ack
// timeout, the end of a watch period, expiry); InfiniteFuture when nothing is waiting. While
// hosts wait for a window, tick at least once a minute.
absl::Time NextDeadline(const Rollout& rollout);

// The state's name without its prefix ("ROLLING_OUT"), for messages.
std::string ChangeStateName(smbfleet::v1::ChangeState state);
std::string HostStateName(smbfleet::v1::HostChangeState state);

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_ROLLOUT_H_

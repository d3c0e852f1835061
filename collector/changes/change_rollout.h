#ifndef SMBFLEET_COLLECTOR_CHANGES_CHANGE_ROLLOUT_H_
#define SMBFLEET_COLLECTOR_CHANGES_CHANGE_ROLLOUT_H_

// The stored Change (v1::Change, what the ChangeStore keeps) and the rollout state machine's
// Rollout (rollout.h) are two views of one thing. These convert between them, so that every
// workflow step is: RolloutFromChange -> Step -> ApplyRollout, and the fields Step does not
// know (plans, acks' values, approvals) pass through untouched.

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collector/changes/approval.h"
#include "collector/changes/rollout.h"
#include "smbfleet/v1/change.pb.h"

namespace smbfleet::collector::changes {

// The rollout of `change`. Its spec is parsed again from the stored RolloutOptions (they parse
// the same way as at approval), with the collector's `ack_timeout`. Each host's expected
// refusals are the names and addresses of the clients its impact names.
absl::StatusOr<Rollout> RolloutFromChange(const smbfleet::v1::Change& change,
                                          absl::Duration ack_timeout);

// Writes the rollout's state back into `change`: its state, wave, halt reason, resume
// bookkeeping, and each host's state, wave, times, message and rollback flag (hosts matched by
// name; a host not in the change is ignored).
void ApplyRollout(const Rollout& rollout, smbfleet::v1::Change* change);

// What the approval rules need to know about a stored change (stale is left for the caller).
ChangeFacts FactsOf(const smbfleet::v1::Change& change);

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_CHANGE_ROLLOUT_H_

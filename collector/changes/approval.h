#ifndef SMBFLEET_COLLECTOR_CHANGES_APPROVAL_H_
#define SMBFLEET_COLLECTOR_CHANGES_APPROVAL_H_

// Who may do what to a change, in which state, and how many approvals it needs (four-eyes).
// Pure: the caller gathers the facts (ChangeFacts) and the person (Actor), these rules answer.
//
//   action    roles                        change states                        not the proposer
//   approve   approver                     PROPOSED                             yes
//   reject    approver                     PROPOSED, APPROVED                   yes
//   halt      proposer, approver, admin    APPROVED, ROLLING_OUT                -
//   resume    approver                     HALTED                               -
//   rollback  approver                     ROLLING_OUT, HALTED, COMPLETED,      -
//                                          EXPIRED
//
// Admin is not an approver: running the collector does not make one a change manager.
// A change needs two distinct approvers when its impact names any client that would be refused
// or when it targets more hosts than ApprovalPolicy allows with one; otherwise one.
//
// Refusals are absl::Status: PermissionDenied for the wrong role (smbfleetctl exit 4),
// FailedPrecondition for the workflow (own change, wrong state, stale plan: exit 5). The message
// names the change, the person and the reason; RefusalOf() tells the kinds apart.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collector/changes/stale_plan.h"
#include "smbfleet/v1/change.pb.h"

namespace smbfleet::collector::changes {

// The operator certificate's second OU; the auth module maps its Principal onto this.
enum class Role { kViewer, kProposer, kApprover, kAdmin };

enum class ChangeAction { kApprove, kReject, kHalt, kResume, kRollback };

enum class Refusal { kWrongRole, kOwnChange, kWrongState, kStalePlan };

struct Actor {
  std::string name;
  Role role = Role::kViewer;
};

// What the rules need to know about a change, as stored now.
struct ChangeFacts {
  std::string id;
  smbfleet::v1::ChangeState state = smbfleet::v1::CHANGE_STATE_UNSPECIFIED;
  std::string proposer;
  std::vector<std::string> approvers;  // distinct, in the order they approved
  int host_count = 0;
  int refused_clients = 0;            // distinct clients the impact says would be refused
  std::optional<StaleSetting> stale;  // FindStaleSetting over the hosts' latest postures
  // As decided when the change was proposed, and signed in its payload: a later change of the
  // collector's configuration does not move it (0: not decided yet, the policy decides now).
  int approvals_required = 0;
};

struct ApprovalPolicy {
  // More hosts than this need a second approver (collector configuration).
  int max_hosts_single_approval = 10;
};

struct ApprovalOutcome {
  bool counted = false;  // false: this person had approved before
  int approvals = 0;     // distinct approvals after this one
  int required = 1;
  bool Complete() const { return approvals >= required; }
};

absl::string_view RoleName(Role role);
absl::StatusOr<Role> ParseRole(absl::string_view name);  // "viewer", "proposer", ...
absl::string_view ActionName(ChangeAction action);

// 1 or 2 (see above).
int RequiredApprovals(const ChangeFacts& change, const ApprovalPolicy& policy);

// FailedPrecondition (kWrongState) unless `action` is allowed in `state`. Also used by the
// rollout state machine, so that the table above is the only place that says it.
absl::Status CheckState(ChangeAction action, absl::string_view change_id,
                        smbfleet::v1::ChangeState state);

// Role, state and four-eyes checks for `action` by `actor`, in that order.
absl::Status CheckAction(ChangeAction action, const ChangeFacts& change, const Actor& actor);

// An approval by `actor`: CheckAction, then a stale plan refuses it (kStalePlan, naming host and
// setting). A second approval by the same person is not an error and does not count.
absl::StatusOr<ApprovalOutcome> Approve(const ChangeFacts& change, const Actor& actor,
                                        const ApprovalPolicy& policy);

// Which refusal a status from these functions is; nullopt for OK and other errors.
std::optional<Refusal> RefusalOf(const absl::Status& status);

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_APPROVAL_H_

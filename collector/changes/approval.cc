#include "collector/changes/approval.h"

#include <algorithm>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/optional.h"
#include "collector/changes/rollout.h"
#include "common/status_macros.h"

namespace smbfleet::collector::changes {
namespace {

using smbfleet::v1::ChangeState;

constexpr absl::string_view kRefusalPayload = "type.smbfleet.dev/smbfleet.changes.Refusal";

struct Rule {
  ChangeAction action;
  std::vector<Role> roles;
  std::vector<ChangeState> states;
  bool four_eyes;  // never the proposer
};

// The table in approval.h.
const std::vector<Rule>& Rules() {
  static const auto* rules = new std::vector<Rule>{
      {ChangeAction::kApprove, {Role::kApprover}, {smbfleet::v1::CHANGE_STATE_PROPOSED}, true},
      {ChangeAction::kReject,
       {Role::kApprover},
       {smbfleet::v1::CHANGE_STATE_PROPOSED, smbfleet::v1::CHANGE_STATE_APPROVED},
       true},
      {ChangeAction::kHalt,
       {Role::kProposer, Role::kApprover, Role::kAdmin},
       {smbfleet::v1::CHANGE_STATE_APPROVED, smbfleet::v1::CHANGE_STATE_ROLLING_OUT},
       false},
      {ChangeAction::kResume, {Role::kApprover}, {smbfleet::v1::CHANGE_STATE_HALTED}, false},
      {ChangeAction::kRollback,
       {Role::kApprover},
       {smbfleet::v1::CHANGE_STATE_ROLLING_OUT, smbfleet::v1::CHANGE_STATE_HALTED,
        smbfleet::v1::CHANGE_STATE_COMPLETED, smbfleet::v1::CHANGE_STATE_EXPIRED},
       false},
  };
  return *rules;
}

const Rule& RuleFor(ChangeAction action) {
  for (const Rule& rule : Rules()) {
    if (rule.action == action) return rule;
  }
  return Rules().front();  // unreachable: every action has a row
}

absl::string_view RefusalName(Refusal refusal) {
  switch (refusal) {
    case Refusal::kWrongRole:
      return "wrong_role";
    case Refusal::kOwnChange:
      return "own_change";
    case Refusal::kWrongState:
      return "wrong_state";
    case Refusal::kStalePlan:
      return "stale_plan";
  }
  return "";
}

absl::Status Refuse(Refusal refusal, std::string message) {
  absl::Status status = refusal == Refusal::kWrongRole
                            ? absl::PermissionDeniedError(std::move(message))
                            : absl::FailedPreconditionError(std::move(message));
  status.SetPayload(kRefusalPayload, absl::Cord(RefusalName(refusal)));
  return status;
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kProposer:
      return "proposer";
    case Role::kApprover:
      return "approver";
    case Role::kAdmin:
      return "admin";
  }
  return "";
}

absl::StatusOr<Role> ParseRole(absl::string_view name) {
  for (Role role : {Role::kViewer, Role::kProposer, Role::kApprover, Role::kAdmin}) {
    if (name == RoleName(role)) return role;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("role \"", name, "\": not one of viewer, proposer, approver, admin"));
}

absl::string_view ActionName(ChangeAction action) {
  switch (action) {
    case ChangeAction::kApprove:
      return "approve";
    case ChangeAction::kReject:
      return "reject";
    case ChangeAction::kHalt:
      return "halt";
    case ChangeAction::kResume:
      return "resume";
    case ChangeAction::kRollback:
      return "roll back";
  }
  return "";
}

int RequiredApprovals(const ChangeFacts& change, const ApprovalPolicy& policy) {
  bool risky = change.refused_clients > 0 || change.host_count > policy.max_hosts_single_approval;
  return risky ? 2 : 1;
}

absl::Status CheckState(ChangeAction action, absl::string_view change_id, ChangeState state) {
  const Rule& rule = RuleFor(action);
  if (std::find(rule.states.begin(), rule.states.end(), state) != rule.states.end()) {
    return absl::OkStatus();
  }
  std::vector<std::string> allowed;
  for (ChangeState s : rule.states) allowed.push_back(ChangeStateName(s));
  return Refuse(Refusal::kWrongState,
                absl::StrCat("change ", change_id, ": cannot ", ActionName(action), ": it is ",
                             ChangeStateName(state), " (only ", absl::StrJoin(allowed, ", "), ")"));
}

absl::Status CheckAction(ChangeAction action, const ChangeFacts& change, const Actor& actor) {
  const Rule& rule = RuleFor(action);
  if (std::find(rule.roles.begin(), rule.roles.end(), actor.role) == rule.roles.end()) {
    std::vector<std::string> roles;
    for (Role r : rule.roles) roles.emplace_back(RoleName(r));
    return Refuse(Refusal::kWrongRole,
                  absl::StrCat("change ", change.id, ": ", actor.name, " (", RoleName(actor.role),
                               ") may not ", ActionName(action), ": needs the ",
                               absl::StrJoin(roles, " or "), " role"));
  }
  absl::Status state = CheckState(action, change.id, change.state);
  if (!state.ok()) {
    return Refuse(Refusal::kWrongState, absl::StrCat(state.message(), "; asked by ", actor.name));
  }
  if (rule.four_eyes && actor.name == change.proposer) {
    return Refuse(Refusal::kOwnChange,
                  absl::StrCat("change ", change.id, ": ", actor.name, " may not ",
                               ActionName(action), " their own proposal (four-eyes: another ",
                               RoleName(Role::kApprover), " must)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ApprovalOutcome> Approve(const ChangeFacts& change, const Actor& actor,
                                        const ApprovalPolicy& policy) {
  RETURN_IF_ERROR(CheckAction(ChangeAction::kApprove, change, actor));
  if (change.stale.has_value()) {
    return Refuse(Refusal::kStalePlan,
                  absl::StrCat("change ", change.id, ": approval by ", actor.name,
                               " refused, the plan is stale: ", change.stale->Describe(),
                               "; propose it again"));
  }
  ApprovalOutcome outcome;
  outcome.required =
      change.approvals_required > 0 ? change.approvals_required : RequiredApprovals(change, policy);
  bool before = std::find(change.approvers.begin(), change.approvers.end(), actor.name) !=
                change.approvers.end();
  outcome.counted = !before;
  outcome.approvals = static_cast<int>(change.approvers.size()) + (before ? 0 : 1);
  return outcome;
}

std::optional<Refusal> RefusalOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kRefusalPayload);
  if (!payload.has_value()) return std::nullopt;
  for (Refusal refusal :
       {Refusal::kWrongRole, Refusal::kOwnChange, Refusal::kWrongState, Refusal::kStalePlan}) {
    if (*payload == RefusalName(refusal)) return refusal;
  }
  return std::nullopt;
}

}  // namespace smbfleet::collector::changes

#include "collector/changes/approval.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::changes {
namespace {

using smbfleet::v1::ChangeState;
using ::testing::HasSubstr;

constexpr ChangeState kProposed = smbfleet::v1::CHANGE_STATE_PROPOSED;
constexpr ChangeState kApproved = smbfleet::v1::CHANGE_STATE_APPROVED;
constexpr ChangeState kRollingOut = smbfleet::v1::CHANGE_STATE_ROLLING_OUT;
constexpr ChangeState kHalted = smbfleet::v1::CHANGE_STATE_HALTED;
constexpr ChangeState kCompleted = smbfleet::v1::CHANGE_STATE_COMPLETED;
constexpr ChangeState kRejected = smbfleet::v1::CHANGE_STATE_REJECTED;
constexpr ChangeState kRolledBack = smbfleet::v1::CHANGE_STATE_ROLLED_BACK;
constexpr ChangeState kExpired = smbfleet::v1::CHANGE_STATE_EXPIRED;

ChangeFacts Change(ChangeState state) {
  ChangeFacts change;
  change.id = "c-42";
  change.state = state;
  change.proposer = "pat";
  change.host_count = 1;
  return change;
}

const Actor kPat{"pat", Role::kApprover};  // the proposer, who is also an approver
const Actor kAnn{"ann", Role::kApprover};
const Actor kBob{"bob", Role::kApprover};
const Actor kVic{"vic", Role::kViewer};
const Actor kPia{"pia", Role::kProposer};
const Actor kAda{"ada", Role::kAdmin};

TEST(CheckActionTest, WhoMayDoWhatInWhichState) {
  struct Case {
    ChangeAction action;
    ChangeState state;
    Actor actor;
    std::optional<Refusal> refusal;  // nullopt: allowed
    std::string message;             // a part of the refusal's message
  };
  const std::vector<Case> cases = {
      // approve: approvers, PROPOSED, never the proposer.
      {ChangeAction::kApprove, kProposed, kAnn, std::nullopt, ""},
      {ChangeAction::kApprove, kProposed, kPat, Refusal::kOwnChange,
       "change c-42: pat may not approve their own proposal (four-eyes"},
      {ChangeAction::kApprove, kProposed, kVic, Refusal::kWrongRole,
       "change c-42: vic (viewer) may not approve: needs the approver role"},
      {ChangeAction::kApprove, kProposed, kPia, Refusal::kWrongRole, "pia (proposer)"},
      {ChangeAction::kApprove, kProposed, kAda, Refusal::kWrongRole, "ada (admin)"},
      {ChangeAction::kApprove, kRejected, kAnn, Refusal::kWrongState,
       "change c-42: cannot approve: it is REJECTED (only PROPOSED); asked by ann"},
      {ChangeAction::kApprove, kApproved, kAnn, Refusal::kWrongState,
       "cannot approve: it is APPROVED"},
      {ChangeAction::kApprove, kRollingOut, kAnn, Refusal::kWrongState, "ROLLING_OUT"},
      // The role is checked before the state: a viewer learns nothing about the workflow.
      {ChangeAction::kApprove, kRejected, kVic, Refusal::kWrongRole, "needs the approver role"},
      // reject: approvers, PROPOSED or APPROVED, never the proposer.
      {ChangeAction::kReject, kProposed, kAnn, std::nullopt, ""},
      {ChangeAction::kReject, kApproved, kAnn, std::nullopt, ""},
      {ChangeAction::kReject, kProposed, kPat, Refusal::kOwnChange, "pat may not reject"},
      {ChangeAction::kReject, kRollingOut, kAnn, Refusal::kWrongState,
       "cannot reject: it is ROLLING_OUT (only PROPOSED, APPROVED)"},
      {ChangeAction::kReject, kProposed, kPia, Refusal::kWrongRole,
       "pia (proposer) may not reject"},
      // halt: anyone who works on changes, while it may still dispatch.
      {ChangeAction::kHalt, kRollingOut, kPia, std::nullopt, ""},
      {ChangeAction::kHalt, kRollingOut, kPat, std::nullopt, ""},
      {ChangeAction::kHalt, kApproved, kAda, std::nullopt, ""},
      {ChangeAction::kHalt, kRollingOut, kVic, Refusal::kWrongRole,
       "vic (viewer) may not halt: needs the proposer or approver or admin role"},
      {ChangeAction::kHalt, kHalted, kAnn, Refusal::kWrongState, "cannot halt: it is HALTED"},
      {ChangeAction::kHalt, kCompleted, kAnn, Refusal::kWrongState, "COMPLETED"},
      // resume: approvers, HALTED; the proposer may (four-eyes guarded the approval).
      {ChangeAction::kResume, kHalted, kAnn, std::nullopt, ""},
      {ChangeAction::kResume, kHalted, kPat, std::nullopt, ""},
      {ChangeAction::kResume, kHalted, kPia, Refusal::kWrongRole, "may not resume"},
      {ChangeAction::kResume, kRollingOut, kAnn, Refusal::kWrongState,
       "cannot resume: it is ROLLING_OUT (only HALTED)"},
      // rollback: approvers, once something may have been applied.
      {ChangeAction::kRollback, kRollingOut, kAnn, std::nullopt, ""},
      {ChangeAction::kRollback, kHalted, kAnn, std::nullopt, ""},
      {ChangeAction::kRollback, kCompleted, kAnn, std::nullopt, ""},
      {ChangeAction::kRollback, kExpired, kAnn, std::nullopt, ""},
      {ChangeAction::kRollback, kProposed, kAnn, Refusal::kWrongState,
       "cannot roll back: it is PROPOSED"},
      {ChangeAction::kRollback, kRolledBack, kAnn, Refusal::kWrongState, "ROLLED_BACK"},
      {ChangeAction::kRollback, kHalted, kAda, Refusal::kWrongRole,
       "ada (admin) may not roll back"},
  };
  for (const Case& c : cases) {
    std::string what = std::string(ActionName(c.action)) + " " +
                       smbfleet::v1::ChangeState_Name(c.state) + " by " + c.actor.name;
    absl::Status status = CheckAction(c.action, Change(c.state), c.actor);
    EXPECT_EQ(RefusalOf(status), c.refusal) << what << ": " << status;
    if (!c.refusal.has_value()) {
      EXPECT_TRUE(status.ok()) << what << ": " << status;
      continue;
    }
    // The CLI's exit codes: 4 for the role, 5 for the workflow.
    EXPECT_EQ(status.code(), *c.refusal == Refusal::kWrongRole
                                 ? absl::StatusCode::kPermissionDenied
                                 : absl::StatusCode::kFailedPrecondition)
        << what;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message)) << what;
  }
}

TEST(RequiredApprovalsTest, TwoWhenTheImpactRefusesClientsOrManyHosts) {
  struct Case {
    int hosts;
    int refused_clients;
    int want;
  };
  ApprovalPolicy policy;
  policy.max_hosts_single_approval = 3;
  for (const Case& c : std::vector<Case>{{1, 0, 1}, {3, 0, 1}, {4, 0, 2}, {1, 1, 2}, {4, 5, 2}}) {
    ChangeFacts change = Change(kProposed);
    change.host_count = c.hosts;
    change.refused_clients = c.refused_clients;
    EXPECT_EQ(RequiredApprovals(change, policy), c.want)
        << c.hosts << " hosts, " << c.refused_clients << " refused clients";
  }
}

TEST(ApproveTest, CountsDistinctApproversTowardsTheRequirement) {
  ApprovalPolicy policy;
  ChangeFacts change = Change(kProposed);
  change.refused_clients = 1;  // needs two

  absl::StatusOr<ApprovalOutcome> first = Approve(change, kAnn, policy);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->counted);
  EXPECT_EQ(first->approvals, 1);
  EXPECT_EQ(first->required, 2);
  EXPECT_FALSE(first->Complete());

  change.approvers = {"ann"};
  absl::StatusOr<ApprovalOutcome> again = Approve(change, kAnn, policy);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->counted);
  EXPECT_EQ(again->approvals, 1);
  EXPECT_FALSE(again->Complete());

  absl::StatusOr<ApprovalOutcome> second = Approve(change, kBob, policy);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->counted);
  EXPECT_EQ(second->approvals, 2);
  EXPECT_TRUE(second->Complete());

  ChangeFacts simple = Change(kProposed);
  absl::StatusOr<ApprovalOutcome> one = Approve(simple, kBob, policy);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->Complete());
}

// The approvers signed the number decided at proposal (it is in the payload): the collector's
// threshold changing afterwards neither raises nor lowers it.
TEST(ApproveTest, TheRequirementDecidedAtProposalHoldsWhateverThePolicySaysNow) {
  ApprovalPolicy policy;
  policy.max_hosts_single_approval = 1;
  ChangeFacts change = Change(kProposed);
  change.host_count = 5;  // the policy now says two
  change.approvals_required = 1;
  absl::StatusOr<ApprovalOutcome> one = Approve(change, kAnn, policy);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->required, 1);
  EXPECT_TRUE(one->Complete());

  change.host_count = 1;  // the policy now says one
  change.approvals_required = 2;
  absl::StatusOr<ApprovalOutcome> two = Approve(change, kAnn, policy);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->required, 2);
  EXPECT_FALSE(two->Complete());
}

TEST(ApproveTest, OwnApprovalAndWrongRoleAreRefusedBeforeAnythingCounts) {
  ChangeFacts change = Change(kProposed);
  absl::StatusOr<ApprovalOutcome> own = Approve(change, kPat, {});
  EXPECT_EQ(RefusalOf(own.status()), Refusal::kOwnChange);
  EXPECT_EQ(own.status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<ApprovalOutcome> viewer = Approve(change, kVic, {});
  EXPECT_EQ(RefusalOf(viewer.status()), Refusal::kWrongRole);
  EXPECT_EQ(viewer.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(ApproveTest, AStalePlanIsRefusedNamingHostAndSetting) {
  ChangeFacts change = Change(kProposed);
  change.stale = StaleSetting{"fs1", "server.requireSigning", "", "false", "true"};
  absl::StatusOr<ApprovalOutcome> got = Approve(change, kAnn, {});
  EXPECT_EQ(RefusalOf(got.status()), Refusal::kStalePlan);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(got.status().message(),
            "change c-42: approval by ann refused, the plan is stale: host fs1: "
            "server.requireSigning is now \"true\", the plan expected \"false\"; propose it again");
}

TEST(RefusalOfTest, OtherStatusesAreNoRefusal) {
  EXPECT_EQ(RefusalOf(absl::OkStatus()), std::nullopt);
  EXPECT_EQ(RefusalOf(absl::FailedPreconditionError("x")), std::nullopt);
}

TEST(RoleTest, NamesRoundTrip) {
  for (Role role : {Role::kViewer, Role::kProposer, Role::kApprover, Role::kAdmin}) {
    EXPECT_EQ(*ParseRole(RoleName(role)), role);
  }
  EXPECT_EQ(ParseRole("root").status().message(),
            "role \"root\": not one of viewer, proposer, approver, admin");
}

}  // namespace
}  // namespace smbfleet::collector::changes

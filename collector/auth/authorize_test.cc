#include "collector/auth/authorize.h"

#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;

// What a certificate says: name (CN), kind (first OU), role (second OU).
PeerIdentity Id(const std::string& name, const std::string& kind, const std::string& role) {
  PeerIdentity id;
  id.name = name;
  id.common_name = name;
  id.kind = kind;
  id.role = role;
  return id;
}

constexpr Permission kAgentCalls[] = {Permission::kReport, Permission::kWatch,
                                      Permission::kAckChange};
constexpr Permission kAdminCalls[] = {Permission::kReadFleet, Permission::kRequestReport};

Principal Agent() { return PrincipalFromIdentity(Id("fs01", "agent", "")); }
Principal Operator() { return PrincipalFromIdentity(Id("alice", "operator", "viewer")); }
// Nudging a host needs more than a viewer.
Principal Nudger() { return PrincipalFromIdentity(Id("alice", "operator", "proposer")); }

TEST(PrincipalTest, TakesNameKindAndRoleFromTheCertificate) {
  Principal op = Operator();
  EXPECT_EQ(op.name, "alice");
  EXPECT_EQ(op.kind, PrincipalKind::kOperator);
  EXPECT_THAT(op.roles, ::testing::ElementsAre("viewer"));
  EXPECT_EQ(Agent().kind, PrincipalKind::kAgent);
  EXPECT_TRUE(Agent().roles.empty());
  EXPECT_EQ(PrincipalFromIdentity(Id("c1", "collector", "")).kind, PrincipalKind::kUnknown);
}

TEST(AuthorizeTest, AgentsMakeAgentCallsOnly) {
  for (Permission p : kAgentCalls) EXPECT_TRUE(Authorize(Agent(), p).ok()) << PermissionName(p);
  for (Permission p : kAdminCalls) {
    auto s = Authorize(Agent(), p);
    EXPECT_TRUE(absl::IsPermissionDenied(s)) << PermissionName(p);
    EXPECT_THAT(std::string(s.message()), HasSubstr("needs 'operator'"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("'fs01'"));
  }
}

TEST(AuthorizeTest, OperatorsMakeAdminCallsOnly) {
  for (Permission p : kAdminCalls) {
    EXPECT_TRUE(Authorize(Nudger(), p).ok()) << PermissionName(p);
  }
  for (Permission p : kAgentCalls) {
    auto s = Authorize(Nudger(), p);
    EXPECT_TRUE(absl::IsPermissionDenied(s)) << PermissionName(p);
    EXPECT_THAT(std::string(s.message()), HasSubstr("needs 'agent'"));
  }
}

TEST(AuthorizeTest, UnknownKindsMayDoNothing) {
  Principal other = PrincipalFromIdentity(Id("c1", "collector", ""));
  for (Permission p : kAgentCalls) EXPECT_FALSE(Authorize(other, p).ok());
  for (Permission p : kAdminCalls) EXPECT_FALSE(Authorize(other, p).ok());
  EXPECT_THAT(std::string(Authorize(other, Permission::kReport).message()),
              HasSubstr("is for 'collector'"));
}

Principal WithRole(const std::string& role) {
  return PrincipalFromIdentity(Id("bob", "operator", role));
}

TEST(AuthorizeTest, ChangeManagementGoesByRole) {
  struct Case {
    Permission permission;
    std::vector<std::string> allowed;
  };
  const Case cases[] = {
      {Permission::kReadChanges, {"viewer", "proposer", "approver", "admin"}},
      {Permission::kProposeChange, {"proposer", "admin"}},
      {Permission::kApproveChange, {"approver"}},
      {Permission::kHaltChange, {"proposer", "approver", "admin"}},
      {Permission::kRequestWaiver, {"proposer", "admin"}},
      {Permission::kApproveWaiver, {"approver"}},
      {Permission::kRevokeWaiver, {"approver", "admin"}},
      {Permission::kCalibrateCostModel, {"approver", "admin"}},
  };
  for (const Case& c : cases) {
    for (const std::string role : {"viewer", "proposer", "approver", "admin", "", "root"}) {
      bool want = std::find(c.allowed.begin(), c.allowed.end(), role) != c.allowed.end();
      absl::Status s = Authorize(WithRole(role), c.permission);
      EXPECT_EQ(s.ok(), want) << PermissionName(c.permission) << " as '" << role << "': " << s;
      if (!want) {
        EXPECT_TRUE(absl::IsPermissionDenied(s));
        EXPECT_THAT(std::string(s.message()), HasSubstr("needs role"));
      }
    }
    EXPECT_FALSE(Authorize(Agent(), c.permission).ok());
  }
  // Reading the fleet needs a role too: a certificate without one may only ask who it is.
  EXPECT_TRUE(absl::IsPermissionDenied(Authorize(WithRole(""), Permission::kReadFleet)));
}

TEST(AuthorizeTest, ActorCarriesTheRole) {
  auto approver = ActorOf(WithRole("approver"));
  ASSERT_TRUE(approver.ok());
  EXPECT_EQ(approver->name, "bob");
  EXPECT_EQ(approver->role, changes::Role::kApprover);
  EXPECT_TRUE(absl::IsPermissionDenied(ActorOf(WithRole("")).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(ActorOf(Agent()).status()));
}

constexpr Permission kEveryPermission[] = {
    Permission::kReport,
    Permission::kWatch,
    Permission::kAckChange,
    Permission::kReadFleet,
    Permission::kRequestReport,
    Permission::kReadChanges,
    Permission::kProposeChange,
    Permission::kApproveChange,
    Permission::kHaltChange,
    Permission::kRequestWaiver,
    Permission::kApproveWaiver,
    Permission::kRevokeWaiver,
    Permission::kCalibrateCostModel,
    Permission::kEnroll,
    Permission::kRenewCertificate,
    Permission::kWhoAmI,
    Permission::kManageApiTokens,
    Permission::kManageEnrollment,
    Permission::kReadCertificates,
    Permission::kRevokeCertificate,
    Permission::kSetHostLabels,
    Permission::kReadApproverKeys,
    Permission::kManageApproverKeys,
    Permission::kPublishApproverSet,
};

TEST(AuthorizeTest, WithoutARoleOnlyWhoAmI) {
  for (Permission p : kEveryPermission) {
    absl::Status s = Authorize(WithRole(""), p);
    EXPECT_EQ(s.ok(), p == Permission::kWhoAmI) << PermissionName(p) << ": " << s;
    if (!s.ok()) {
      EXPECT_TRUE(absl::IsPermissionDenied(s)) << PermissionName(p);
    }
  }
  EXPECT_THAT(std::string(Authorize(WithRole(""), Permission::kReadFleet).message()),
              HasSubstr("'bob' has no role"));
}

TEST(AuthorizeTest, ViewersOnlyRead) {
  const Permission reads[] = {Permission::kReadFleet, Permission::kReadChanges,
                              Permission::kReadCertificates, Permission::kReadApproverKeys,
                              Permission::kWhoAmI};
  for (Permission p : kEveryPermission) {
    bool read = std::find(std::begin(reads), std::end(reads), p) != std::end(reads);
    EXPECT_EQ(Authorize(WithRole("viewer"), p).ok(), read) << PermissionName(p);
  }
}

TEST(AuthorizeTest, NudgingNeedsARoleThatActsOnTheFleet) {
  EXPECT_FALSE(Authorize(WithRole("viewer"), Permission::kRequestReport).ok());
  for (const char* role : {"proposer", "approver", "admin"}) {
    EXPECT_TRUE(Authorize(WithRole(role), Permission::kRequestReport).ok()) << role;
  }
}

Principal WithRoles(std::vector<std::string> roles) {
  PeerIdentity id{"max", "operator", roles.empty() ? "" : roles[0], roles};
  return PrincipalFromIdentity(id);
}

TEST(AuthorizeTest, AnyOfSeveralRolesGrants) {
  Principal max = WithRoles({"proposer", "approver"});
  EXPECT_THAT(max.roles, ::testing::ElementsAre("proposer", "approver"));
  for (Permission p : kEveryPermission) {
    bool either =
        Authorize(WithRole("proposer"), p).ok() || Authorize(WithRole("approver"), p).ok();
    EXPECT_EQ(Authorize(max, p).ok(), either) << PermissionName(p);
  }
  // An unknown role next to a known one takes nothing away.
  EXPECT_TRUE(Authorize(WithRoles({"root", "viewer"}), Permission::kReadFleet).ok());
  EXPECT_FALSE(Authorize(WithRoles({"root", "viewer"}), Permission::kProposeChange).ok());
}

TEST(AuthorizeTest, ActorTakesTheRoleTheCallNeeds) {
  Principal max = WithRoles({"viewer", "proposer", "approver"});
  auto proposing = ActorOf(max, Permission::kProposeChange);
  ASSERT_TRUE(proposing.ok()) << proposing.status();
  EXPECT_EQ(proposing->role, changes::Role::kProposer);
  auto approving = ActorOf(max, Permission::kApproveChange);
  ASSERT_TRUE(approving.ok()) << approving.status();
  EXPECT_EQ(approving->role, changes::Role::kApprover);
  EXPECT_EQ(approving->name, "max");
  EXPECT_EQ(ActorOf(max)->role, changes::Role::kApprover);  // reading: the strongest held
  EXPECT_TRUE(absl::IsPermissionDenied(
      ActorOf(WithRoles({"viewer", "proposer"}), Permission::kApproveChange).status()));
}

// Four-eyes with several roles: the person who proposed, acting as approver, is still the
// proposer.
TEST(AuthorizeTest, AProposerWhoIsAlsoAnApproverCannotApproveTheirOwnChange) {
  Principal max = WithRoles({"proposer", "approver"});
  auto actor = ActorOf(max, Permission::kApproveChange);
  ASSERT_TRUE(actor.ok());
  changes::ChangeFacts change;
  change.id = "c1";
  change.state = smbfleet::v1::CHANGE_STATE_PROPOSED;
  change.proposer = "max";
  change.host_count = 1;
  auto own = changes::Approve(change, *actor, {});
  EXPECT_EQ(changes::RefusalOf(own.status()), changes::Refusal::kOwnChange) << own.status();
  for (auto action : {changes::ChangeAction::kApprove, changes::ChangeAction::kReject}) {
    EXPECT_EQ(changes::RefusalOf(changes::CheckAction(action, change, *actor)),
              changes::Refusal::kOwnChange);
  }
  change.proposer = "pat";
  EXPECT_TRUE(changes::Approve(change, *actor, {}).ok());
}

}  // namespace
}  // namespace smbfleet::collector

#include "collector/auth/authorize.h"

#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;

constexpr Permission kAgentCalls[] = {Permission::kReport, Permission::kWatch,
                                      Permission::kAckChange};
constexpr Permission kAdminCalls[] = {Permission::kReadFleet, Permission::kRequestReport};

Principal Agent() { return PrincipalFromIdentity({"fs01", "agent", ""}); }
Principal Operator() { return PrincipalFromIdentity({"alice", "operator", "viewer"}); }

TEST(PrincipalTest, TakesNameKindAndRoleFromTheCertificate) {
  Principal op = Operator();
  EXPECT_EQ(op.name, "alice");
  EXPECT_EQ(op.kind, PrincipalKind::kOperator);
  EXPECT_THAT(op.roles, ::testing::ElementsAre("viewer"));
  EXPECT_EQ(Agent().kind, PrincipalKind::kAgent);
  EXPECT_TRUE(Agent().roles.empty());
  EXPECT_EQ(PrincipalFromIdentity({"c1", "collector", ""}).kind, PrincipalKind::kUnknown);
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
    EXPECT_TRUE(Authorize(Operator(), p).ok()) << PermissionName(p);
  }
  for (Permission p : kAgentCalls) {
    auto s = Authorize(Operator(), p);
    EXPECT_TRUE(absl::IsPermissionDenied(s)) << PermissionName(p);
    EXPECT_THAT(std::string(s.message()), HasSubstr("needs 'agent'"));
  }
}

TEST(AuthorizeTest, UnknownKindsMayDoNothing) {
  Principal other = PrincipalFromIdentity({"c1", "collector", ""});
  for (Permission p : kAgentCalls) EXPECT_FALSE(Authorize(other, p).ok());
  for (Permission p : kAdminCalls) EXPECT_FALSE(Authorize(other, p).ok());
  EXPECT_THAT(std::string(Authorize(other, Permission::kReport).message()),
              HasSubstr("is for 'collector'"));
}

Principal WithRole(const std::string& role) {
  return PrincipalFromIdentity({"bob", "operator", role});
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
  // Reading the fleet keeps working without a role.
  EXPECT_TRUE(Authorize(WithRole(""), Permission::kReadFleet).ok());
}

TEST(AuthorizeTest, ActorCarriesTheRole) {
  auto approver = ActorOf(WithRole("approver"));
  ASSERT_TRUE(approver.ok());
  EXPECT_EQ(approver->name, "bob");
  EXPECT_EQ(approver->role, changes::Role::kApprover);
  EXPECT_TRUE(absl::IsPermissionDenied(ActorOf(WithRole("")).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(ActorOf(Agent()).status()));
}

}  // namespace
}  // namespace smbfleet::collector

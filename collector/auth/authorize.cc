#include "collector/auth/authorize.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace smbfleet::collector {
namespace {

using changes::Role;

using RoleMask = unsigned;
constexpr RoleMask Bit(Role r) { return 1u << static_cast<unsigned>(r); }
constexpr RoleMask kViewer = Bit(Role::kViewer);
constexpr RoleMask kProposer = Bit(Role::kProposer);
constexpr RoleMask kApprover = Bit(Role::kApprover);
constexpr RoleMask kAdmin = Bit(Role::kAdmin);
constexpr RoleMask kAnyRole = kViewer | kProposer | kApprover | kAdmin;

// `roles`: the operator roles a permission needs; 0 = any operator, whatever its role.
struct Grant {
  PrincipalKind kind;
  Permission permission;
  RoleMask roles;
};

// Who may do what. Agents act for their own host only (the service takes the host from the
// principal); operators read the fleet whatever their role; change management goes by role
// (viewer < proposer; approver and admin are separate: running the collector does not make one
// a change manager), and the four-eyes rules live in collector/changes/approval.h.
constexpr Grant kGrants[] = {
    {PrincipalKind::kAgent, Permission::kReport, 0},
    {PrincipalKind::kAgent, Permission::kWatch, 0},
    {PrincipalKind::kAgent, Permission::kAckChange, 0},
    {PrincipalKind::kOperator, Permission::kReadFleet, 0},
    {PrincipalKind::kOperator, Permission::kRequestReport, 0},
    {PrincipalKind::kOperator, Permission::kReadChanges, kAnyRole},
    {PrincipalKind::kOperator, Permission::kProposeChange, kProposer | kAdmin},
    {PrincipalKind::kOperator, Permission::kApproveChange, kApprover},
    {PrincipalKind::kOperator, Permission::kHaltChange, kProposer | kApprover | kAdmin},
    {PrincipalKind::kOperator, Permission::kRequestWaiver, kProposer | kAdmin},
    {PrincipalKind::kOperator, Permission::kApproveWaiver, kApprover},
    {PrincipalKind::kOperator, Permission::kRevokeWaiver, kApprover | kAdmin},
    {PrincipalKind::kAnonymous, Permission::kEnroll, 0},
    {PrincipalKind::kAgent, Permission::kRenewCertificate, 0},
    {PrincipalKind::kOperator, Permission::kWhoAmI, 0},
    {PrincipalKind::kOperator, Permission::kManageApiTokens, kAdmin},
    {PrincipalKind::kOperator, Permission::kManageEnrollment, kAdmin},
    {PrincipalKind::kOperator, Permission::kReadCertificates, kAnyRole},
    {PrincipalKind::kOperator, Permission::kRevokeCertificate, kAdmin},
    {PrincipalKind::kOperator, Permission::kSetHostLabels, kAdmin},
    {PrincipalKind::kOperator, Permission::kReadApproverKeys, kAnyRole},
    {PrincipalKind::kOperator, Permission::kManageApproverKeys, kAdmin},
    {PrincipalKind::kOperator, Permission::kPublishApproverSet, kAdmin},
};

absl::string_view KindName(PrincipalKind kind) {
  switch (kind) {
    case PrincipalKind::kAgent:
      return "agent";
    case PrincipalKind::kOperator:
      return "operator";
    case PrincipalKind::kAnonymous:
      return "anonymous";
    case PrincipalKind::kUnknown:
      break;
  }
  return "unknown";
}

const Grant* GrantFor(Permission permission) {
  for (const Grant& g : kGrants) {
    if (g.permission == permission) return &g;
  }
  return nullptr;
}

bool HasRole(const Principal& principal, RoleMask roles) {
  for (const std::string& name : principal.roles) {
    absl::StatusOr<Role> role = changes::ParseRole(name);
    if (role.ok() && (roles & Bit(*role)) != 0) return true;
  }
  return false;
}

std::string RoleList(RoleMask roles) {
  std::vector<std::string> names;
  for (Role r : {Role::kViewer, Role::kProposer, Role::kApprover, Role::kAdmin}) {
    if ((roles & Bit(r)) != 0) names.emplace_back(changes::RoleName(r));
  }
  return absl::StrJoin(names, "' or '");
}

}  // namespace

absl::string_view PermissionName(Permission p) {
  switch (p) {
    case Permission::kReport:
      return "report";
    case Permission::kWatch:
      return "watch";
    case Permission::kAckChange:
      return "ack-change";
    case Permission::kReadFleet:
      return "read-fleet";
    case Permission::kRequestReport:
      return "request-report";
    case Permission::kReadChanges:
      return "read-changes";
    case Permission::kProposeChange:
      return "propose-change";
    case Permission::kApproveChange:
      return "approve-change";
    case Permission::kHaltChange:
      return "halt-change";
    case Permission::kRequestWaiver:
      return "request-waiver";
    case Permission::kApproveWaiver:
      return "approve-waiver";
    case Permission::kRevokeWaiver:
      return "revoke-waiver";
    case Permission::kEnroll:
      return "enroll";
    case Permission::kRenewCertificate:
      return "renew-certificate";
    case Permission::kWhoAmI:
      return "whoami";
    case Permission::kManageApiTokens:
      return "manage-api-tokens";
    case Permission::kManageEnrollment:
      return "manage-enrollment";
    case Permission::kReadCertificates:
      return "read-certificates";
    case Permission::kRevokeCertificate:
      return "revoke-certificate";
    case Permission::kSetHostLabels:
      return "set-host-labels";
    case Permission::kReadApproverKeys:
      return "read-approver-keys";
    case Permission::kManageApproverKeys:
      return "manage-approver-keys";
    case Permission::kPublishApproverSet:
      return "publish-approver-set";
  }
  return "unknown";
}

Principal PrincipalFromIdentity(const PeerIdentity& id) {
  Principal p;
  p.name = id.common_name;
  p.kind_text = id.kind;
  if (id.kind == KindName(PrincipalKind::kAgent)) {
    p.kind = PrincipalKind::kAgent;
  } else if (id.kind == KindName(PrincipalKind::kOperator)) {
    p.kind = PrincipalKind::kOperator;
  }
  if (!id.role.empty()) p.roles.push_back(id.role);
  return p;
}

absl::StatusOr<Principal> PrincipalOf(const grpc::ServerContextBase& context) {
  ASSIGN_OR_RETURN(PeerIdentity id, PeerIdentityOf(context));
  return PrincipalFromIdentity(id);
}

absl::Status Authorize(const Principal& principal, Permission permission) {
  const Grant* g = GrantFor(permission);
  if (g == nullptr || g->kind != principal.kind) {
    return absl::PermissionDeniedError(absl::StrCat(
        "certificate of '", principal.name, "' is for '", principal.kind_text, "', this call (",
        PermissionName(permission), ") needs '", g == nullptr ? "nobody" : KindName(g->kind), "'"));
  }
  if (g->roles == 0 || HasRole(principal, g->roles)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "operator '", principal.name, "' has role '", absl::StrJoin(principal.roles, ","),
      "', this call (", PermissionName(permission), ") needs role '", RoleList(g->roles), "'"));
}

absl::StatusOr<changes::Actor> ActorOf(const Principal& principal) {
  RETURN_IF_ERROR(Authorize(principal, Permission::kReadChanges));
  changes::Actor actor;
  actor.name = principal.name;
  bool found = false;
  // The strongest role for the change rules: approver over admin over proposer over viewer.
  for (Role r : {Role::kApprover, Role::kAdmin, Role::kProposer, Role::kViewer}) {
    if (!found && HasRole(principal, Bit(r))) {
      actor.role = r;
      found = true;
    }
  }
  return actor;
}

}  // namespace smbfleet::collector

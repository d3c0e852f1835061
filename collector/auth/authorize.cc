#include "collector/auth/authorize.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
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

// `roles`: the operator roles of which one grants the permission; 0 = any principal of the kind,
// with or without a role (agents, enrollment, WhoAmI).
struct Grant {
  PrincipalKind kind;
  Permission permission;
  RoleMask roles;
};

// Who may do what (docs/roles.md is this table; a test keeps them equal). Agents act for their
// own host only (the service takes the host from the principal). Operators need a role for
// everything but WhoAmI: viewers read; nudging a host costs it a collection, so it needs a role
// that acts on the fleet; change management goes by role (approver and admin are separate:
// running the collector does not make one a change manager), and the four-eyes rules live in
// collector/changes/approval.h; identity and trust are the admin's.
constexpr Grant kGrants[] = {
    {PrincipalKind::kAgent, Permission::kReport, 0},
    {PrincipalKind::kAgent, Permission::kWatch, 0},
    {PrincipalKind::kAgent, Permission::kAckChange, 0},
    {PrincipalKind::kOperator, Permission::kReadFleet, kAnyRole},
    {PrincipalKind::kOperator, Permission::kRequestReport, kProposer | kApprover | kAdmin},
    {PrincipalKind::kOperator, Permission::kReadChanges, kAnyRole},
    {PrincipalKind::kOperator, Permission::kProposeChange, kProposer | kAdmin},
    {PrincipalKind::kOperator, Permission::kApproveChange, kApprover},
    {PrincipalKind::kOperator, Permission::kHaltChange, kProposer | kApprover | kAdmin},
    {PrincipalKind::kOperator, Permission::kRequestWaiver, kProposer | kAdmin},
    {PrincipalKind::kOperator, Permission::kApproveWaiver, kApprover},
    {PrincipalKind::kOperator, Permission::kRevokeWaiver, kApprover | kAdmin},
    {PrincipalKind::kOperator, Permission::kCalibrateCostModel, kApprover | kAdmin},
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

constexpr MethodPermission kMethods[] = {
    {"smbfleet.v1.AgentService.Report", Permission::kReport},
    {"smbfleet.v1.AgentService.Watch", Permission::kWatch},
    {"smbfleet.v1.AgentService.AckChange", Permission::kAckChange},
    {"smbfleet.v1.EnrollmentService.Enroll", Permission::kEnroll},
    {"smbfleet.v1.EnrollmentService.RenewCertificate", Permission::kRenewCertificate},
    {"smbfleet.v1.AdminService.ListHosts", Permission::kReadFleet},
    {"smbfleet.v1.AdminService.GetHost", Permission::kReadFleet},
    {"smbfleet.v1.AdminService.RequestReport", Permission::kRequestReport},
    {"smbfleet.v1.AdminService.GetCompliance", Permission::kReadFleet},
    {"smbfleet.v1.AdminService.ListFindings", Permission::kReadFleet},
    {"smbfleet.v1.AdminService.ProposeChange", Permission::kProposeChange},
    {"smbfleet.v1.AdminService.ListChanges", Permission::kReadChanges},
    {"smbfleet.v1.AdminService.GetChange", Permission::kReadChanges},
    {"smbfleet.v1.AdminService.ApproveChange", Permission::kApproveChange},
    {"smbfleet.v1.AdminService.RejectChange", Permission::kApproveChange},
    {"smbfleet.v1.AdminService.HaltChange", Permission::kHaltChange},
    {"smbfleet.v1.AdminService.ResumeChange", Permission::kApproveChange},
    {"smbfleet.v1.AdminService.RollbackChange", Permission::kApproveChange},
    {"smbfleet.v1.AdminService.ListAudit", Permission::kReadChanges},
    {"smbfleet.v1.AdminService.CostModelCalibration", Permission::kReadChanges},
    {"smbfleet.v1.AdminService.SaveCostModelCalibration", Permission::kCalibrateCostModel},
    {"smbfleet.v1.AdminService.ListCostModelCalibrations", Permission::kReadChanges},
    {"smbfleet.v1.AdminService.ListWaivers", Permission::kReadChanges},
    {"smbfleet.v1.AdminService.RequestWaiver", Permission::kRequestWaiver},
    {"smbfleet.v1.AdminService.ApproveWaiver", Permission::kApproveWaiver},
    {"smbfleet.v1.AdminService.RevokeWaiver", Permission::kRevokeWaiver},
    {"smbfleet.v1.AdminService.WhoAmI", Permission::kWhoAmI},
    {"smbfleet.v1.AdminService.CreateApiToken", Permission::kManageApiTokens},
    {"smbfleet.v1.AdminService.ListApiTokens", Permission::kManageApiTokens},
    {"smbfleet.v1.AdminService.RevokeApiToken", Permission::kManageApiTokens},
    {"smbfleet.v1.AdminService.CreateEnrollmentToken", Permission::kManageEnrollment},
    {"smbfleet.v1.AdminService.ListEnrollmentTokens", Permission::kManageEnrollment},
    {"smbfleet.v1.AdminService.RevokeEnrollmentToken", Permission::kManageEnrollment},
    {"smbfleet.v1.AdminService.ListCertificates", Permission::kReadCertificates},
    {"smbfleet.v1.AdminService.RevokeCertificate", Permission::kRevokeCertificate},
    {"smbfleet.v1.AdminService.ListRevocations", Permission::kReadCertificates},
    {"smbfleet.v1.AdminService.SetHostLabels", Permission::kSetHostLabels},
    {"smbfleet.v1.AdminService.RegisterApproverKey", Permission::kManageApproverKeys},
    {"smbfleet.v1.AdminService.ListApproverKeys", Permission::kReadApproverKeys},
    {"smbfleet.v1.AdminService.RevokeApproverKey", Permission::kManageApproverKeys},
    {"smbfleet.v1.AdminService.PublishApproverSet", Permission::kPublishApproverSet},
    {"smbfleet.v1.AdminService.GetApproverSet", Permission::kReadApproverKeys},
    {"smbfleet.v1.AdminService.GetFleetOverview", Permission::kReadFleet},
    {"smbfleet.v1.AdminService.GetReadiness", Permission::kReadFleet},
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

// The strongest of the principal's roles within `roles`: approver over admin over proposer over
// viewer.
std::optional<Role> StrongestRole(const Principal& principal, RoleMask roles) {
  for (Role r : {Role::kApprover, Role::kAdmin, Role::kProposer, Role::kViewer}) {
    if ((roles & Bit(r)) != 0 && HasRole(principal, Bit(r))) return r;
  }
  return std::nullopt;
}

}  // namespace

absl::Span<const MethodPermission> MethodPermissions() { return kMethods; }

absl::StatusOr<Permission> PermissionOfMethod(absl::string_view full_name) {
  for (const MethodPermission& m : kMethods) {
    if (m.method == full_name) return m.permission;
  }
  return absl::NotFoundError(
      absl::StrCat("method '", full_name, "' has no entry in the authorization table"));
}

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
    case Permission::kCalibrateCostModel:
      return "calibrate-cost-model";
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

Principal Principal::Anonymous() {
  Principal p;
  p.kind = PrincipalKind::kAnonymous;
  p.kind_text = "anonymous";
  return p;
}

Principal PrincipalFromIdentity(const PeerIdentity& id) {
  Principal p;
  p.name = id.name.empty() ? absl::AsciiStrToLower(id.common_name) : id.name;
  p.kind_text = id.kind;
  if (id.kind == KindName(PrincipalKind::kAgent)) {
    p.kind = PrincipalKind::kAgent;
  } else if (id.kind == KindName(PrincipalKind::kOperator)) {
    p.kind = PrincipalKind::kOperator;
  }
  if (!id.roles.empty()) {
    p.roles = id.roles;
  } else if (!id.role.empty()) {
    p.roles.push_back(id.role);
  }
  p.serial = id.serial;
  p.fingerprint = id.fingerprint;
  p.expires_unix = id.not_after_unix;
  return p;
}

absl::Status Authorize(const Principal& principal, Permission permission) {
  const Grant* g = GrantFor(permission);
  if (principal.kind == PrincipalKind::kAnonymous &&
      (g == nullptr || g->kind != PrincipalKind::kAnonymous)) {
    return absl::UnauthenticatedError(absl::StrCat(
        "no client certificate or bearer token was presented; this call (",
        PermissionName(permission), ") needs '", g == nullptr ? "nobody" : KindName(g->kind), "'"));
  }
  if (g == nullptr || g->kind != principal.kind) {
    return absl::PermissionDeniedError(absl::StrCat(
        "certificate of '", principal.name, "' is for '", principal.kind_text, "', this call (",
        PermissionName(permission), ") needs '", g == nullptr ? "nobody" : KindName(g->kind), "'"));
  }
  if (g->roles == 0 || HasRole(principal, g->roles)) return absl::OkStatus();
  std::string held = principal.roles.empty()
                         ? std::string("no role")
                         : absl::StrCat("role '", absl::StrJoin(principal.roles, ","), "'");
  return absl::PermissionDeniedError(absl::StrCat("operator '", principal.name, "' has ", held,
                                                  ", this call (", PermissionName(permission),
                                                  ") needs role '", RoleList(g->roles), "'"));
}

absl::StatusOr<changes::Actor> ActorOf(const Principal& principal, Permission permission) {
  RETURN_IF_ERROR(Authorize(principal, permission));
  const Grant* g = GrantFor(permission);
  changes::Actor actor;
  actor.name = principal.name;
  // Authorize passed: a role-less grant takes the strongest role held, if any.
  std::optional<Role> role = StrongestRole(principal, g->roles == 0 ? kAnyRole : g->roles);
  if (role.has_value()) actor.role = *role;
  return actor;
}

absl::StatusOr<changes::Actor> ActorOf(const Principal& principal) {
  return ActorOf(principal, Permission::kReadChanges);
}

}  // namespace smbfleet::collector

#include "collector/auth/authorize.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace smbfleet::collector {
namespace {

struct Grant {
  PrincipalKind kind;
  Permission permission;
};

// Who may do what. Agents act for their own host only (the service takes the host from the
// principal); operators read the fleet whatever their role (roles will gate change management).
constexpr Grant kGrants[] = {
    {PrincipalKind::kAgent, Permission::kReport},
    {PrincipalKind::kAgent, Permission::kWatch},
    {PrincipalKind::kAgent, Permission::kAckChange},
    {PrincipalKind::kOperator, Permission::kReadFleet},
    {PrincipalKind::kOperator, Permission::kRequestReport},
};

absl::string_view KindName(PrincipalKind kind) {
  switch (kind) {
    case PrincipalKind::kAgent:
      return "agent";
    case PrincipalKind::kOperator:
      return "operator";
    case PrincipalKind::kUnknown:
      break;
  }
  return "unknown";
}

// The kind whose grants include the permission, for the refusal message.
absl::string_view KindFor(Permission permission) {
  for (const Grant& g : kGrants) {
    if (g.permission == permission) return KindName(g.kind);
  }
  return "nobody";
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
  for (const Grant& g : kGrants) {
    if (g.kind == principal.kind && g.permission == permission) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "certificate of '", principal.name, "' is for '", principal.kind_text, "', this call (",
      PermissionName(permission), ") needs '", KindFor(permission), "'"));
}

}  // namespace smbfleet::collector

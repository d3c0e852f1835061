#ifndef SMBFLEET_COLLECTOR_AUTH_AUTHORIZE_H_
#define SMBFLEET_COLLECTOR_AUTH_AUTHORIZE_H_

// Who is calling and what they may do. Every call of every adapter (gRPC today, the web
// console later) asks Authorize(); the table in authorize.cc is the one place that says who may
// do what.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "collector/changes/approval.h"
#include "common/tls.h"

namespace smbfleet::collector {

// kAnonymous: a TLS connection with neither a client certificate nor a bearer token (only
// enrollment, which its token authenticates, is open to it).
enum class PrincipalKind { kUnknown, kAgent, kOperator, kAnonymous };

struct Principal {
  std::string name;  // an agent's host name, an operator's user name
  PrincipalKind kind = PrincipalKind::kUnknown;
  std::string kind_text;  // as the credential says it, for messages ("collector")
  // Operators: any of "viewer", "proposer", "approver", "admin"; a call passes if one of them
  // grants it. None: only WhoAmI.
  std::vector<std::string> roles;
  // The credential the call came with: a certificate's serial and SHA-256 fingerprint (lower
  // hex), or a bearer token's public id. Revocation and the stream registry go by these.
  std::string serial;
  std::string fingerprint;
  std::string token_id;
  int64_t expires_unix = 0;  // when the credential expires (0: unknown)

  // A caller with neither a client certificate nor a bearer token.
  static Principal Anonymous();
};

enum class Permission {
  kReport,         // AgentService.Report
  kWatch,          // AgentService.Watch
  kAckChange,      // AgentService.AckChange
  kReadFleet,      // hosts, compliance, findings: any operator role (viewer and up)
  kRequestReport,  // nudge an agent over its stream: proposer, approver, admin
  kReadChanges,    // changes, audit log, waivers: any operator role (viewer and up)
  kProposeChange,  // proposer, admin
  kApproveChange,  // approve, reject, resume, rollback: approver (four-eyes in changes/)
  kHaltChange,     // proposer, approver, admin
  kRequestWaiver,  // proposer, admin
  kApproveWaiver,  // approver (never the requester)
  kRevokeWaiver,   // approver, admin
  // Save a calibration of the cost model, which then corrects the CPU predictions of new
  // proposals: approver (whose decisions the predictions inform), admin (the collector's
  // settings); not a proposer, whose own proposals it would price.
  kCalibrateCostModel,
  // Identity and trust (docs/roles.md).
  kEnroll,              // EnrollmentService.Enroll: anonymous; the enrollment token decides
  kRenewCertificate,    // EnrollmentService.RenewCertificate: the agent itself
  kWhoAmI,              // anyone authenticated
  kManageApiTokens,     // create, list, revoke people's bearer tokens
  kManageEnrollment,    // create, list, revoke enrollment tokens
  kReadCertificates,    // issued certificates and revocations
  kRevokeCertificate,   // revoke a certificate or a host
  kSetHostLabels,       // the labels policy trusts
  kReadApproverKeys,    // approver keys and the published approver set
  kManageApproverKeys,  // register and revoke approver keys
  kPublishApproverSet,  // forward a root-signed approver set to the agents
};

absl::string_view PermissionName(Permission p);  // "read-fleet"

// The permission each RPC needs, by its full name ("smbfleet.v1.AdminService.ListHosts").
// Every method of AdminService, AgentService and EnrollmentService has one (a test walks the
// service descriptors); docs/roles.md shows the same table.
struct MethodPermission {
  absl::string_view method;
  Permission permission;
};
absl::Span<const MethodPermission> MethodPermissions();
// NOT_FOUND naming the method when the table has no entry.
absl::StatusOr<Permission> PermissionOfMethod(absl::string_view full_name);

// From a verified client certificate: its name (SAN, else CN), first OU as kind, the further
// OUs as roles. A call's principal comes from the Authenticator (authenticate.h), which also
// checks the issuer, tokens and revocations.
Principal PrincipalFromIdentity(const PeerIdentity& id);

// OK or PERMISSION_DENIED naming the principal, what it is and what the call needs. Every
// operator permission but WhoAmI needs a role; one of the principal's roles is enough.
absl::Status Authorize(const Principal& principal, Permission permission);

// The operator as the change rules (collector/changes/approval.h) see them: the name and one
// role, the strongest (approver over admin over proposer over viewer) of those that grant
// `permission`, so that a proposer who is also an approver proposes as proposer and approves as
// approver (four-eyes goes by name: never their own change). PERMISSION_DENIED as Authorize.
absl::StatusOr<changes::Actor> ActorOf(const Principal& principal, Permission permission);
// ActorOf for reading changes: the strongest role the principal holds.
absl::StatusOr<changes::Actor> ActorOf(const Principal& principal);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_AUTH_AUTHORIZE_H_

#include "cli/commands_identity.h"

#include <chrono>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/admin_call.h"
#include "cli/exit_code.h"
#include "cli/render.h"
#include "common/json.h"

namespace smbfleet::cli {
namespace {

namespace v1 = smbfleet::v1;

std::string Roles(const google::protobuf::RepeatedPtrField<std::string>& roles) {
  if (roles.empty()) return "(no role)";
  std::vector<std::string> clean;
  for (const auto& r : roles) clean.push_back(Clean(r));
  return absl::StrJoin(clean, ",");
}

void RenderToken(const v1::ApiToken& t, std::ostream& out) {
  out << Clean(t.id()) << "  " << Clean(t.name()) << "  " << Roles(t.roles()) << "  expires "
      << TimeText(t.expires_at()) << "  created by " << Clean(t.created_by());
  if (t.has_revoked_at()) {
    out << "  REVOKED " << TimeText(t.revoked_at()) << " by " << Clean(t.revoked_by());
  }
  out << "\n";
}

void RenderRevocation(const v1::Revocation& r, std::ostream& out) {
  out << TimeText(r.revoked_at()) << "  ";
  if (!r.serial().empty()) out << "serial " << Clean(r.serial()) << "  ";
  if (!r.fingerprint().empty()) out << "sha256 " << Clean(r.fingerprint()) << "  ";
  if (r.serial().empty() && r.fingerprint().empty()) {
    out << "host " << Clean(r.host()) << " (every certificate, and re-enrollment)  ";
  } else if (!r.host().empty()) {
    out << "host " << Clean(r.host()) << "  ";
  }
  out << "by " << Clean(r.revoked_by()) << ": " << Clean(r.reason()) << "\n";
}

}  // namespace

bool IsIdentityCommand(const std::string& command) {
  static const std::set<std::string> kCommands = {"whoami",       "tokens create",
                                                  "tokens list",  "tokens revoke",
                                                  "certs revoke", "certs revocations"};
  return kCommands.count(command) > 0;
}

int ExecuteIdentity(const Invocation& inv, AdminStub& stub, std::ostream& out, std::ostream& err) {
  const std::string& cmd = inv.command;
  const bool json = inv.global.format == "json";
  if (cmd == "whoami") {
    v1::WhoAmIResponse resp;
    if (auto s = Call(&AdminStub::WhoAmI, stub, RequestOf<v1::WhoAmIRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "whoami", err);
    }
    if (json) return PrintJson(resp, out, err);
    out << Clean(resp.name()) << " (" << Clean(resp.kind()) << ")  roles " << Roles(resp.roles())
        << "  by " << Clean(resp.credential()) << " " << Clean(resp.credential_id());
    if (resp.has_expires_at()) out << "  expires " << TimeText(resp.expires_at());
    out << "\n";
    return kExitOk;
  }
  if (cmd == "tokens create") {
    v1::CreateApiTokenResponse resp;
    if (auto s = Call(&AdminStub::CreateApiToken, stub, RequestOf<v1::CreateApiTokenRequest>(inv),
                      &resp);
        !s.ok()) {
      return FailedCall(s, "creating a token", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderToken(resp.token(), out);
    out << "token (shown once; give it to " << Clean(resp.token().name())
        << " to keep in a file named by token_file: or in SMBFLEET_TOKEN):\n"
        << Clean(resp.secret()) << "\n";
    return kExitOk;
  }
  if (cmd == "tokens list") {
    v1::ListApiTokensResponse resp;
    if (auto s =
            Call(&AdminStub::ListApiTokens, stub, RequestOf<v1::ListApiTokensRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "listing tokens", err);
    }
    if (json) return PrintJson(resp, out, err);
    if (resp.tokens().empty()) out << "no tokens\n";
    for (const auto& t : resp.tokens()) RenderToken(t, out);
    return kExitOk;
  }
  if (cmd == "tokens revoke") {
    const auto& req = RequestOf<v1::RevokeApiTokenRequest>(inv);
    v1::RevokeApiTokenResponse resp;
    if (auto s = Call(&AdminStub::RevokeApiToken, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat("revoking token ", req.id()), err);
    }
    if (json) return PrintJson(resp, out, err);
    out << "revoked token " << Clean(resp.token().id()) << " of " << Clean(resp.token().name())
        << "\n";
    return kExitOk;
  }
  if (cmd == "certs revoke") {
    v1::RevokeCertificateResponse resp;
    if (auto s = Call(&AdminStub::RevokeCertificate, stub,
                      RequestOf<v1::RevokeCertificateRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "revoking a certificate", err);
    }
    if (json) return PrintJson(resp, out, err);
    out << "revoked: ";
    RenderRevocation(resp.revocation(), out);
    out << resp.streams_closed()
        << " stream(s) closed on this collector; the others close theirs within seconds\n";
    return kExitOk;
  }
  if (cmd == "certs revocations") {
    v1::ListRevocationsResponse resp;
    if (auto s = Call(&AdminStub::ListRevocations, stub, RequestOf<v1::ListRevocationsRequest>(inv),
                      &resp);
        !s.ok()) {
      return FailedCall(s, "listing revocations", err);
    }
    if (json) return PrintJson(resp, out, err);
    if (resp.revocations().empty()) out << "no revoked certificates or hosts\n";
    for (const auto& r : resp.revocations()) RenderRevocation(r, out);
    return kExitOk;
  }
  err << "smbfleetctl: internal error: no handler for '" << cmd << "'\n";
  return kExitFailed;
}

}  // namespace smbfleet::cli

// AdminApi's identity calls: who am I, people's bearer tokens, certificate revocation.

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "collector/admin/admin_api.h"
#include "common/csr.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

constexpr size_t kMaxReasonLength = 2000;

google::protobuf::Timestamp Ts(absl::Time t) {
  return TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(t));
}

// Lower-case hex without separators (colons and spaces as openssl prints them are dropped).
absl::StatusOr<std::string> Hex(absl::string_view field, absl::string_view text,
                                size_t max_digits) {
  std::string out = absl::AsciiStrToLower(absl::StrReplaceAll(text, {{":", ""}, {" ", ""}}));
  if (out.empty() || out.size() > max_digits) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": expected 1 to ", max_digits, " hex digits, got ", text.size(), " characters"));
  }
  for (char c : out) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": '", absl::CEscape(text.substr(0, 80)), "' is not hexadecimal"));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<v1::WhoAmIResponse> AdminApi::WhoAmI(const Principal& caller,
                                                    const v1::WhoAmIRequest& /*request*/) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kWhoAmI));
  v1::WhoAmIResponse r;
  r.set_name(caller.name);
  r.set_kind(caller.kind_text);
  for (const std::string& role : caller.roles) r.add_roles(role);
  if (!caller.token_id.empty()) {
    r.set_credential("token");
    r.set_credential_id(caller.token_id);
  } else {
    r.set_credential("certificate");
    r.set_credential_id(caller.fingerprint);
  }
  if (caller.expires_unix != 0) r.mutable_expires_at()->set_seconds(caller.expires_unix);
  return r;
}

absl::StatusOr<v1::CreateApiTokenResponse> AdminApi::CreateApiToken(
    const Principal& caller, const v1::CreateApiTokenRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kManageApiTokens));
  if (tokens_ == nullptr) return absl::UnimplementedError("this collector has no token store");
  if (!request.has_expires_at()) {
    return absl::InvalidArgumentError("expires_at: required (tokens always expire)");
  }
  std::vector<std::string> roles(request.roles().begin(), request.roles().end());
  ASSIGN_OR_RETURN(
      ApiTokens::Created created,
      tokens_->Create(request.name(), roles,
                      absl::FromUnixMicros(TimeUtil::TimestampToMicroseconds(request.expires_at())),
                      caller.name));
  if (changes_ != nullptr) {
    v1::AuditEntry e;
    e.set_actor(caller.name);
    e.set_action("api_token_created");
    e.set_detail(absl::StrCat("token ", created.token.id(), " for ", created.token.name(),
                              " expiring ", TimeUtil::ToString(created.token.expires_at())));
    RETURN_IF_ERROR(changes_->AppendAudit({e}));
  }
  Logger("collector")
      ->info("{} created api token {} for {}", LogSafe(caller.name), created.token.id(),
             LogSafe(created.token.name()));
  v1::CreateApiTokenResponse response;
  *response.mutable_token() = std::move(created.token);
  response.set_secret(std::move(created.bearer));
  return response;
}

absl::StatusOr<v1::ListApiTokensResponse> AdminApi::ListApiTokens(
    const Principal& caller, const v1::ListApiTokensRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kManageApiTokens));
  if (identity_ == nullptr) return absl::UnimplementedError("this collector has no token store");
  ASSIGN_OR_RETURN(auto tokens, identity_->ListApiTokens(request.include_inactive(), absl::Now()));
  v1::ListApiTokensResponse response;
  for (auto& t : tokens) *response.add_tokens() = std::move(t);
  return response;
}

absl::StatusOr<v1::RevokeApiTokenResponse> AdminApi::RevokeApiToken(
    const Principal& caller, const v1::RevokeApiTokenRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kManageApiTokens));
  if (identity_ == nullptr) return absl::UnimplementedError("this collector has no token store");
  if (request.reason().empty()) {
    return absl::InvalidArgumentError("reason: required to revoke a token");
  }
  const std::string reason = request.reason().substr(0, kMaxReasonLength);
  ASSIGN_OR_RETURN(v1::ApiToken token,
                   identity_->RevokeApiToken(request.id(), caller.name, reason, absl::Now()));
  if (changes_ != nullptr) {
    v1::AuditEntry e;
    e.set_actor(caller.name);
    e.set_action("api_token_revoked");
    e.set_reason(reason);
    e.set_detail(absl::StrCat("token ", token.id(), " of ", token.name()));
    RETURN_IF_ERROR(changes_->AppendAudit({e}));
  }
  Logger("collector")
      ->info("{} revoked api token {} of {}", LogSafe(caller.name), token.id(),
             LogSafe(token.name()));
  v1::RevokeApiTokenResponse response;
  *response.mutable_token() = std::move(token);
  return response;
}

absl::StatusOr<v1::RevokeCertificateResponse> AdminApi::RevokeCertificate(
    const Principal& caller, const v1::RevokeCertificateRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kRevokeCertificate));
  if (identity_ == nullptr) {
    return absl::UnimplementedError("this collector has no revocation store");
  }
  const v1::Revocation& in = request.revocation();
  const bool host_only = in.serial().empty() && in.fingerprint().empty();
  if (host_only && in.host().empty()) {
    return absl::InvalidArgumentError(
        "revocation: give the certificate's serial or SHA-256 fingerprint, or a host to revoke "
        "every certificate of that host");
  }
  if (in.reason().empty()) {
    return absl::InvalidArgumentError(host_only
                                          ? "revocation.reason: required to revoke a host"
                                          : "revocation.reason: required to revoke a certificate");
  }
  v1::Revocation r;
  if (host_only) {
    // A host revocation names exactly the host a certificate names, or it would miss it.
    const std::string host = absl::AsciiStrToLower(in.host());
    RETURN_IF_ERROR(CheckHostName(host, "revocation.host"));
    r.set_host(host);
  } else {
    r.set_host(absl::AsciiStrToLower(in.host().substr(0, 255)));
  }
  if (!in.serial().empty()) {
    ASSIGN_OR_RETURN(std::string serial, Hex("revocation.serial", in.serial(), 64));
    // As PeerIdentity spells it: no leading zeros.
    const size_t first = serial.find_first_not_of('0');
    r.set_serial(first == std::string::npos ? "0" : serial.substr(first));
  }
  if (!in.fingerprint().empty()) {
    ASSIGN_OR_RETURN(std::string fp, Hex("revocation.fingerprint", in.fingerprint(), 64));
    if (fp.size() != 64) {
      return absl::InvalidArgumentError(absl::StrCat("revocation.fingerprint: ", fp.size(),
                                                     " hex digits; a SHA-256 fingerprint has 64"));
    }
    r.set_fingerprint(fp);
  }
  r.set_reason(in.reason().substr(0, kMaxReasonLength));
  r.set_revoked_by(caller.name);
  *r.mutable_revoked_at() = Ts(absl::Now());
  ASSIGN_OR_RETURN(v1::Revocation stored, identity_->AddRevocation(r));
  if (changes_ != nullptr) {
    v1::AuditEntry e;
    e.set_actor(caller.name);
    e.set_action(host_only ? "host_revoked" : "certificate_revoked");
    e.set_reason(stored.reason());
    e.set_detail(
        host_only ? absl::StrCat("host ", stored.host(), ": every certificate, and re-enrollment")
                  : absl::StrCat("serial ", stored.serial(), " fingerprint ", stored.fingerprint(),
                                 stored.host().empty() ? "" : " host ", stored.host()));
    RETURN_IF_ERROR(changes_->AppendAudit({e}));
  }
  size_t closed = 0;
  if (revocations_ != nullptr) {
    absl::StatusOr<size_t> refreshed = revocations_->Refresh();
    if (refreshed.ok()) closed = *refreshed;
  }
  if (host_only) {
    Logger("collector")
        ->info("{} revoked host {}; {} stream(s) closed here", LogSafe(caller.name), stored.host(),
               closed);
  } else {
    Logger("collector")
        ->info("{} revoked certificate serial {} fingerprint {}; {} stream(s) closed here",
               LogSafe(caller.name), stored.serial(), stored.fingerprint(), closed);
  }
  v1::RevokeCertificateResponse response;
  *response.mutable_revocation() = std::move(stored);
  response.set_streams_closed(static_cast<uint32_t>(closed));
  return response;
}

absl::StatusOr<v1::ListRevocationsResponse> AdminApi::ListRevocations(
    const Principal& caller, const v1::ListRevocationsRequest& /*request*/) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadCertificates));
  if (identity_ == nullptr) {
    return absl::UnimplementedError("this collector has no revocation store");
  }
  ASSIGN_OR_RETURN(auto all, identity_->ListRevocations());
  v1::ListRevocationsResponse response;
  for (auto& r : all) *response.add_revocations() = std::move(r);
  return response;
}

}  // namespace smbfleet::collector

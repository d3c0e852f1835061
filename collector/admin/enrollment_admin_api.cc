// AdminApi's enrollment calls: enrollment tokens (the secret is returned once and stored as its
// SHA-256), the certificates the issuing CA made, and the host labels policy trusts.
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "collector/admin/admin_api.h"
#include "collector/enroll/enrollment_api.h"
#include "common/csr.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

constexpr uint32_t kMaxUses = 100'000;
constexpr absl::Duration kMaxTokenLifetime = absl::Hours(24 * 90);
constexpr size_t kMaxLabels = 64;
constexpr size_t kMaxLabelKey = 63;
constexpr size_t kMaxLabelValue = 256;
constexpr size_t kMaxComment = 500;
constexpr size_t kMaxReasonLength = 2000;

google::protobuf::Timestamp Ts(absl::Time t) {
  return TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(t));
}

absl::Status Unconfigured() {
  return absl::UnimplementedError("this collector has no enrollment store");
}

// Label keys: letters, digits and . _ / - (as policy selectors spell them); values: printable
// text without control characters.
absl::Status CheckLabels(const google::protobuf::Map<std::string, std::string>& labels) {
  if (labels.size() > kMaxLabels) {
    return absl::InvalidArgumentError(
        absl::StrCat("labels: ", labels.size(), " labels, limit ", kMaxLabels));
  }
  for (const auto& [key, value] : labels) {
    if (key.empty() || key.size() > kMaxLabelKey) {
      return absl::InvalidArgumentError(
          absl::StrCat("labels: a key of 1 to ", kMaxLabelKey, " characters is required"));
    }
    for (char ch : key) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' &&
          ch != '/' && ch != '-') {
        return absl::InvalidArgumentError(absl::StrCat("labels: key '", absl::CEscape(key),
                                                       "' (letters, digits and . _ / - only)"));
      }
    }
    if (value.size() > kMaxLabelValue) {
      return absl::InvalidArgumentError(
          absl::StrCat("labels[", key, "]: ", value.size(), " bytes, limit ", kMaxLabelValue));
    }
    for (char ch : value) {
      const auto u = static_cast<unsigned char>(ch);
      if (u < 0x20 || u == 0x7f) {
        return absl::InvalidArgumentError(
            absl::StrCat("labels[", key, "]: control characters are not allowed"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::CreateEnrollmentTokenResponse> AdminApi::CreateEnrollmentToken(
    const Principal& caller, const v1::CreateEnrollmentTokenRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kManageEnrollment));
  if (enrollment_ == nullptr) return Unconfigured();
  if (request.max_uses() == 0 || request.max_uses() > kMaxUses) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_uses: required, 1 to ", kMaxUses, "; got ", request.max_uses()));
  }
  const absl::Time now = absl::Now();
  if (!request.has_expires_at()) return absl::InvalidArgumentError("expires_at: required");
  const absl::Time expires =
      absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(request.expires_at()));
  if (expires <= now || expires - now > kMaxTokenLifetime) {
    return absl::InvalidArgumentError("expires_at: must be in the future and at most 90 days away");
  }
  RETURN_IF_ERROR(CheckLabels(request.labels()));
  if (request.comment().size() > kMaxComment) {
    return absl::InvalidArgumentError(
        absl::StrCat("comment: ", request.comment().size(), " bytes, limit ", kMaxComment));
  }
  const EnrollmentSecret secret = NewEnrollmentSecret();
  v1::EnrollmentToken token;
  token.set_id(secret.id);
  *token.mutable_labels() = request.labels();
  token.set_max_uses(request.max_uses());
  *token.mutable_created_at() = Ts(now);
  token.set_created_by(caller.name);
  *token.mutable_expires_at() = Ts(expires);
  token.set_comment(request.comment());
  token.set_allow_reenrollment(request.allow_reenrollment());
  RETURN_IF_ERROR(enrollment_->CreateToken(token, SecretSha256(secret.secret)));
  if (changes_ != nullptr) {
    v1::AuditEntry e;
    e.set_actor(caller.name);
    e.set_action("enrollment_token_created");
    e.set_detail(absl::StrCat("token ", token.id(), ", ", token.max_uses(), " uses"));
    RETURN_IF_ERROR(changes_->AppendAudit({e}));
  }
  Logger("collector")
      ->info("{} created enrollment token {} ({} uses)", LogSafe(caller.name), token.id(),
             token.max_uses());
  v1::CreateEnrollmentTokenResponse response;
  *response.mutable_token() = std::move(token);
  response.set_secret(EnrollmentTokenText(secret));
  return response;
}

absl::StatusOr<v1::ListEnrollmentTokensResponse> AdminApi::ListEnrollmentTokens(
    const Principal& caller, const v1::ListEnrollmentTokensRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kManageEnrollment));
  if (enrollment_ == nullptr) return Unconfigured();
  ASSIGN_OR_RETURN(auto tokens, enrollment_->ListTokens(request.include_inactive(), absl::Now()));
  v1::ListEnrollmentTokensResponse response;
  for (auto& t : tokens) *response.add_tokens() = std::move(t);
  return response;
}

absl::StatusOr<v1::RevokeEnrollmentTokenResponse> AdminApi::RevokeEnrollmentToken(
    const Principal& caller, const v1::RevokeEnrollmentTokenRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kManageEnrollment));
  if (enrollment_ == nullptr) return Unconfigured();
  if (request.reason().empty()) {
    return absl::InvalidArgumentError("reason: required to revoke an enrollment token");
  }
  const std::string reason = request.reason().substr(0, kMaxReasonLength);
  ASSIGN_OR_RETURN(v1::EnrollmentToken token,
                   enrollment_->RevokeToken(request.id(), caller.name, reason, absl::Now()));
  if (changes_ != nullptr) {
    v1::AuditEntry e;
    e.set_actor(caller.name);
    e.set_action("enrollment_token_revoked");
    e.set_reason(reason);
    e.set_detail(absl::StrCat("token ", token.id()));
    RETURN_IF_ERROR(changes_->AppendAudit({e}));
  }
  Logger("collector")->info("{} revoked enrollment token {}", LogSafe(caller.name), token.id());
  v1::RevokeEnrollmentTokenResponse response;
  *response.mutable_token() = std::move(token);
  return response;
}

absl::StatusOr<v1::ListCertificatesResponse> AdminApi::ListCertificates(
    const Principal& caller, const v1::ListCertificatesRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadCertificates));
  if (enrollment_ == nullptr) return Unconfigured();
  const std::string host = absl::AsciiStrToLower(request.host());
  ASSIGN_OR_RETURN(auto certs,
                   enrollment_->ListCertificates(host, request.include_inactive(), absl::Now()));
  v1::ListCertificatesResponse response;
  for (auto& c : certs) *response.add_certificates() = std::move(c);
  return response;
}

absl::StatusOr<v1::SetHostLabelsResponse> AdminApi::SetHostLabels(
    const Principal& caller, const v1::SetHostLabelsRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kSetHostLabels));
  if (enrollment_ == nullptr) return Unconfigured();
  const std::string host = absl::AsciiStrToLower(request.host());
  RETURN_IF_ERROR(CheckHostName(host, "host"));
  RETURN_IF_ERROR(CheckLabels(request.labels()));
  if (request.reason().empty()) {
    return absl::InvalidArgumentError("reason: required to change the labels policy trusts");
  }
  const std::string reason = request.reason().substr(0, kMaxReasonLength);
  HostLabels labels(request.labels().begin(), request.labels().end());
  RETURN_IF_ERROR(enrollment_->SetHostLabels(host, labels, caller.name, absl::Now()));
  if (changes_ != nullptr) {
    v1::AuditEntry e;
    e.set_actor(caller.name);
    e.set_action("host_labels_set");
    e.set_reason(reason);
    std::string detail = absl::StrCat("host ", host, ":");
    for (const auto& [k, v] : labels) absl::StrAppend(&detail, " ", k, "=", v);
    e.set_detail(detail);
    RETURN_IF_ERROR(changes_->AppendAudit({e}));
  }
  Logger("collector")
      ->info("{} set the trusted labels of {} ({} labels)", LogSafe(caller.name), host,
             labels.size());
  v1::SetHostLabelsResponse response;
  ASSIGN_OR_RETURN(std::optional<HostRecord> record, hosts_->GetHost(host));
  if (record.has_value()) *response.mutable_host() = record->summary;
  response.mutable_host()->set_name(host);
  response.mutable_host()->mutable_labels()->clear();
  response.mutable_host()->mutable_labels()->insert(labels.begin(), labels.end());
  return response;
}

}  // namespace smbfleet::collector

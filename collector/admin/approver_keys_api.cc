// AdminApi's approver key calls: the registry of the public keys approvals are checked against.
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "collector/admin/admin_api.h"
#include "common/approval_signing.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

constexpr size_t kMaxNameLength = 128;
constexpr size_t kMaxReasonLength = 2000;

// An operator name as certificates and tokens carry it (compared without case): letters, digits
// and . _ @ -, stored lower case.
absl::StatusOr<std::string> OperatorName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("name: an operator name of 1 to ", kMaxNameLength, " characters is required"));
  }
  for (char ch : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' &&
        ch != '@' && ch != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("name: '", absl::CEscape(name),
                       "' is not an operator name (letters, digits and . _ @ - only)"));
    }
  }
  return absl::AsciiStrToLower(name);
}

google::protobuf::Timestamp Ts(absl::Time t) {
  // Whole microseconds, as the database keeps them.
  return TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(t));
}

}  // namespace

absl::StatusOr<v1::RegisterApproverKeyResponse> AdminApi::RegisterApproverKey(
    const Principal& caller, const v1::RegisterApproverKeyRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kManageApproverKeys));
  if (keys_ == nullptr) return absl::UnimplementedError("this collector has no approver key store");
  ASSIGN_OR_RETURN(std::string name, OperatorName(request.name()));
  if (request.public_key().size() != 32) {
    return absl::InvalidArgumentError(
        absl::StrCat("public_key: ", request.public_key().size(),
                     " bytes; a raw Ed25519 public key is 32 (smbfleetctl keys show prints it)"));
  }
  v1::ApproverKey key;
  key.set_name(name);
  key.set_key_id(KeyId(request.public_key()));
  key.set_public_key(request.public_key());
  key.set_added_by(caller.name);
  *key.mutable_added_at() = Ts(absl::Now());
  RETURN_IF_ERROR(keys_->AddKey(key));
  if (changes_ != nullptr) {
    v1::AuditEntry e;
    e.set_actor(caller.name);
    e.set_action("approver_key_registered");
    e.set_detail(absl::StrCat("key ", key.key_id(), " of ", name));
    RETURN_IF_ERROR(changes_->AppendAudit({e}));
  }
  Logger("collector")->info("{} registered approver key {} of {}", caller.name, key.key_id(), name);
  v1::RegisterApproverKeyResponse response;
  *response.mutable_key() = std::move(key);
  return response;
}

absl::StatusOr<v1::ListApproverKeysResponse> AdminApi::ListApproverKeys(
    const Principal& caller, const v1::ListApproverKeysRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kReadApproverKeys));
  if (keys_ == nullptr) return absl::UnimplementedError("this collector has no approver key store");
  ASSIGN_OR_RETURN(auto keys, keys_->ListKeys(request.include_revoked()));
  v1::ListApproverKeysResponse response;
  for (auto& k : keys) *response.add_keys() = std::move(k);
  return response;
}

absl::StatusOr<v1::RevokeApproverKeyResponse> AdminApi::RevokeApproverKey(
    const Principal& caller, const v1::RevokeApproverKeyRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kManageApproverKeys));
  if (keys_ == nullptr) return absl::UnimplementedError("this collector has no approver key store");
  if (request.reason().empty()) {
    return absl::InvalidArgumentError("reason: required to revoke an approver key");
  }
  const std::string reason = request.reason().substr(0, kMaxReasonLength);
  ASSIGN_OR_RETURN(v1::ApproverKey key,
                   keys_->RevokeKey(request.key_id(), caller.name, reason, absl::Now()));
  if (changes_ != nullptr) {
    v1::AuditEntry e;
    e.set_actor(caller.name);
    e.set_action("approver_key_revoked");
    e.set_reason(reason);
    e.set_detail(absl::StrCat("key ", key.key_id(), " of ", key.name()));
    RETURN_IF_ERROR(changes_->AppendAudit({e}));
  }
  Logger("collector")
      ->info("{} revoked approver key {} of {}", caller.name, key.key_id(), key.name());
  v1::RevokeApproverKeyResponse response;
  *response.mutable_key() = std::move(key);
  return response;
}

}  // namespace smbfleet::collector

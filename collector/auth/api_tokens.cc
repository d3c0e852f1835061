#include "collector/auth/api_tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collector/changes/approval.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

constexpr absl::string_view kPrefix = "sft_";
constexpr size_t kIdBytes = 8;
constexpr size_t kSecretBytes = 32;
constexpr size_t kMaxNameLength = 128;

bool IsLowerHex(absl::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    return "";
  }
  return out;
}

absl::Time TimeOf(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixMicros(TimeUtil::TimestampToMicroseconds(ts));
}

google::protobuf::Timestamp Ts(absl::Time t) {
  return TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(t));
}

}  // namespace

std::string Sha256(absl::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(md), len);
}

absl::StatusOr<ParsedToken> ParseApiToken(absl::string_view token) {
  if (!absl::StartsWith(token, kPrefix)) {
    return absl::UnauthenticatedError("bearer token: not an smbfleet token (sft_<id>_<secret>)");
  }
  absl::string_view rest = token.substr(kPrefix.size());
  const size_t sep = rest.find('_');
  if (sep != kIdBytes * 2 || !IsLowerHex(rest.substr(0, sep))) {
    return absl::UnauthenticatedError(
        "bearer token: the id after 'sft_' must be 16 lower-case hex digits");
  }
  ParsedToken out;
  out.id = std::string(rest.substr(0, sep));
  absl::string_view secret = rest.substr(sep + 1);
  if (secret.size() != kSecretBytes * 2 || !IsLowerHex(secret)) {
    return absl::UnauthenticatedError(
        absl::StrCat("bearer token ", out.id, ": the secret must be 64 lower-case hex digits"));
  }
  out.secret = absl::HexStringToBytes(secret);
  return out;
}

std::string FormatApiToken(const std::string& id, const std::string& secret) {
  return absl::StrCat(kPrefix, id, "_", absl::BytesToHexString(secret));
}

absl::StatusOr<ApiTokens::Created> ApiTokens::Create(const std::string& name,
                                                     const std::vector<std::string>& roles,
                                                     absl::Time expires_at,
                                                     const std::string& created_by) {
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
  if (roles.empty()) {
    return absl::InvalidArgumentError(
        "roles: at least one of viewer, proposer, approver, admin is required");
  }
  for (size_t i = 0; i < roles.size(); ++i) {
    if (!changes::ParseRole(roles[i]).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("roles[", i, "]: '", absl::CEscape(roles[i].substr(0, 64)),
                       "' is not one of viewer, proposer, approver, admin"));
    }
  }
  const absl::Time now = clock_();
  if (expires_at == absl::InfinitePast() || expires_at <= now) {
    return absl::InvalidArgumentError("expires_at: required, and in the future");
  }
  expires_at = std::min(expires_at, now + kMaxLifetime);

  StoredApiToken stored;
  const std::string id_bytes = RandomBytes(kIdBytes);
  const std::string secret = RandomBytes(kSecretBytes);
  if (id_bytes.empty() || secret.empty()) {
    return absl::InternalError("no randomness for a token (RAND_bytes failed)");
  }
  v1::ApiToken& t = stored.token;
  t.set_id(absl::BytesToHexString(id_bytes));
  t.set_name(absl::AsciiStrToLower(name));
  for (const std::string& r : roles) t.add_roles(r);
  *t.mutable_created_at() = Ts(now);
  t.set_created_by(created_by);
  *t.mutable_expires_at() = Ts(expires_at);
  stored.secret_sha256 = Sha256(secret);
  RETURN_IF_ERROR(store_->AddApiToken(stored));
  return Created{t, FormatApiToken(t.id(), secret)};
}

absl::StatusOr<Principal> ApiTokens::VerifyToken(absl::string_view token) const {
  ASSIGN_OR_RETURN(ParsedToken parsed, ParseApiToken(token));
  ASSIGN_OR_RETURN(std::optional<StoredApiToken> stored, store_->GetApiToken(parsed.id));
  const std::string digest = Sha256(parsed.secret);
  if (!stored.has_value() || stored->secret_sha256.size() != digest.size() ||
      CRYPTO_memcmp(stored->secret_sha256.data(), digest.data(), digest.size()) != 0) {
    // One answer for an unknown id and a wrong secret.
    return absl::UnauthenticatedError(
        absl::StrCat("bearer token ", parsed.id, " is not valid (unknown id or wrong secret)"));
  }
  const v1::ApiToken& t = stored->token;
  if (t.has_revoked_at()) {
    return absl::UnauthenticatedError(absl::StrCat("bearer token ", t.id(), " has been revoked"));
  }
  if (clock_() >= TimeOf(t.expires_at())) {
    return absl::UnauthenticatedError(
        absl::StrCat("bearer token ", t.id(), " expired at ", TimeUtil::ToString(t.expires_at())));
  }
  Principal p;
  p.name = t.name();
  p.kind = PrincipalKind::kOperator;
  p.kind_text = "operator";
  p.roles.assign(t.roles().begin(), t.roles().end());
  p.token_id = t.id();
  p.expires_unix = t.expires_at().seconds();
  return p;
}

}  // namespace smbfleet::collector

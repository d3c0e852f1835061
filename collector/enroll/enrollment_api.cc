#include "collector/enroll/enrollment_api.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/csr.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

constexpr absl::string_view kPrefix = "set_";
constexpr size_t kIdHex = 16;
constexpr size_t kSecretHex = 64;

bool IsLowerHex(absl::string_view s) {
  for (char ch : s) {
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return false;
  }
  return true;
}

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    // No randomness: a broken invariant of the process, not an input error.
    std::abort();
  }
  return absl::BytesToHexString(raw);
}

absl::Status WrongToken() {
  return absl::PermissionDeniedError("token: unknown or wrong enrollment token");
}

}  // namespace

absl::StatusOr<EnrollmentSecret> ParseEnrollmentToken(absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty()) return absl::InvalidArgumentError("token: required");
  if (!absl::StartsWith(trimmed, kPrefix) ||
      trimmed.size() != kPrefix.size() + kIdHex + 1 + kSecretHex ||
      trimmed[kPrefix.size() + kIdHex] != '_') {
    return absl::InvalidArgumentError(
        absl::StrCat("token: not an enrollment token (set_ followed by ", kIdHex, " and ",
                     kSecretHex, " hex digits, as `smbfleetctl enroll-tokens create` prints)"));
  }
  EnrollmentSecret out{std::string(trimmed.substr(kPrefix.size(), kIdHex)),
                       std::string(trimmed.substr(kPrefix.size() + kIdHex + 1))};
  if (!IsLowerHex(out.id) || !IsLowerHex(out.secret)) {
    return absl::InvalidArgumentError("token: not an enrollment token (lower-case hex digits)");
  }
  return out;
}

EnrollmentSecret NewEnrollmentSecret() {
  return {RandomHex(kIdHex / 2), RandomHex(kSecretHex / 2)};
}

std::string EnrollmentTokenText(const EnrollmentSecret& s) {
  return absl::StrCat(kPrefix, s.id, "_", s.secret);
}

RevocationCheck RevocationCheckOf(const RevocationChecker* revocations) {
  return [revocations](const std::string& host, const std::string& serial,
                       const std::string& fingerprint) -> absl::StatusOr<bool> {
    return revocations->IsHostRevoked(host) || revocations->IsRevoked(serial, fingerprint);
  };
}

std::string SecretSha256(absl::string_view secret) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> md{};
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), md.data());
  return {reinterpret_cast<const char*>(md.data()), md.size()};
}

absl::Status EnrollmentApi::CheckNotRevoked(const std::string& host, const std::string& serial,
                                            const std::string& fingerprint) {
  if (!revoked_) return absl::OkStatus();
  ASSIGN_OR_RETURN(bool revoked, revoked_(host, serial, fingerprint));
  if (revoked) {
    return absl::PermissionDeniedError(
        serial.empty() ? absl::StrCat("host ", host, " is revoked: it may not enroll again")
                       : absl::StrCat("certificate ", serial, " of ", host, " is revoked"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::EnrollResponse> EnrollmentApi::Enroll(const Principal& caller,
                                                         const v1::EnrollRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kEnroll));
  if (ca_ == nullptr) {
    return absl::UnimplementedError(
        "this collector does not issue certificates (no enrollment section in its config)");
  }
  ASSIGN_OR_RETURN(EnrollmentSecret parsed, ParseEnrollmentToken(request.token()));
  ASSIGN_OR_RETURN(std::optional<EnrollmentTokenRecord> record, store_->GetToken(parsed.id));
  const std::string presented = SecretSha256(parsed.secret);
  // Compared in constant time; an unknown id is compared against a dummy so the answer takes
  // the same path either way.
  const std::string expected = record.has_value() ? record->secret_sha256 : std::string(32, '\0');
  const bool match = expected.size() == presented.size() &&
                     CRYPTO_memcmp(expected.data(), presented.data(), presented.size()) == 0;
  if (!record.has_value() || !match) return WrongToken();

  const absl::Time now = clock_();
  ASSIGN_OR_RETURN(std::string host, IssuingCa::CsrCommonName(request.csr_pem()));
  RETURN_IF_ERROR(CheckHostName(host, "csr_pem: the subject CN"));
  // Checks and signs before a use is taken, so that a bad request does not spend the token.
  ASSIGN_OR_RETURN(IssuedCertificatePem issued, ca_->Sign(request.csr_pem(), host, now));
  RETURN_IF_ERROR(CheckNotRevoked(host, "", ""));
  if (!record->token.allow_reenrollment()) {
    ASSIGN_OR_RETURN(auto current, store_->ListCertificates(host, false, now));
    for (const v1::IssuedCertificate& held : current) {
      ASSIGN_OR_RETURN(bool revoked,
                       revoked_ ? revoked_(host, held.serial(), held.fingerprint()) : false);
      if (revoked) continue;  // a revoked certificate no longer stands in the way
      return absl::FailedPreconditionError(
          absl::StrCat("host ", host, " still holds a valid certificate (serial ", held.serial(),
                       "); revoke it, or enroll with a token that allows re-enrollment"));
    }
  }
  absl::StatusOr<v1::EnrollmentToken> used = store_->TakeUse(parsed.id, now);
  if (!used.ok()) {
    if (used.status().code() == absl::StatusCode::kFailedPrecondition) {
      return absl::PermissionDeniedError(absl::StrCat("token: ", used.status().message()));
    }
    return used.status();
  }
  issued.record.set_enrollment_token_id(parsed.id);
  RETURN_IF_ERROR(store_->RecordCertificate(issued.record));
  HostLabels labels(used->labels().begin(), used->labels().end());
  RETURN_IF_ERROR(store_->SetHostLabels(host, labels, absl::StrCat("enrollment:", parsed.id), now));
  Logger("collector")
      ->info("enrolled host {} with token {}: certificate {} until {}", LogSafe(host), parsed.id,
             issued.record.serial(), TimeUtil::ToString(issued.record.not_after()));

  v1::EnrollResponse response;
  response.set_certificate_pem(issued.certificate_pem);
  response.set_ca_chain_pem(ca_->ca_pem());
  *response.mutable_not_after() = issued.record.not_after();
  response.mutable_labels()->insert(used->labels().begin(), used->labels().end());
  return response;
}

absl::StatusOr<v1::RenewCertificateResponse> EnrollmentApi::RenewCertificate(
    const Principal& caller, const std::string& serial, const std::string& fingerprint,
    const v1::RenewCertificateRequest& request) {
  RETURN_IF_ERROR(Authorize(caller, Permission::kRenewCertificate));
  if (ca_ == nullptr) {
    return absl::UnimplementedError(
        "this collector does not issue certificates (no enrollment section in its config)");
  }
  RETURN_IF_ERROR(CheckNotRevoked(caller.name, serial, fingerprint));
  const absl::Time now = clock_();
  ASSIGN_OR_RETURN(IssuedCertificatePem issued, ca_->Sign(request.csr_pem(), caller.name, now));
  RETURN_IF_ERROR(store_->RecordCertificate(issued.record));
  Logger("collector")
      ->info("renewed the certificate of {}: {} replaces {}, until {}", LogSafe(caller.name),
             issued.record.serial(), LogSafe(serial),
             TimeUtil::ToString(issued.record.not_after()));
  v1::RenewCertificateResponse response;
  response.set_certificate_pem(issued.certificate_pem);
  response.set_ca_chain_pem(ca_->ca_pem());
  *response.mutable_not_after() = issued.record.not_after();
  return response;
}

}  // namespace smbfleet::collector

#ifndef SMBFLEET_COLLECTOR_ENROLL_ENROLLMENT_API_H_
#define SMBFLEET_COLLECTOR_ENROLL_ENROLLMENT_API_H_

// EnrollmentService as plain functions (the gRPC adapter is collector/service/
// enrollment_service.*): an anonymous caller with an enrollment token gets a certificate for the
// host its CSR names; an agent renews its own. Token secrets are compared by SHA-256 in constant
// time and never reach a log line, an error or the database.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "collector/auth/authenticate.h"
#include "collector/auth/authorize.h"
#include "collector/enroll/issuing_ca.h"
#include "collector/store/enrollment_store.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector {

// The parts of an enrollment token's text: "set_<id>_<secret>".
struct EnrollmentSecret {
  std::string id;      // 16 lower-case hex digits
  std::string secret;  // 64 lower-case hex digits
};
// INVALID_ARGUMENT ("token: ...") that never quotes the text.
absl::StatusOr<EnrollmentSecret> ParseEnrollmentToken(absl::string_view text);
// A new random token (id and secret) and its text.
EnrollmentSecret NewEnrollmentSecret();
std::string EnrollmentTokenText(const EnrollmentSecret& s);
std::string SecretSha256(absl::string_view secret);  // 32 raw bytes

// Is this host, or this certificate, revoked? Null: nothing counts as revoked. serial and
// fingerprint are empty when asking about a host only.
using RevocationCheck = std::function<absl::StatusOr<bool>(
    const std::string& host, const std::string& serial, const std::string& fingerprint)>;
// The check the collector uses: the host or the certificate is in `revocations` (not owned; it
// must outlive the check).
RevocationCheck RevocationCheckOf(const RevocationChecker* revocations);

class EnrollmentApi {
 public:
  using Clock = std::function<absl::Time()>;
  EnrollmentApi(EnrollmentStore* store, const IssuingCa* ca, Clock clock = absl::Now)
      : store_(store), ca_(ca), clock_(std::move(clock)) {}

  void SetRevocationCheck(RevocationCheck check) { revoked_ = std::move(check); }

  // The caller is anonymous (or anyone: the token decides). PERMISSION_DENIED for an unknown or
  // wrong token, or one revoked, expired or used up (saying which); FAILED_PRECONDITION for a host
  // that still holds a valid certificate when the token does not allow re-enrollment;
  // INVALID_ARGUMENT for a bad CSR. The token's labels become the host's trusted labels.
  absl::StatusOr<smbfleet::v1::EnrollResponse> Enroll(const Principal& caller,
                                                      const smbfleet::v1::EnrollRequest& request);

  // The caller is an agent (its certificate names the host); the CSR must name the same host.
  // `serial` and `fingerprint` are the caller's certificate's, for the revocation check.
  absl::StatusOr<smbfleet::v1::RenewCertificateResponse> RenewCertificate(
      const Principal& caller, const std::string& serial, const std::string& fingerprint,
      const smbfleet::v1::RenewCertificateRequest& request);

 private:
  absl::Status CheckNotRevoked(const std::string& host, const std::string& serial,
                               const std::string& fingerprint);

  EnrollmentStore* store_;
  const IssuingCa* ca_;  // null: this collector does not issue (UNIMPLEMENTED)
  Clock clock_;
  RevocationCheck revoked_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_ENROLL_ENROLLMENT_API_H_

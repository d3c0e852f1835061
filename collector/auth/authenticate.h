#ifndef SMBFLEET_COLLECTOR_AUTH_AUTHENTICATE_H_
#define SMBFLEET_COLLECTOR_AUTH_AUTHENTICATE_H_

// Who is calling: the one place that turns a call's credentials (a verified client certificate,
// or a bearer token in the `authorization` metadata) into a Principal. Authorize() then decides
// what that principal may do.

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "collector/auth/authorize.h"
#include "grpcpp/server_context.h"

namespace smbfleet::collector {

// Which CA issues which kind of client certificate, as PEM text (one or more certificates
// each). Both empty: the kind is the certificate's first OU (old configurations).
struct IssuerCertificates {
  std::vector<std::string> agent_pems;
  std::vector<std::string> operator_pems;
};

// A bearer token to the principal it stands for; UNAUTHENTICATED naming the token id (never
// the secret) when it is malformed, unknown, expired or revoked.
class TokenVerifier {
 public:
  virtual ~TokenVerifier() = default;
  virtual absl::StatusOr<Principal> VerifyToken(absl::string_view token) const = 0;
};

// Whether a certificate has been revoked (by serial or SHA-256 fingerprint, lower hex), or a
// whole host (by name, lower case: every agent certificate naming it).
class RevocationChecker {
 public:
  virtual ~RevocationChecker() = default;
  virtual bool IsRevoked(absl::string_view serial, absl::string_view fingerprint) const = 0;
  virtual bool IsHostRevoked(absl::string_view host) const = 0;
};

class Authenticator {
 public:
  // INVALID_ARGUMENT naming the CA when one cannot be parsed or sits in both lists.
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(const IssuerCertificates& issuers);

  ~Authenticator();
  Authenticator(const Authenticator&) = delete;
  Authenticator& operator=(const Authenticator&) = delete;

  // Not owned; null (the default): bearer tokens are refused / nothing is revoked.
  void set_token_verifier(const TokenVerifier* tokens) { tokens_ = tokens; }
  void set_revocations(const RevocationChecker* revocations) { revocations_ = revocations; }

  // True when the kind comes from the issuing CA; false: from the first OU.
  bool kind_from_issuer() const;

  // The caller of a call: the certificate's holder, the token's owner, or an anonymous
  // principal when the call carries neither. UNAUTHENTICATED (naming the certificate subject or
  // the token id, and what is wrong) when a credential is presented but not acceptable, or when
  // both a certificate and a token are presented (one call, one identity).
  absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& context) const;

  // The holder of a client certificate the TLS layer has already verified against the
  // collector's CA bundle: kind from the issuer (or OU), EKU clientAuth required, not revoked
  // (nor, for an agent, its host). What the certificate itself says is worked out once per
  // certificate and kept (its parse, usage and issuer signature; at most kMaxCheckedCertificates,
  // by SHA-256 of the PEM): an agent's calls on one connection present the same certificate
  // every time. Revocation is checked on every call.
  absl::StatusOr<Principal> FromCertificate(const std::string& pem) const;
  // `authorization` metadata value ("Bearer <token>").
  absl::StatusOr<Principal> FromAuthorization(absl::string_view header) const;

  // Certificates whose checks are kept; when full, all are forgotten at once.
  static constexpr size_t kMaxCheckedCertificates = 1 << 18;

 private:
  struct Issuers;
  struct Checked;
  explicit Authenticator(std::unique_ptr<Issuers> issuers);

  // What `pem` says, whoever asks: the principal (or why it is refused) and what revocation
  // is checked against.
  Checked Check(const std::string& pem) const;
  std::shared_ptr<const Checked> CheckedOf(const std::string& pem) const;

  std::unique_ptr<Issuers> issuers_;
  mutable absl::Mutex checked_mu_;
  mutable absl::flat_hash_map<std::string, std::shared_ptr<const Checked>> checked_
      ABSL_GUARDED_BY(checked_mu_);
  const TokenVerifier* tokens_ = nullptr;
  const RevocationChecker* revocations_ = nullptr;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_AUTH_AUTHENTICATE_H_

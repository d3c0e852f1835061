#ifndef SMBFLEET_COLLECTOR_AUTH_API_TOKENS_H_
#define SMBFLEET_COLLECTOR_AUTH_API_TOKENS_H_

// People's bearer tokens: `sft_<id>_<secret>`, the id (16 hex digits) public and listed, the
// secret (32 random bytes, 64 hex digits) shown once at creation. The store keeps the SHA-256 of
// the secret; a presented token is compared in constant time, then checked for revocation and
// expiry. Errors name the token id, never the secret.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collector/auth/authenticate.h"
#include "collector/store/identity_store.h"

namespace smbfleet::collector {

struct ParsedToken {
  std::string id;
  std::string secret;  // 32 raw bytes
};

// UNAUTHENTICATED saying what is malformed (never echoing the token).
absl::StatusOr<ParsedToken> ParseApiToken(absl::string_view token);
std::string FormatApiToken(const std::string& id, const std::string& secret);
std::string Sha256(absl::string_view data);  // 32 raw bytes

class ApiTokens : public TokenVerifier {
 public:
  using Clock = std::function<absl::Time()>;
  // The longest a token may live; a later expires_at is brought down to it.
  static constexpr absl::Duration kMaxLifetime = absl::Hours(24 * 90);

  explicit ApiTokens(IdentityStore* store, Clock clock = absl::Now)
      : store_(store), clock_(std::move(clock)) {}

  struct Created {
    smbfleet::v1::ApiToken token;
    std::string bearer;  // sft_<id>_<secret>: to show once
  };
  // INVALID_ARGUMENT naming the field: name (operator name), roles (one or more of viewer,
  // proposer, approver, admin), expires_at (required, in the future).
  absl::StatusOr<Created> Create(const std::string& name, const std::vector<std::string>& roles,
                                 absl::Time expires_at, const std::string& created_by);

  absl::StatusOr<Principal> VerifyToken(absl::string_view token) const override;

 private:
  IdentityStore* store_;
  Clock clock_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_AUTH_API_TOKENS_H_

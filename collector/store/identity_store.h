#ifndef SMBFLEET_COLLECTOR_STORE_IDENTITY_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_IDENTITY_STORE_H_

// People's bearer tokens and revoked certificates (migration 0005). A token's secret is never
// stored: only the SHA-256 of it, which the collector compares in constant time. Revocations
// are never undone; every collector replica reads them (and is told of new ones) so that a
// revoked certificate is refused everywhere.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::collector {

// A token as stored: its public record and the SHA-256 of its secret (32 raw bytes).
struct StoredApiToken {
  smbfleet::v1::ApiToken token;
  std::string secret_sha256;
};

class IdentityStore {
 public:
  virtual ~IdentityStore() = default;

  // AlreadyExists when the id is taken.
  virtual absl::Status AddApiToken(const StoredApiToken& token) = 0;
  virtual absl::StatusOr<std::optional<StoredApiToken>> GetApiToken(const std::string& id) = 0;
  // Ordered by created_at, then id. Without include_inactive: neither revoked nor expired at
  // `now`.
  virtual absl::StatusOr<std::vector<smbfleet::v1::ApiToken>> ListApiTokens(bool include_inactive,
                                                                            absl::Time now) = 0;
  // NotFound for an unknown id; FailedPrecondition when revoked already.
  virtual absl::StatusOr<smbfleet::v1::ApiToken> RevokeApiToken(const std::string& id,
                                                                const std::string& revoked_by,
                                                                const std::string& reason,
                                                                absl::Time at) = 0;

  // Stores a certificate revocation (serial and/or fingerprint, lower-case hex), or a host
  // revocation (host only, lower case: every certificate of that host, and re-enrollment);
  // revoked_at set by the caller. On PostgreSQL, notifies kRevocationChannel in the same
  // transaction. AlreadyExists when that serial, fingerprint or host is revoked already.
  virtual absl::StatusOr<smbfleet::v1::Revocation> AddRevocation(
      const smbfleet::v1::Revocation& revocation) = 0;
  // Oldest first.
  virtual absl::StatusOr<std::vector<smbfleet::v1::Revocation>> ListRevocations() = 0;
};

std::unique_ptr<IdentityStore> NewMemoryIdentityStore();

// The PostgreSQL channel told of each new revocation (payload: empty; listeners re-read).
inline constexpr char kRevocationChannel[] = "smbfleet_revocations";

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_IDENTITY_STORE_H_

#ifndef SMBFLEET_COLLECTOR_STORE_ENROLLMENT_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_ENROLLMENT_STORE_H_

// Enrollment tokens (only the SHA-256 of each secret is kept), the certificates the issuing CA
// made, and the host labels policy trusts. Those labels come from the collector side only: an
// enrollment token's scope or an admin's SetHostLabels; what an agent reports is never here.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::collector {

struct EnrollmentTokenRecord {
  smbfleet::v1::EnrollmentToken token;  // uses = max_uses - uses left
  std::string secret_sha256;            // 32 raw bytes
};

using HostLabels = std::map<std::string, std::string>;

class EnrollmentStore {
 public:
  virtual ~EnrollmentStore() = default;

  // Stores a new token (id, labels, max_uses, expires_at, created_by/at, comment,
  // allow_reenrollment) with all its uses left. AlreadyExists for a known id.
  virtual absl::Status CreateToken(const smbfleet::v1::EnrollmentToken& token,
                                   const std::string& secret_sha256) = 0;
  virtual absl::StatusOr<std::optional<EnrollmentTokenRecord>> GetToken(const std::string& id) = 0;
  // Newest first. Without include_inactive: only tokens neither revoked, expired at `now` nor
  // used up.
  virtual absl::StatusOr<std::vector<smbfleet::v1::EnrollmentToken>> ListTokens(
      bool include_inactive, absl::Time now) = 0;
  // NotFound for an unknown id; FailedPrecondition when revoked already.
  virtual absl::StatusOr<smbfleet::v1::EnrollmentToken> RevokeToken(const std::string& id,
                                                                    const std::string& revoked_by,
                                                                    const std::string& reason,
                                                                    absl::Time at) = 0;
  // Takes one use, atomically: of callers racing for the last use exactly one succeeds.
  // NotFound for an unknown id; FailedPrecondition (saying which) when the token is revoked,
  // expired at `now` or used up. Returns the token after the use.
  virtual absl::StatusOr<smbfleet::v1::EnrollmentToken> TakeUse(const std::string& id,
                                                                absl::Time now) = 0;

  // AlreadyExists for a known serial or fingerprint.
  virtual absl::Status RecordCertificate(const smbfleet::v1::IssuedCertificate& cert) = 0;
  // By host, then issued_at. Empty host: every host. Without include_inactive: only those
  // unrevoked and not expired at `now`.
  virtual absl::StatusOr<std::vector<smbfleet::v1::IssuedCertificate>> ListCertificates(
      const std::string& host, bool include_inactive, absl::Time now) = 0;

  // The trusted labels of a host (lower case name); empty when it has none.
  virtual absl::StatusOr<HostLabels> GetHostLabels(const std::string& host) = 0;
  // The trusted labels of each of `hosts` (a host without labels maps to an empty set), in one
  // read when the store can.
  virtual absl::StatusOr<std::map<std::string, HostLabels>> GetHostLabelsOf(
      const std::vector<std::string>& hosts) {
    std::map<std::string, HostLabels> out;
    for (const std::string& host : hosts) {
      absl::StatusOr<HostLabels> labels = GetHostLabels(host);
      if (!labels.ok()) return labels.status();
      out[host] = *std::move(labels);
    }
    return out;
  }
  // Replaces the host's trusted labels.
  virtual absl::Status SetHostLabels(const std::string& host, const HostLabels& labels,
                                     const std::string& set_by, absl::Time at) = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_ENROLLMENT_STORE_H_

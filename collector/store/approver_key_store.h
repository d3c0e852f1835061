#ifndef SMBFLEET_COLLECTOR_STORE_APPROVER_KEY_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_APPROVER_KEY_STORE_H_

// Approvers' Ed25519 public keys, registered by an admin (the private keys stay on the
// approvers' machines). ApproveChange checks a signature against the caller's own unrevoked key.
// A revoked key stays listed (with who revoked it and when) so that old approvals can still be
// traced to it; it never becomes valid again.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::collector {

class ApproverKeyStore {
 public:
  virtual ~ApproverKeyStore() = default;

  // Stores `key` (name, key_id, public_key, added_by, added_at). AlreadyExists when the key id
  // is registered already (to anyone, revoked or not).
  virtual absl::Status AddKey(const smbfleet::v1::ApproverKey& key) = 0;
  virtual absl::StatusOr<std::optional<smbfleet::v1::ApproverKey>> GetKey(
      const std::string& key_id) = 0;
  // Ordered by name, then added_at; revoked keys only when asked for.
  virtual absl::StatusOr<std::vector<smbfleet::v1::ApproverKey>> ListKeys(bool include_revoked) = 0;
  // NotFound for an unknown key id; FailedPrecondition when it is revoked already.
  virtual absl::StatusOr<smbfleet::v1::ApproverKey> RevokeKey(const std::string& key_id,
                                                              const std::string& revoked_by,
                                                              const std::string& reason,
                                                              absl::Time at) = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_APPROVER_KEY_STORE_H_

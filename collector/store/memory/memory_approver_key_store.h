#ifndef SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_APPROVER_KEY_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_APPROVER_KEY_STORE_H_

// The ApproverKeyStore in memory: unit tests and a collector without a database.

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/approver_key_store.h"

namespace smbfleet::collector {

class MemoryApproverKeyStore : public ApproverKeyStore {
 public:
  absl::Status AddKey(const smbfleet::v1::ApproverKey& key) override;
  absl::StatusOr<std::optional<smbfleet::v1::ApproverKey>> GetKey(
      const std::string& key_id) override;
  absl::StatusOr<std::vector<smbfleet::v1::ApproverKey>> ListKeys(bool include_revoked) override;
  absl::StatusOr<smbfleet::v1::ApproverKey> RevokeKey(const std::string& key_id,
                                                      const std::string& revoked_by,
                                                      const std::string& reason,
                                                      absl::Time at) override;

 private:
  absl::Mutex mu_;
  std::map<std::string, smbfleet::v1::ApproverKey> keys_ ABSL_GUARDED_BY(mu_);  // by key id
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_APPROVER_KEY_STORE_H_

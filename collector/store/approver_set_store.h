#ifndef SMBFLEET_COLLECTOR_STORE_APPROVER_SET_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_APPROVER_SET_STORE_H_

// The approver sets an admin published: sets of approver keys signed by the fleet's offline root.
// The collector cannot verify the root (agents pin it); it keeps the latest set and forwards it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::collector {

class ApproverSetStore {
 public:
  virtual ~ApproverSetStore() = default;
  // The published set with the greatest serial; nullopt before the first.
  virtual absl::StatusOr<std::optional<smbfleet::v1::SignedApproverSet>> Latest() = 0;
  // Keeps `set` (whose ApproverSet has `serial`). FAILED_PRECONDITION when a set with this serial
  // or a greater one was published: agents would refuse it.
  virtual absl::Status Publish(const smbfleet::v1::SignedApproverSet& set, uint64_t serial,
                               const std::string& published_by) = 0;
};

// In memory: one process, lost at exit.
std::unique_ptr<ApproverSetStore> NewMemoryApproverSetStore();

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_APPROVER_SET_STORE_H_

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/approver_set_store.h"

namespace smbfleet::collector {
namespace {

class MemoryApproverSetStore : public ApproverSetStore {
 public:
  absl::StatusOr<std::optional<smbfleet::v1::SignedApproverSet>> Latest() override {
    absl::MutexLock lock(&mu_);
    return latest_;
  }

  absl::Status Publish(const smbfleet::v1::SignedApproverSet& set, uint64_t serial,
                       const std::string&) override {
    absl::MutexLock lock(&mu_);
    if (latest_.has_value() && serial <= serial_) {
      return absl::FailedPreconditionError(absl::StrCat("approver set serial ", serial,
                                                        " is not greater than the published ",
                                                        serial_, "; agents would refuse it"));
    }
    latest_ = set;
    serial_ = serial;
    return absl::OkStatus();
  }

 private:
  absl::Mutex mu_;
  std::optional<smbfleet::v1::SignedApproverSet> latest_ ABSL_GUARDED_BY(mu_);
  uint64_t serial_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::unique_ptr<ApproverSetStore> NewMemoryApproverSetStore() {
  return std::make_unique<MemoryApproverSetStore>();
}

}  // namespace smbfleet::collector

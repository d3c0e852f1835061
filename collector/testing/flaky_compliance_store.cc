#include "collector/testing/flaky_compliance_store.h"

#include <utility>

namespace smbfleet::collector::testing {

void FlakyComplianceStore::FailNextSave(When when, absl::Status error) {
  absl::MutexLock lock(&mu_);
  when_ = when;
  error_ = std::move(error);
}

size_t FlakyComplianceStore::saves() const {
  absl::MutexLock lock(&mu_);
  return saves_;
}

absl::Status FlakyComplianceStore::SaveEvaluation(const EvaluationWrite& write) {
  absl::Status error;
  When when = When::kBeforeSave;
  {
    absl::MutexLock lock(&mu_);
    error = std::exchange(error_, absl::OkStatus());
    when = when_;
  }
  if (!error.ok() && when == When::kBeforeSave) return error;
  absl::Status saved = inner()->SaveEvaluation(write);
  if (saved.ok()) {
    absl::MutexLock lock(&mu_);
    ++saves_;
  }
  return error.ok() ? saved : error;
}

}  // namespace smbfleet::collector::testing

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

std::pair<absl::Status, FlakyComplianceStore::When> FlakyComplianceStore::TakeError() {
  absl::MutexLock lock(&mu_);
  return {std::exchange(error_, absl::OkStatus()), when_};
}

absl::Status FlakyComplianceStore::SaveEvaluation(const EvaluationWrite& write) {
  auto [error, when] = TakeError();
  if (!error.ok() && when == When::kBeforeSave) return error;
  absl::Status saved = inner()->SaveEvaluation(write);
  if (saved.ok()) {
    absl::MutexLock lock(&mu_);
    ++saves_;
  }
  return error.ok() ? saved : error;
}

absl::StatusOr<std::vector<absl::Status>> FlakyComplianceStore::SaveEvaluations(
    const std::vector<EvaluationWrite>& writes) {
  auto [error, when] = TakeError();
  if (!error.ok() && when == When::kBeforeSave) return error;
  absl::StatusOr<std::vector<absl::Status>> saved = inner()->SaveEvaluations(writes);
  if (saved.ok()) {
    absl::MutexLock lock(&mu_);
    for (const absl::Status& s : *saved) saves_ += s.ok() ? 1 : 0;
  }
  if (!error.ok()) return error;
  return saved;
}

}  // namespace smbfleet::collector::testing

#ifndef SMBFLEET_COLLECTOR_TESTING_FLAKY_COMPLIANCE_STORE_H_
#define SMBFLEET_COLLECTOR_TESTING_FLAKY_COMPLIANCE_STORE_H_

// ComplianceStores that forward to another, for tests that interfere with a call: one that
// fails the next SaveEvaluation or SaveEvaluations (a page) once, before the save (nothing
// written) or after it (written, but the caller hears an error, as when the connection drops
// during COMMIT).

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/compliance_store.h"

namespace smbfleet::collector::testing {

// Forwards every call to another store; tests override what they interfere with.
class ForwardingComplianceStore : public ComplianceStore {
 public:
  explicit ForwardingComplianceStore(ComplianceStore* inner) : inner_(inner) {}

  absl::Status ActivatePolicy(const std::string& name, const std::string& version,
                              const std::string& source) override {
    return inner_->ActivatePolicy(name, version, source);
  }
  absl::StatusOr<std::vector<smbfleet::v1::Waiver>> ActiveWaivers() override {
    return inner_->ActiveWaivers();
  }
  absl::StatusOr<std::string> EvaluationKey(const std::string& host) override {
    return inner_->EvaluationKey(host);
  }
  absl::StatusOr<std::vector<ResultStatus>> CurrentResults(const std::string& host,
                                                           const std::string& policy) override {
    return inner_->CurrentResults(host, policy);
  }
  absl::Status SaveEvaluation(const EvaluationWrite& write) override {
    return inner_->SaveEvaluation(write);
  }
  absl::StatusOr<std::vector<EvaluationState>> EvaluationStates(const std::string& after_host,
                                                                uint32_t limit) override {
    return inner_->EvaluationStates(after_host, limit);
  }
  absl::StatusOr<std::map<std::string, StoredEvaluation>> StoredEvaluations(
      const std::vector<std::string>& hosts, const std::string& policy_name) override {
    return inner_->StoredEvaluations(hosts, policy_name);
  }
  absl::StatusOr<std::vector<absl::Status>> SaveEvaluations(
      const std::vector<EvaluationWrite>& writes) override {
    return inner_->SaveEvaluations(writes);
  }
  absl::StatusOr<smbfleet::v1::GetComplianceResponse> GetCompliance() override {
    return inner_->GetCompliance();
  }
  absl::StatusOr<std::vector<smbfleet::v1::Finding>> ListFindings(const std::string& host,
                                                                  const std::string& rule_id,
                                                                  uint32_t limit) override {
    return inner_->ListFindings(host, rule_id, limit);
  }

 protected:
  ComplianceStore* inner() const { return inner_; }

 private:
  ComplianceStore* const inner_;
};

class FlakyComplianceStore : public ForwardingComplianceStore {
 public:
  enum class When { kBeforeSave, kAfterSave };

  using ForwardingComplianceStore::ForwardingComplianceStore;

  // The next SaveEvaluation or SaveEvaluations fails with `error`, at `when`; the ones after
  // it pass through.
  void FailNextSave(When when, absl::Status error);
  // Evaluations that reached the inner store and were saved (each of a page counts).
  size_t saves() const;

  absl::Status SaveEvaluation(const EvaluationWrite& write) override;
  absl::StatusOr<std::vector<absl::Status>> SaveEvaluations(
      const std::vector<EvaluationWrite>& writes) override;

 private:
  // The error set for the next save and when it strikes; clears it.
  std::pair<absl::Status, When> TakeError();

  mutable absl::Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  When when_ ABSL_GUARDED_BY(mu_) = When::kBeforeSave;
  size_t saves_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace smbfleet::collector::testing

#endif  // SMBFLEET_COLLECTOR_TESTING_FLAKY_COMPLIANCE_STORE_H_

#ifndef SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_STORE_H_

// In-memory stores for unit tests of the services, the pipeline and push. They keep the
// contracts of the interfaces (dedupe by host and report id and by digest, order by collection
// time, NotFound for unknown hosts,
// classifications on GetHost) without SQL; what only SQL views compute (compliance over time)
// is not modelled.

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/compliance_store.h"
#include "collector/store/enrollment_store.h"
#include "collector/store/host_store.h"

namespace smbfleet::collector {

class MemoryHostStore : public HostStore {
 public:
  absl::StatusOr<SavedReport> StoreReport(const IncomingReport& report) override;
  absl::StatusOr<std::vector<smbfleet::v1::HostSummary>> ListHosts(const HostQuery& query) override;
  absl::StatusOr<std::optional<HostRecord>> GetHost(const std::string& name) override;
  absl::StatusOr<HostPage> FindHosts(const HostQuery& query) override;

  // Where the trusted labels of the label filter come from (the host_labels table in SQL);
  // null: no host has trusted labels. Not owned.
  void SetTrustedLabels(EnrollmentStore* enrollment);
  absl::StatusOr<HostLabels> TrustedLabels(const std::string& host) const;
  // Whether `host` has a failing result of the active policy for `rule` ("*": any rule): set
  // by MemoryComplianceStore, which holds the results.
  using FailingFn = std::function<bool(const std::string& host, const std::string& rule)>;
  void SetFailing(FailingFn failing);

  // For MemoryComplianceStore, which shares the hosts as the SQL tables do.
  bool Exists(const std::string& host) const;
  // Every host as GetHost returns it, by name.
  std::vector<HostRecord> Snapshot() const;
  void SetClassifications(const std::string& host, const smbfleet::v1::HostEvaluation& eval);
  size_t postures_stored() const;

 private:
  struct Host {
    smbfleet::v1::HostSummary summary;
    smbfleet::v1::Posture posture;
    std::string digest;
    std::string last_report_id;
    // posture.collected_at of the newest report applied; unset: none carried one.
    std::optional<absl::Time> last_collected_at;
    std::map<std::string, smbfleet::v1::ShareClassification> classifications;
  };

  mutable absl::Mutex mu_;
  std::map<std::string, Host> hosts_ ABSL_GUARDED_BY(mu_);
  EnrollmentStore* enrollment_ ABSL_GUARDED_BY(mu_) = nullptr;
  FailingFn failing_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<std::string, std::string>> report_ids_ ABSL_GUARDED_BY(mu_);  // host, id
  size_t postures_stored_ ABSL_GUARDED_BY(mu_) = 0;
};

// Shares the hosts of a MemoryHostStore, as the SQL tables do; keep that store alive.
class MemoryComplianceStore : public ComplianceStore {
 public:
  explicit MemoryComplianceStore(MemoryHostStore* hosts);
  ~MemoryComplianceStore() override;

  absl::Status ActivatePolicy(const std::string& name, const std::string& version,
                              const std::string& source) override;
  absl::StatusOr<std::vector<smbfleet::v1::Waiver>> ActiveWaivers() override;
  absl::StatusOr<std::string> EvaluationKey(const std::string& host) override;
  absl::StatusOr<std::vector<EvaluationState>> EvaluationStates(const std::string& after_host,
                                                                uint32_t limit) override;
  absl::StatusOr<std::vector<ResultStatus>> CurrentResults(const std::string& host,
                                                           const std::string& policy_name) override;
  absl::Status SaveEvaluation(const EvaluationWrite& write) override;
  absl::StatusOr<std::map<std::string, StoredEvaluation>> StoredEvaluations(
      const std::vector<std::string>& hosts, const std::string& policy_name) override;
  // All of them under one lock, as one transaction.
  absl::StatusOr<std::vector<absl::Status>> SaveEvaluations(
      const std::vector<EvaluationWrite>& writes) override;
  absl::StatusOr<smbfleet::v1::GetComplianceResponse> GetCompliance() override;
  absl::StatusOr<smbfleet::v1::GetFleetOverviewResponse> GetFleetOverview(
      const OverviewQuery& query) override;
  absl::StatusOr<std::vector<smbfleet::v1::Finding>> ListFindings(const std::string& host,
                                                                  const std::string& rule_id,
                                                                  uint32_t limit) override;
  absl::StatusOr<std::vector<smbfleet::v1::Finding>> ListWaivedFindings(const std::string& host,
                                                                        const std::string& rule_id,
                                                                        uint32_t limit) override;

  // The hosts it shares (for MemoryChangeStore's platform of a host).
  MemoryHostStore* host_store() const { return hosts_; }

  // Test controls and observations.
  void SetActiveWaivers(std::vector<smbfleet::v1::Waiver> waivers);
  // ActiveWaivers asks `source` instead (MemoryChangeStore's waivers in force now); null: the
  // list SetActiveWaivers gave.
  using WaiverSource = std::function<absl::StatusOr<std::vector<smbfleet::v1::Waiver>>()>;
  void SetWaiverSource(WaiverSource source);
  // Every SaveEvaluation fails with this status until it is set back to OK.
  void FailEvaluations(absl::Status status);
  size_t evaluations_saved() const;
  std::vector<smbfleet::v1::StatusTransition> transitions(const std::string& host) const;

 private:
  MemoryHostStore* const hosts_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> active_versions_ ABSL_GUARDED_BY(mu_);  // by policy name
  std::vector<smbfleet::v1::Waiver> waivers_ ABSL_GUARDED_BY(mu_);
  WaiverSource waiver_source_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> keys_ ABSL_GUARDED_BY(mu_);  // by host
  // host -> policy name -> its latest evaluation.
  std::map<std::string, std::map<std::string, smbfleet::v1::HostEvaluation>> results_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<smbfleet::v1::StatusTransition>> transitions_
      ABSL_GUARDED_BY(mu_);
  bool Failing(const std::string& host, const std::string& rule) const;
  // SaveEvaluation's check and write of one host that exists.
  absl::Status SaveLocked(const EvaluationWrite& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The results of the active version of each policy, by host.
  std::map<std::string, std::vector<const smbfleet::v1::RuleResult*>> ActiveResults() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<smbfleet::v1::Finding> Findings(const std::string& host, const std::string& rule_id,
                                              uint32_t limit, smbfleet::v1::ComplianceStatus status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Status fail_evaluations_ ABSL_GUARDED_BY(mu_);
  size_t evaluations_saved_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_STORE_H_

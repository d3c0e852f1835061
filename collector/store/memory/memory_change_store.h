#ifndef SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_CHANGE_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_CHANGE_STORE_H_

// The ChangeStore in memory: for unit tests of the change workflow and for a collector started
// without a database. It keeps the interface's contracts (one step at a time per change, the
// four-eyes constraints, desired vs applied per host, audit sequence numbers) without SQL.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/change_store.h"
#include "collector/store/memory/memory_store.h"

namespace smbfleet::collector {

class MemoryChangeStore : public ChangeStore {
 public:
  // When `compliance` is given, its ActiveWaivers are this store's waivers in force (approved,
  // unrevoked, unexpired), as the SQL view waivers_active is for the PostgreSQL store. Destroy
  // this store first.
  explicit MemoryChangeStore(MemoryComplianceStore* compliance = nullptr);
  ~MemoryChangeStore() override;

  absl::Status CreateChange(const smbfleet::v1::Change& change,
                            const std::vector<smbfleet::v1::AuditEntry>& audit) override;
  absl::StatusOr<std::optional<smbfleet::v1::Change>> GetChange(const std::string& id) override;
  absl::StatusOr<std::vector<smbfleet::v1::Change>> ListChanges(const ChangeQuery& query) override;
  absl::StatusOr<smbfleet::v1::Change> UpdateChange(const std::string& id,
                                                    const StepFn& step) override;
  absl::Status UpdateChangeHosts(const std::string& id, const std::vector<std::string>& hosts,
                                 const HostsStepFn& step) override;
  absl::Status UpdateHostCounters(const std::string& change_id, const std::string& host,
                                  const CountersStepFn& step) override;
  absl::StatusOr<MeasuredChangeHosts> ListMeasuredChangeHosts(absl::Time since,
                                                              uint32_t limit) override;
  absl::StatusOr<int64_t> SaveCostModelCalibration(
      const smbfleet::v1::CostModelCalibration& calibration,
      smbfleet::v1::AuditEntry audit) override;
  absl::StatusOr<std::vector<smbfleet::v1::CostModelCalibration>> ListCostModelCalibrations(
      uint32_t limit) override;
  absl::StatusOr<std::vector<smbfleet::v1::Change>> PendingForHost(const std::string& host,
                                                                   absl::Time now) override;
  absl::StatusOr<std::map<std::string, std::vector<smbfleet::v1::Change>>> PendingForHosts(
      const std::vector<std::string>& hosts, absl::Time now) override;
  absl::StatusOr<std::vector<std::string>> LiveChangeIds() override;
  absl::StatusOr<std::map<std::string, smbfleet::v1::HostChangeStatus>> HostStatuses(
      const std::vector<std::string>& hosts) override;
  absl::StatusOr<Drift> DriftedHosts(uint32_t limit) override;
  absl::Status AppendAudit(const std::vector<smbfleet::v1::AuditEntry>& entries) override;
  absl::StatusOr<std::vector<smbfleet::v1::AuditEntry>> ListAudit(const AuditQuery& query) override;
  absl::Status CreateWaiver(const smbfleet::v1::Waiver& waiver,
                            const smbfleet::v1::AuditEntry& audit) override;
  absl::StatusOr<smbfleet::v1::Waiver> UpdateWaiver(const std::string& id,
                                                    const WaiverStepFn& step) override;
  absl::StatusOr<std::vector<smbfleet::v1::Waiver>> ListWaivers(bool include_inactive,
                                                                absl::Time now) override;

 private:
  struct Stored {
    uint64_t created_seq = 0;     // creation order, for "oldest first" and "newest first"
    smbfleet::v1::Change change;  // its hosts without counters
    // Per host, a ChangeHost with only the counter fields: kept apart as the database keeps
    // them, so that workflow steps neither see nor write them.
    std::map<std::string, smbfleet::v1::ChangeHost> counters;
  };

  absl::Status CheckNewChangeLocked(const smbfleet::v1::Change& change) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void InsertLocked(const smbfleet::v1::Change& change) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AppendAuditLocked(std::vector<smbfleet::v1::AuditEntry> entries)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Desired vs applied: what the step changed for each host (`before` null for a new change).
  void UpdateHostStatusesLocked(const smbfleet::v1::Change* before,
                                const smbfleet::v1::Change& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lock that keeps steps on one change in order; created on first use.
  std::shared_ptr<absl::Mutex> StepLock(const std::string& id);

  MemoryComplianceStore* const compliance_;
  mutable absl::Mutex mu_;
  std::map<std::string, Stored> changes_ ABSL_GUARDED_BY(mu_);
  uint64_t next_change_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, std::shared_ptr<absl::Mutex>> step_locks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, smbfleet::v1::HostChangeStatus> host_statuses_ ABSL_GUARDED_BY(mu_);
  std::vector<smbfleet::v1::AuditEntry> audit_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, smbfleet::v1::Waiver> waivers_ ABSL_GUARDED_BY(mu_);
  std::vector<smbfleet::v1::CostModelCalibration> calibrations_ ABSL_GUARDED_BY(mu_);  // by id
  std::map<std::string, std::shared_ptr<absl::Mutex>> waiver_locks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_CHANGE_STORE_H_

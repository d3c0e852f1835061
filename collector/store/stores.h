#ifndef SMBFLEET_COLLECTOR_STORE_STORES_H_
#define SMBFLEET_COLLECTOR_STORE_STORES_H_

// The collector's stores, one per concern, as a backend (PostgreSQL or memory) hands them out.

#include <functional>
#include <memory>

#include "collector/store/approver_key_store.h"
#include "collector/store/approver_set_store.h"
#include "collector/store/change_store.h"
#include "collector/store/compliance_store.h"
#include "collector/store/enrollment_store.h"
#include "collector/store/history_store.h"
#include "collector/store/host_store.h"
#include "collector/store/identity_store.h"
#include "collector/store/job_claims.h"

namespace smbfleet::collector {

class Metrics;

struct Stores {
  std::unique_ptr<HostStore> hosts;
  std::unique_ptr<ComplianceStore> compliance;
  std::unique_ptr<ChangeStore> changes;             // may be null until a backend provides it
  std::unique_ptr<ApproverKeyStore> approver_keys;  // may be null: then kept in memory
  std::unique_ptr<ApproverSetStore> approver_sets;  // null: kept in memory by this process
  std::unique_ptr<IdentityStore> identity;          // tokens, revocations; null: kept in memory
  std::unique_ptr<EnrollmentStore> enrollment;      // null: kept in memory by this process
  std::unique_ptr<JobClaims> claims;                // null: claimed within this process only
  std::unique_ptr<HistoryStore> history;            // null: history not kept by day (memory)
  // Where the backend counts database errors and pool waits (PostgreSQL: its connection pool);
  // empty: the backend counts nothing. Called once, before the stores are shared.
  std::function<void(Metrics*)> set_metrics;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_STORES_H_

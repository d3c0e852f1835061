#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_APPROVER_SET_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_APPROVER_SET_STORE_H_

#include <memory>

#include "collector/store/approver_set_store.h"
#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

// The approver_sets table (migration 0008); every replica on the database sees the same latest.
std::unique_ptr<ApproverSetStore> NewPgApproverSetStore(std::shared_ptr<ConnectionPool> pool);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_APPROVER_SET_STORE_H_

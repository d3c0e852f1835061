#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_APPROVER_KEY_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_APPROVER_KEY_STORE_H_

// The ApproverKeyStore on PostgreSQL (migration 0007, table approver_keys).

#include <memory>

#include "collector/store/approver_key_store.h"
#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

std::unique_ptr<ApproverKeyStore> NewPgApproverKeyStore(std::shared_ptr<ConnectionPool> pool);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_APPROVER_KEY_STORE_H_

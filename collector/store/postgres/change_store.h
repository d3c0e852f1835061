#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_CHANGE_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_CHANGE_STORE_H_

// The ChangeStore on PostgreSQL (migration 0004). Each workflow step is one transaction that
// locks the change row (SELECT ... FOR UPDATE), so steps on one change run one after another
// across collector processes; the step function runs while that row lock and one pooled
// connection are held, so it should not wait on anything slow nor call a store (that needs a
// second connection from the same pool): gather what it needs before UpdateChange.

#include <memory>

#include "collector/store/change_store.h"
#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

std::unique_ptr<ChangeStore> NewPgChangeStore(std::shared_ptr<ConnectionPool> pool);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_CHANGE_STORE_H_

#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_HISTORY_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_HISTORY_STORE_H_

#include <memory>

#include "collector/store/history_store.h"
#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

// The pass makes each partition (history_partition_create, migration 0016) and trims each table
// (history_trim_table, migration 0020) in a transaction of its own, each under a
// transaction-level advisory lock: a second collector finds it taken and skips the rest.
std::unique_ptr<HistoryStore> NewPgHistoryStore(std::shared_ptr<ConnectionPool> pool);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_HISTORY_STORE_H_

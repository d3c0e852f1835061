#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_HISTORY_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_HISTORY_STORE_H_

#include <memory>

#include "collector/store/history_store.h"
#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

// The pass runs history_partitions_ensure and history_trim (migration 0016) in one transaction
// under a transaction-level advisory lock: a second collector finds it taken and skips.
std::unique_ptr<HistoryStore> NewPgHistoryStore(std::shared_ptr<ConnectionPool> pool);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_HISTORY_STORE_H_

#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_HOST_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_HOST_STORE_H_

#include <memory>

#include "collector/store/host_store.h"
#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

std::unique_ptr<HostStore> NewPgHostStore(std::shared_ptr<ConnectionPool> pool);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_HOST_STORE_H_

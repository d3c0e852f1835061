#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_IDENTITY_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_IDENTITY_STORE_H_

// The IdentityStore on PostgreSQL (migration 0005: api_tokens, certificate_revocations).

#include <memory>

#include "collector/store/identity_store.h"
#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

std::unique_ptr<IdentityStore> NewPgIdentityStore(std::shared_ptr<ConnectionPool> pool);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_IDENTITY_STORE_H_

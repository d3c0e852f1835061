#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_PG_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_PG_STORE_H_

// The PostgreSQL backend: every store over one small connection pool.

#include <string>

#include "absl/status/statusor.h"
#include "collector/store/postgres/dsn.h"
#include "collector/store/postgres/migrations.h"
#include "collector/store/stores.h"

namespace smbfleet::collector {

// Checks that the server answers, then hands out the stores. Migrations are applied
// separately (ApplyMigrations), once per start.
absl::StatusOr<Stores> NewPgStore(const std::string& dsn, int pool_size);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_PG_STORE_H_

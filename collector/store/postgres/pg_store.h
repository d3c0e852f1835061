#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_PG_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_PG_STORE_H_

// The PostgreSQL backend: every store over one small connection pool.

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collector/store/postgres/connection_pool.h"
#include "collector/store/postgres/dsn.h"
#include "collector/store/postgres/migrations.h"
#include "collector/store/stores.h"

namespace smbfleet::collector {

// Checks that the server answers, then hands out the stores. Migrations are applied
// separately (ApplyMigrations), once per start. `close_pool` (may be null) gets a function that
// cuts every connection leased at the time and refuses new leases (ConnectionPool::Close), for
// shutdown.
absl::StatusOr<Stores> NewPgStore(const std::string& dsn, int pool_size, PoolOptions options = {},
                                  std::function<size_t()>* close_pool = nullptr);

// At start: tries to connect until it succeeds or `bound` has passed, waiting 0.5 s, 1 s, 2 s
// ... (at most 5 s) between tries. Logs a failed try's reason when it differs from the previous
// one's; the error names the database, the time waited and the last reason.
absl::Status WaitForDatabase(const std::string& dsn, absl::Duration bound);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_PG_STORE_H_

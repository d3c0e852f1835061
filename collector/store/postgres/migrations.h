#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_MIGRATIONS_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_MIGRATIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace smbfleet::collector {

struct Migration {
  std::string version;  // file name without .sql, e.g. "0001_init"
  std::string sql;
};

// The migrations compiled into this binary (collector/store/migrations/*.sql), in order.
const std::vector<Migration>& BuiltinMigrations();

// Applies every migration not yet applied, each in its own transaction, under an advisory lock
// so that collectors starting at once do not race. A migration whose text changed after it was
// applied is an error.
absl::Status ApplyMigrations(const std::string& dsn, const std::vector<Migration>& migrations);

// OK when the database answers and has every one of `migrations` applied (the collector's
// readiness); UNAVAILABLE when it cannot be reached, FAILED_PRECONDITION naming a missing one.
absl::Status CheckMigrations(const std::string& dsn, const std::vector<Migration>& migrations);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_MIGRATIONS_H_

#ifndef SMBFLEET_COLLECTOR_STORE_PG_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_PG_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "collector/store/store.h"

namespace smbfleet::collector {

struct Migration {
  std::string version;  // file name without .sql, e.g. "0001_init"
  std::string sql;
};

// The migrations compiled into this binary, in order.
const std::vector<Migration>& BuiltinMigrations();

// Applies every migration not yet applied, each in its own transaction, under an advisory lock
// so that collectors starting at once do not race. A migration whose text changed after it was
// applied is an error.
absl::Status ApplyMigrations(const std::string& dsn, const std::vector<Migration>& migrations);

// The connection string with any password removed, for messages.
std::string RedactDsn(const std::string& dsn);

// PostgreSQL store with a small pool of connections (libpqxx allows one transaction per
// connection at a time).
absl::StatusOr<std::unique_ptr<Store>> NewPgStore(const std::string& dsn, int pool_size);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_PG_STORE_H_

#include "collector/store/postgres/pg_store.h"

#include <pqxx/pqxx>
#include <thread>

#include "absl/strings/str_cat.h"
#include "collector/store/postgres/approver_key_store.h"
#include "collector/store/postgres/approver_set_store.h"
#include "collector/store/postgres/change_store.h"
#include "collector/store/postgres/compliance_store.h"
#include "collector/store/postgres/connection_pool.h"
#include "collector/store/postgres/enrollment_store.h"
#include "collector/store/postgres/history_store.h"
#include "collector/store/postgres/host_store.h"
#include "collector/store/postgres/identity_store.h"
#include "collector/store/postgres/job_claims.h"
#include "common/logging.h"

namespace smbfleet::collector {

absl::Status WaitForDatabase(const std::string& dsn, absl::Duration bound) {
  const absl::Time start = absl::Now();
  absl::Duration wait = absl::Milliseconds(500);
  std::string last_reason;
  for (int attempt = 1;; ++attempt) {
    std::string reason;
    try {
      pqxx::connection probe(dsn);
      if (probe.is_open()) {
        if (attempt > 1) {
          Logger("collector")
              ->info("database at {} answers after {} attempt(s)", RedactDsn(dsn), attempt);
        }
        return absl::OkStatus();
      }
      reason = "connection not open";
    } catch (const std::exception& e) {
      // libpq's message can span lines ("connection refused / Is the server running"); the
      // first one is the reason.
      const std::string what = e.what();
      reason = what.substr(0, what.find('\n'));
    }
    const absl::Duration waited = absl::Now() - start;
    if (waited >= bound) {
      return absl::UnavailableError(absl::StrCat(
          "PostgreSQL at ", RedactDsn(dsn), " not reachable after ",
          absl::FormatDuration(absl::Trunc(waited, absl::Seconds(1))), " (", attempt,
          " attempts; database.startup_timeout ", absl::FormatDuration(bound), "): ", reason));
    }
    if (reason != last_reason) {
      Logger("collector")
          ->warn("database at {} not reachable yet, retrying for up to {}: {}", RedactDsn(dsn),
                 absl::FormatDuration(bound), LogSafe(reason));
      last_reason = reason;
    }
    absl::SleepFor(std::min(wait, bound - waited));  // the last try at the bound
    wait = std::min(wait * 2, absl::Seconds(5));
  }
}

absl::StatusOr<Stores> NewPgStore(const std::string& dsn, int pool_size, PoolOptions options,
                                  std::function<size_t()>* close_pool) {
  try {
    pqxx::connection probe(dsn);
    if (!probe.is_open()) {
      return absl::UnavailableError(
          absl::StrCat("PostgreSQL at ", RedactDsn(dsn), " is not reachable"));
    }
  } catch (...) {
    return MapPgException(dsn, "connecting to the database");
  }
  auto pool = std::make_shared<ConnectionPool>(dsn, pool_size, options);
  Stores stores;
  stores.hosts = NewPgHostStore(pool);
  stores.compliance = NewPgComplianceStore(pool);
  stores.changes = NewPgChangeStore(pool);
  stores.approver_keys = NewPgApproverKeyStore(pool);
  stores.approver_sets = NewPgApproverSetStore(pool);
  stores.identity = NewPgIdentityStore(pool);
  stores.enrollment = NewPgEnrollmentStore(pool);
  stores.claims = NewPgJobClaims(dsn);
  stores.history = NewPgHistoryStore(pool);
  stores.set_metrics = [pool](Metrics* metrics) { pool->SetMetrics(metrics); };
  if (close_pool != nullptr) *close_pool = [pool] { return pool->Close(); };
  return stores;
}

}  // namespace smbfleet::collector

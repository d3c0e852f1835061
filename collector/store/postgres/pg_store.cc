#include "collector/store/postgres/pg_store.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "collector/store/postgres/approver_key_store.h"
#include "collector/store/postgres/approver_set_store.h"
#include "collector/store/postgres/change_store.h"
#include "collector/store/postgres/compliance_store.h"
#include "collector/store/postgres/connection_pool.h"
#include "collector/store/postgres/enrollment_store.h"
#include "collector/store/postgres/host_store.h"
#include "collector/store/postgres/identity_store.h"

namespace smbfleet::collector {

absl::StatusOr<Stores> NewPgStore(const std::string& dsn, int pool_size) {
  try {
    pqxx::connection probe(dsn);
    if (!probe.is_open()) {
      return absl::UnavailableError(
          absl::StrCat("PostgreSQL at ", RedactDsn(dsn), " is not reachable"));
    }
  } catch (...) {
    return MapPgException(dsn, "connecting to the database");
  }
  auto pool = std::make_shared<ConnectionPool>(dsn, pool_size);
  Stores stores;
  stores.hosts = NewPgHostStore(pool);
  stores.compliance = NewPgComplianceStore(pool);
  stores.changes = NewPgChangeStore(pool);
  stores.approver_keys = NewPgApproverKeyStore(pool);
  stores.approver_sets = NewPgApproverSetStore(pool);
  stores.identity = NewPgIdentityStore(pool);
  stores.enrollment = NewPgEnrollmentStore(pool);
  stores.set_metrics = [pool](Metrics* metrics) { pool->SetMetrics(metrics); };
  return stores;
}

}  // namespace smbfleet::collector

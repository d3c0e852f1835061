#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_COMPLIANCE_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_COMPLIANCE_STORE_H_

#include <memory>

#include "collector/store/compliance_store.h"
#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

std::unique_ptr<ComplianceStore> NewPgComplianceStore(std::shared_ptr<ConnectionPool> pool);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_COMPLIANCE_STORE_H_

#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_ENROLLMENT_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_ENROLLMENT_STORE_H_

// The EnrollmentStore on PostgreSQL (migration 0006: enrollment_tokens, issued_certificates,
// host_labels).

#include <memory>

#include "collector/store/enrollment_store.h"
#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

std::unique_ptr<EnrollmentStore> NewPgEnrollmentStore(std::shared_ptr<ConnectionPool> pool);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_ENROLLMENT_STORE_H_

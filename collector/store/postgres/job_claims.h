#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_JOB_CLAIMS_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_JOB_CLAIMS_H_

#include <memory>
#include <string>

#include "collector/store/job_claims.h"

namespace smbfleet::collector {

// A claim is a session-level advisory lock on its own connection (not one of the pool's): every
// process on the database sees it, and it ends when the connection closes, so a collector that
// dies mid-job frees the job for another at once.
std::unique_ptr<JobClaims> NewPgJobClaims(const std::string& dsn);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_JOB_CLAIMS_H_

#ifndef SMBFLEET_COLLECTOR_STORE_JOB_CLAIMS_H_
#define SMBFLEET_COLLECTOR_STORE_JOB_CLAIMS_H_

// Jobs that one collector process at a time runs against a shared database (the re-evaluation of
// stored postures): whoever holds a job's claim runs it; the others wait or skip it.

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace smbfleet::collector {

// Held while its owner runs the job; destroying it releases the claim. A claim also ends when
// its holder dies (PostgreSQL: the session that holds it closes).
class JobClaim {
 public:
  virtual ~JobClaim() = default;
};

class JobClaims {
 public:
  virtual ~JobClaims() = default;
  // The claim of `job`, or nullptr when another holder has it now. Errors: the database.
  virtual absl::StatusOr<std::unique_ptr<JobClaim>> TryClaim(const std::string& job) = 0;
};

// Claims among the users of this one object (a single process, the memory backend).
std::unique_ptr<JobClaims> NewLocalJobClaims();

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_JOB_CLAIMS_H_

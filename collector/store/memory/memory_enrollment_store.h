#ifndef SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_ENROLLMENT_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_ENROLLMENT_STORE_H_

// The EnrollmentStore in memory: unit tests and a collector without a database.

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/enrollment_store.h"

namespace smbfleet::collector {

class MemoryEnrollmentStore : public EnrollmentStore {
 public:
  absl::Status CreateToken(const smbfleet::v1::EnrollmentToken& token,
                           const std::string& secret_sha256) override;
  absl::StatusOr<std::optional<EnrollmentTokenRecord>> GetToken(const std::string& id) override;
  absl::StatusOr<std::vector<smbfleet::v1::EnrollmentToken>> ListTokens(bool include_inactive,
                                                                        absl::Time now) override;
  absl::StatusOr<smbfleet::v1::EnrollmentToken> RevokeToken(const std::string& id,
                                                            const std::string& revoked_by,
                                                            const std::string& reason,
                                                            absl::Time at) override;
  absl::StatusOr<smbfleet::v1::EnrollmentToken> TakeUse(const std::string& id,
                                                        absl::Time now) override;
  absl::Status RecordCertificate(const smbfleet::v1::IssuedCertificate& cert) override;
  absl::StatusOr<std::vector<smbfleet::v1::IssuedCertificate>> ListCertificates(
      const std::string& host, bool include_inactive, absl::Time now) override;
  absl::StatusOr<HostLabels> GetHostLabels(const std::string& host) override;
  absl::Status SetHostLabels(const std::string& host, const HostLabels& labels,
                             const std::string& set_by, absl::Time at) override;

 private:
  absl::Mutex mu_;
  std::map<std::string, EnrollmentTokenRecord> tokens_ ABSL_GUARDED_BY(mu_);           // by id
  std::map<std::string, smbfleet::v1::IssuedCertificate> certs_ ABSL_GUARDED_BY(mu_);  // serial
  std::map<std::string, HostLabels> labels_ ABSL_GUARDED_BY(mu_);                      // by host
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_MEMORY_MEMORY_ENROLLMENT_STORE_H_

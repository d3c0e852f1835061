#ifndef SMBFLEET_COLLECTOR_STORE_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_STORE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "smbfleet/v1/admin.pb.h"
#include "smbfleet/v1/policy.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::collector {

enum class SaveOutcome { kStored, kUnchanged, kDuplicate };

struct IncomingReport {
  std::string host;       // from the client certificate
  std::string report_id;  // validated UUID
  std::string reason;
  const smbfleet::v1::Posture* posture = nullptr;
  size_t size_bytes = 0;
  absl::Time received_at;
};

struct HostRecord {
  smbfleet::v1::HostSummary summary;
  smbfleet::v1::Posture posture;
  std::string last_report_id;
};

struct HostQuery {
  std::string name_prefix;
  std::string after_name;  // page token: names strictly greater
  uint32_t limit = 100;
};

// Persistence. Every failure is an absl::Status naming what failed; no database exception
// crosses this interface.
class Store {
 public:
  virtual ~Store() = default;
  virtual absl::StatusOr<SaveOutcome> SaveReport(const IncomingReport& report) = 0;
  virtual absl::StatusOr<std::vector<smbfleet::v1::HostSummary>> ListHosts(
      const HostQuery& query) = 0;
  virtual absl::StatusOr<std::optional<HostRecord>> GetHost(const std::string& name) = 0;

  // Compliance history (migration 0002). A policy version is registered and made the active
  // one at collector start; results of any other version stop counting.
  virtual absl::Status ActivatePolicy(const std::string& name, const std::string& version,
                                      const std::string& source) = 0;
  virtual absl::StatusOr<std::vector<smbfleet::v1::Waiver>> ActiveWaivers() = 0;
  // Stores a host's evaluation: the transitions against its previous results, then the new
  // results, in one transaction. Returns the number of transitions.
  virtual absl::StatusOr<size_t> SaveEvaluation(const std::string& host,
                                                const smbfleet::v1::HostEvaluation& eval) = 0;
  virtual absl::StatusOr<smbfleet::v1::GetComplianceResponse> GetCompliance() = 0;
  virtual absl::StatusOr<std::vector<smbfleet::v1::Finding>> ListFindings(
      const std::string& host, const std::string& rule_id, uint32_t limit) = 0;
};

// A stable digest of what a posture says, ignoring when it was collected and counters that
// move on their own (session ages), so that an unchanged host is recognised.
std::string PostureDigest(const smbfleet::v1::Posture& posture);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_STORE_H_

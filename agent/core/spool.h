#ifndef SMBFLEET_AGENT_CORE_SPOOL_H_
#define SMBFLEET_AGENT_CORE_SPOOL_H_

// Reports wait here until the collector acknowledges them, so that none is lost to a network
// outage or an agent restart. One file per report, written atomically; the oldest is dropped
// (and logged) only when the spool is full.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::agent {

class Spool {
 public:
  Spool(std::string dir, size_t max_reports);

  absl::Status Open();  // creates the directory (mode 0700)
  absl::Status Put(const smbfleet::v1::ReportRequest& report);
  // Report ids, oldest first.
  absl::StatusOr<std::vector<std::string>> List() const;
  absl::StatusOr<smbfleet::v1::ReportRequest> Get(const std::string& report_id) const;
  absl::Status Remove(const std::string& report_id);
  // Moves a report the collector will never accept to rejected/, for a person to look at.
  absl::Status Reject(const std::string& report_id);
  size_t dropped() const { return dropped_; }

 private:
  std::string PathOf(const std::string& report_id) const;

  std::string dir_;
  size_t max_reports_;
  size_t dropped_ = 0;
  uint64_t sequence_ = 0;
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_SPOOL_H_

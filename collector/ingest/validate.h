#ifndef SMBFLEET_COLLECTOR_INGEST_VALIDATE_H_
#define SMBFLEET_COLLECTOR_INGEST_VALIDATE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector {

struct IngestLimits {
  size_t max_string_bytes = 4096;
  size_t max_shares = 10'000;
  size_t max_sessions = 100'000;
  size_t max_events = 10'000;
  size_t max_labels = 64;
  size_t max_share_name_bytes = 255;
};

// Checks a report before it is stored. The error names the field and what is wrong, e.g.
// "posture.shares[3].name: 300 bytes, limit 255". All problems are listed, up to a bound.
absl::Status ValidateReport(const smbfleet::v1::ReportRequest& request,
                            const IngestLimits& limits = {});

bool IsUuid(absl::string_view s);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_INGEST_VALIDATE_H_

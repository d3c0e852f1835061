// Ingest of a report from wire bytes, as the collector does it: parse a ReportRequest, validate it
// with the collector's default limits and, when valid, digest its posture.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "collector/ingest/digest.h"
#include "collector/ingest/validate.h"
#include "google/protobuf/stubs/logging.h"
#include "smbfleet/v1/agent.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libprotobuf logs every string field with invalid UTF-8 it refuses; the refusal is what counts.
  static const bool kQuiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)kQuiet;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) return 0;
  smbfleet::v1::ReportRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (!smbfleet::collector::ValidateReport(request, smbfleet::collector::IngestLimits{}).ok()) {
    return 0;
  }
  std::string digest = smbfleet::PostureDigest(request.posture());
  if (digest.size() != 64) __builtin_trap();
  return 0;
}

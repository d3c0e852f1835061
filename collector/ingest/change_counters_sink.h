#ifndef SMBFLEET_COLLECTOR_INGEST_CHANGE_COUNTERS_SINK_H_
#define SMBFLEET_COLLECTOR_INGEST_CHANGE_COUNTERS_SINK_H_

// Counters around changes in reports (ReportRequest.change_counters): the pipeline hands them
// to a sink (the change workflow), which keeps them with the hosts' part in each change.

#include <string>

#include "google/protobuf/repeated_ptr_field.h"
#include "smbfleet/v1/change.pb.h"

namespace smbfleet::collector {

class ChangeCountersSink {
 public:
  virtual ~ChangeCountersSink() = default;
  // Called for each stored report (digest-only ones too) that carries counters. Never fails the
  // report: what the sink cannot keep, it logs.
  virtual void CountersReported(
      const std::string& host,
      const google::protobuf::RepeatedPtrField<smbfleet::v1::ChangeCounters>& counters) = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_INGEST_CHANGE_COUNTERS_SINK_H_

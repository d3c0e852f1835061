#ifndef SMBFLEET_COLLECTOR_INGEST_REFUSALS_H_
#define SMBFLEET_COLLECTOR_INGEST_REFUSALS_H_

// Refusal events in reports: a server refusing a client (or a client refused by a server) is
// what a rollout watches for after a wave applied. The pipeline hands them to an observer (the
// change workflow) for hosts in a live rollout only.

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::collector {

// Whether the event says a client was refused, by the agents' classification (Event.kind):
// Windows 1003, 1005, 3000, 3021, 3022, 31013, 31017 and Samba's logged encryption refusals.
// Events without a kind count by their Windows id.
bool IsRefusalEvent(const smbfleet::v1::Event& event);

struct SeenRefusal {
  std::string client;  // name, else address
  absl::Time at;
};

class RefusalObserver {
 public:
  virtual ~RefusalObserver() = default;
  // Cheap: called for every report.
  virtual bool Watching(const std::string& host) const = 0;
  virtual void RefusalsSeen(const std::string& host, const std::vector<SeenRefusal>& refusals) = 0;
};

// The refusal events of a posture.
std::vector<SeenRefusal> RefusalsIn(const smbfleet::v1::Posture& posture);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_INGEST_REFUSALS_H_

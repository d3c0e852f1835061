#ifndef SMBFLEET_COLLECTOR_STORE_HISTORY_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_HISTORY_STORE_H_

// The history's upkeep (docs/collector.md "History and retention"): the append-only tables are
// kept by UTC day; a pass makes the coming days and drops those older than the retention.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace smbfleet::collector {

struct HistoryPass {
  bool ran = false;                  // false: another collector holds the pass now
  std::vector<std::string> created;  // partitions made
  std::vector<std::string> dropped;  // partitions dropped
  std::vector<std::string> kept;     // old partitions kept: they hold current state
  int64_t trimmed_rows = 0;          // old rows deleted outside day partitions
};

class HistoryStore {
 public:
  virtual ~HistoryStore() = default;
  // One pass at `now`: the day partitions from the day before now to `days_ahead` days after,
  // and, with a retention above zero, the days wholly before now - retention dropped. One pass
  // at a time across collectors sharing the database.
  virtual absl::StatusOr<HistoryPass> Maintain(absl::Time now, absl::Duration retention,
                                               int days_ahead) = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_HISTORY_STORE_H_

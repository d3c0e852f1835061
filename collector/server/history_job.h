#ifndef SMBFLEET_COLLECTOR_SERVER_HISTORY_JOB_H_
#define SMBFLEET_COLLECTOR_SERVER_HISTORY_JOB_H_

// Keeps the history by day (docs/collector.md "History and retention"): a pass at start and
// every `history.interval` makes the coming days' partitions and drops the days older than
// `history.retention`. Each pass is logged; with two collectors on one database, one runs it and
// the other skips (the store's advisory lock).

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/config.h"
#include "collector/store/history_store.h"

namespace smbfleet::collector {

class HistoryJob {
 public:
  HistoryJob(HistoryStore* store, const HistoryConfig& config,
             std::function<absl::Time()> clock = absl::Now);
  ~HistoryJob();
  HistoryJob(const HistoryJob&) = delete;
  HistoryJob& operator=(const HistoryJob&) = delete;

  // Runs a pass in the background now, then one every interval until Stop.
  void Start();
  void Stop();
  // One pass here and now, logged.
  absl::StatusOr<HistoryPass> RunOnce();

 private:
  void Loop();

  HistoryStore* const store_;
  const HistoryConfig config_;
  const std::function<absl::Time()> clock_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVER_HISTORY_JOB_H_

#ifndef SMBFLEET_COLLECTOR_SERVICE_WORK_QUEUE_H_
#define SMBFLEET_COLLECTOR_SERVICE_WORK_QUEUE_H_

// Blocking work (database calls) runs here, off gRPC's callback threads. The queue is bounded:
// when it is full the caller tells the agent to come back later instead of piling up memory.

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collector/metrics/metrics.h"

namespace smbfleet::collector {

class WorkQueue {
 public:
  // `metrics` (may be null) gets the number of waiting tasks.
  WorkQueue(size_t threads, size_t max_pending, Metrics* metrics = nullptr);
  // Runs what is queued, then joins the threads.
  ~WorkQueue();

  // False when the queue is full or shutting down; the task is then not run.
  bool TrySubmit(std::function<void()> task);

 private:
  void Loop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !tasks_.empty();
  }

  const size_t max_pending_;
  Metrics* const metrics_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_WORK_QUEUE_H_

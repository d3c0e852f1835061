#ifndef SMBFLEET_COLLECTOR_SERVICE_WORK_QUEUE_H_
#define SMBFLEET_COLLECTOR_SERVICE_WORK_QUEUE_H_

// Blocking work (database calls) runs here, off gRPC's callback threads. The queue is bounded
// by count and by the bytes of the requests waiting: when it is full the caller tells the agent
// to come back later instead of piling up memory. At shutdown it drains for a bounded time and
// drops (answers) what did not start.

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/metrics/metrics.h"

namespace smbfleet::collector {

class WorkQueue {
 public:
  enum class Submitted { kQueued, kFull, kStopping };

  // `metrics` (may be null) gets the number of waiting tasks.
  WorkQueue(size_t threads, size_t max_pending, Metrics* metrics = nullptr,
            uint64_t max_pending_bytes = std::numeric_limits<uint64_t>::max());
  // Runs what is queued (unless Drain dropped it), then joins the threads.
  ~WorkQueue();

  // Queues `task`, counting `bytes` (the request it holds) against the byte bound until it
  // starts. When Drain drops the task instead of running it, `dropped` (may be empty) runs.
  Submitted Submit(std::function<void()> task, uint64_t bytes = 0,
                   std::function<void()> dropped = nullptr);
  // False when the queue is full or shutting down; the task is then not run.
  bool TrySubmit(std::function<void()> task) {
    return Submit(std::move(task)) == Submitted::kQueued;
  }

  // Shutdown: refuses new tasks, runs the queued ones until none is left or `deadline`, then
  // drops the rest (their `dropped` runs) and waits for the running ones until `deadline`.
  // Returns the number of tasks dropped, and sets *still_running to those not finished.
  size_t Drain(absl::Time deadline, size_t* still_running = nullptr);

 private:
  struct Task {
    std::function<void()> run;
    std::function<void()> dropped;
    uint64_t bytes = 0;
  };

  void Loop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !tasks_.empty();
  }
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return tasks_.empty() && running_ == 0; }
  bool NothingQueued() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return tasks_.empty(); }

  const size_t max_pending_;
  const uint64_t max_pending_bytes_;
  Metrics* const metrics_;
  absl::Mutex mu_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  uint64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_WORK_QUEUE_H_

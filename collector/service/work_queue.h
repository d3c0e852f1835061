#ifndef SMBFLEET_COLLECTOR_SERVICE_WORK_QUEUE_H_
#define SMBFLEET_COLLECTOR_SERVICE_WORK_QUEUE_H_

// Blocking work (database calls) runs here, off gRPC's callback threads. The queue is bounded:
// when it is full the caller tells the agent to come back later instead of piling up memory.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace smbfleet::collector {

class WorkQueue {
 public:
  WorkQueue(size_t threads, size_t max_pending);
  ~WorkQueue();

  // False when the queue is full or shutting down; the task is then not run.
  bool TrySubmit(std::function<void()> task);

 private:
  void Loop();

  const size_t max_pending_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_WORK_QUEUE_H_

#include "collector/service/work_queue.h"

namespace smbfleet::collector {

WorkQueue::WorkQueue(size_t threads, size_t max_pending, Metrics* metrics)
    : max_pending_(max_pending), metrics_(metrics) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkQueue::~WorkQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) t.join();
}

bool WorkQueue::TrySubmit(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || tasks_.size() >= max_pending_) return false;
  tasks_.push_back(std::move(task));
  if (metrics_ != nullptr) metrics_->SetIngestQueueDepth(tasks_.size());
  return true;
}

void WorkQueue::Loop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &WorkQueue::HasWorkOrStopping));
      if (tasks_.empty()) return;  // stopping, and everything queued has run
      task = std::move(tasks_.front());
      tasks_.pop_front();
      if (metrics_ != nullptr) metrics_->SetIngestQueueDepth(tasks_.size());
    }
    task();
  }
}

}  // namespace smbfleet::collector

#include "collector/service/work_queue.h"

namespace smbfleet::collector {

WorkQueue::WorkQueue(size_t threads, size_t max_pending, Metrics* metrics,
                     uint64_t max_pending_bytes)
    : max_pending_(max_pending), max_pending_bytes_(max_pending_bytes), metrics_(metrics) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkQueue::~WorkQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    accepting_ = false;
  }
  for (auto& t : threads_) t.join();
}

WorkQueue::Submitted WorkQueue::Submit(std::function<void()> task, uint64_t bytes,
                                       std::function<void()> dropped) {
  absl::MutexLock lock(&mu_);
  if (!accepting_) return Submitted::kStopping;
  // One task larger than the byte bound still runs when nothing else waits.
  if (tasks_.size() >= max_pending_ ||
      (!tasks_.empty() && pending_bytes_ + bytes > max_pending_bytes_)) {
    return Submitted::kFull;
  }
  tasks_.push_back(Task{std::move(task), std::move(dropped), bytes});
  pending_bytes_ += bytes;
  if (metrics_ != nullptr) metrics_->SetIngestQueueDepth(tasks_.size());
  return Submitted::kQueued;
}

size_t WorkQueue::Drain(absl::Time deadline, size_t* still_running) {
  std::deque<Task> dropped;
  {
    absl::MutexLock lock(&mu_);
    accepting_ = false;
    mu_.AwaitWithDeadline(absl::Condition(this, &WorkQueue::NothingQueued), deadline);
    dropped.swap(tasks_);
    pending_bytes_ = 0;
    if (metrics_ != nullptr) metrics_->SetIngestQueueDepth(0);
  }
  for (Task& t : dropped) {
    if (t.dropped) t.dropped();
  }
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithDeadline(absl::Condition(this, &WorkQueue::Idle), deadline);
  if (still_running != nullptr) *still_running = running_;
  return dropped.size();
}

void WorkQueue::Loop() {
  while (true) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &WorkQueue::HasWorkOrStopping));
      if (tasks_.empty()) return;  // stopping, and everything queued has run
      task = std::move(tasks_.front());
      tasks_.pop_front();
      pending_bytes_ -= task.bytes;
      ++running_;
      if (metrics_ != nullptr) metrics_->SetIngestQueueDepth(tasks_.size());
    }
    task.run();
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

}  // namespace smbfleet::collector

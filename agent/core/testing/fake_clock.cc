#include "agent/core/testing/fake_clock.h"

#include <algorithm>

namespace smbfleet::agent::testing {

Clock::TimePoint FakeClock::Now() {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

bool FakeClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          TimePoint deadline, const std::function<bool()>& wake) {
  std::list<Waiter>::iterator me;
  {
    std::lock_guard<std::mutex> l(mu_);
    me = waiters_.insert(waiters_.end(), Waiter{lock.mutex(), &cv});
    history_.push_back(Wait{std::this_thread::get_id(), now_, deadline});
  }
  changed_.notify_all();
  bool woken = false;
  while (true) {
    woken = wake();
    if (woken || Now() >= deadline) break;
    // WakeAll() takes the caller's mutex before notifying, so no wake-up is lost between the
    // checks above and this wait.
    cv.wait(lock);
  }
  std::lock_guard<std::mutex> l(mu_);
  waiters_.erase(me);
  return woken;
}

void FakeClock::Advance(std::chrono::steady_clock::duration d) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }
  WakeAll();
}

void FakeClock::AdvanceTo(TimePoint t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    now_ = std::max(now_, t);
  }
  WakeAll();
}

void FakeClock::WakeAll() {
  std::vector<Waiter> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters.assign(waiters_.begin(), waiters_.end());
  }
  // Not under mu_: a waiter holds its own mutex when it takes mu_.
  for (const Waiter& w : waiters) {
    std::lock_guard<std::mutex> lock(*w.mu);
    w.cv->notify_all();
  }
}

std::optional<FakeClock::Wait> FakeClock::AwaitWait(std::thread::id thread, size_t n,
                                                    std::chrono::milliseconds real_timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  std::optional<Wait> found;
  changed_.wait_for(lock, real_timeout, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    size_t seen = 0;
    for (const Wait& w : history_) {
      if (w.thread == thread && ++seen == n) {
        found = w;
        return true;
      }
    }
    return false;
  });
  return found;
}

}  // namespace smbfleet::agent::testing

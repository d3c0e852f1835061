#ifndef SMBFLEET_AGENT_CORE_TESTING_FAKE_CLOCK_H_
#define SMBFLEET_AGENT_CORE_TESTING_FAKE_CLOCK_H_

// A Clock that only moves when the test says so. Every WaitUntil is recorded (which thread, from
// when, until when), so that a test blocks, without sleeping, until the code under test waits,
// checks the deadline it chose, and advances the time to it.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "agent/core/clock.h"

namespace smbfleet::agent::testing {

class FakeClock : public Clock {
 public:
  struct Wait {
    std::thread::id thread;
    TimePoint start;
    TimePoint deadline;
  };

  TimePoint Now() override;
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, const std::function<bool()>& wake) override;

  // Moves the time forward and wakes every waiter (whose deadline may now have passed).
  void Advance(std::chrono::steady_clock::duration d);
  // Moves the time to `t` (no-op when t is not in the future).
  void AdvanceTo(TimePoint t);

  // The n-th (1-based) WaitUntil call made by `thread`, once it has started; nullopt when it did
  // not start within `real_timeout` of real time (the code under test never waited).
  std::optional<Wait> AwaitWait(std::thread::id thread, size_t n,
                                std::chrono::milliseconds real_timeout = std::chrono::seconds(20));

 private:
  struct Waiter {
    std::mutex* mu;
    std::condition_variable* cv;
  };
  void WakeAll();

  std::mutex mu_;
  std::condition_variable changed_;  // history_ grew
  TimePoint now_ ABSL_GUARDED_BY(mu_) = TimePoint() + std::chrono::hours(1);
  std::list<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  std::vector<Wait> history_ ABSL_GUARDED_BY(mu_);
};

}  // namespace smbfleet::agent::testing

#endif  // SMBFLEET_AGENT_CORE_TESTING_FAKE_CLOCK_H_

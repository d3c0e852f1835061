#ifndef SMBFLEET_AGENT_CORE_CLOCK_H_
#define SMBFLEET_AGENT_CORE_CLOCK_H_

// The agent's time: what "now" is, and waiting for a deadline or a wake-up. The loops take a
// Clock so that tests drive them with a fake one instead of sleeping.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace smbfleet::agent {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;

  virtual TimePoint Now() = 0;

  // With `lock` held on the mutex that guards `wake`'s state: waits on `cv` until wake() is true
  // or the deadline passes. Returns wake(). Whoever makes wake() true notifies `cv` under the
  // same mutex.
  virtual bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         TimePoint deadline, const std::function<bool()>& wake) = 0;
};

// steady_clock and condition_variable::wait_until.
Clock* RealClock();

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_CLOCK_H_

#include "agent/core/clock.h"

namespace smbfleet::agent {
namespace {

class SteadyClock : public Clock {
 public:
  TimePoint Now() override { return std::chrono::steady_clock::now(); }

  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, const std::function<bool()>& wake) override {
    return cv.wait_until(lock, deadline, wake);
  }
};

}  // namespace

Clock* RealClock() {
  static SteadyClock* clock = new SteadyClock();
  return clock;
}

}  // namespace smbfleet::agent

#ifndef SMBFLEET_AGENT_CORE_COUNTER_SAMPLER_H_
#define SMBFLEET_AGENT_CORE_COUNTER_SAMPLER_H_

// Samples a CounterSource every `interval` on a thread of its own and keeps the last samples in a
// bounded ring (window / interval + 1 of them, at most kMaxCounterSamples), from which the windows
// before and after a change are cut (agent/core/counter_windows.h).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/core/clock.h"
#include "agent/core/counter_source.h"
#include "smbfleet/v1/change.pb.h"

namespace smbfleet::agent {

inline constexpr size_t kMaxCounterSamples = 512;

class CounterSampler {
 public:
  // source is not owned; null: no samples are taken. wall_now stamps the samples
  // (CounterSample.at).
  CounterSampler(
      CounterSource* source, std::chrono::milliseconds interval, std::chrono::milliseconds window,
      Clock* clock = RealClock(),
      std::function<absl::Time()> wall_now = [] { return absl::Now(); });
  ~CounterSampler();

  static size_t CapacityFor(std::chrono::milliseconds interval, std::chrono::milliseconds window);

  // Takes one sample now, then calls the on_sample callback (outside the lock).
  void SampleOnce();
  // Called after each sample, on the sampling thread: CounterWindows freezes due windows there.
  void set_on_sample(std::function<void()> f) { on_sample_ = std::move(f); }

  // The kept samples taken in [from, to], oldest first, as a window from `from` to `to`.
  smbfleet::v1::CounterWindow Window(absl::Time from, absl::Time to) const;
  size_t size() const;
  // Why the last sample left counters absent, one line per input (empty when all were read).
  std::vector<std::string> LastErrors() const;
  absl::Time Now() const { return wall_now_(); }

  // Samples every interval on a thread of its own until Stop() (also called by the destructor).
  void Start();
  void Stop();

  std::chrono::milliseconds interval() const { return interval_; }
  std::chrono::milliseconds window() const { return window_; }

 private:
  void Loop();

  CounterSource* source_;
  const std::chrono::milliseconds interval_;
  const std::chrono::milliseconds window_;
  const size_t capacity_;
  Clock* clock_;
  std::function<absl::Time()> wall_now_;
  std::function<void()> on_sample_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<smbfleet::v1::CounterSample> ring_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // The problems of the last sample, logged when they change rather than every interval.
  std::set<std::string> last_errors_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_COUNTER_SAMPLER_H_

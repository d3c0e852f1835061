#ifndef SMBFLEET_AGENT_CORE_COUNTER_WINDOWS_H_
#define SMBFLEET_AGENT_CORE_COUNTER_WINDOWS_H_

// The windows of load samples around each applied change (docs/agent-changes.md "Counters around
// a change"). The before-window is cut from the sampler's ring when the ack is decided and
// journaled with it. The after-window is a durable record in the journal folder,
// "<change id>@<version>.counters.json" (a ChangeCounters in protobuf's JSON mapping): written
// when the ack is decided, filled with the samples of [applied_at, applied_at + window] once the
// window has passed (on the sampling thread, while the ring still holds them), sent with the next
// report and removed once a report carrying it is acknowledged. A record older than
// kMaxPendingAge is dropped with a log line.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/core/counter_sampler.h"
#include "smbfleet/v1/change.pb.h"

namespace smbfleet::agent {

inline constexpr absl::Duration kMaxPendingAge = absl::Hours(24 * 7);

class CounterWindows {
 public:
  // dir: the change journal's folder. sampler is not owned.
  CounterWindows(std::string dir, CounterSampler* sampler);

  // Loads the pending records; one that cannot be parsed is moved aside to <name>.bad.
  absl::Status Open();

  // The last `window` of samples, complete.
  smbfleet::v1::CounterWindow Before() const;
  // Records (durably) that the change was applied now: its after-window starts.
  absl::Status StartAfter(const std::string& change_id, uint64_t version);
  // Fills the after-windows whose time has passed and drops records older than kMaxPendingAge.
  // Called after each sample. When it filled one, calls the on_filled callback (outside the lock).
  void Tick();
  // Called when an after-window has been filled, so that a report carries it at once rather than
  // with the next scheduled one (any thread; set before the sampler starts).
  void set_on_filled(std::function<void()> f) { on_filled_ = std::move(f); }
  // The after-windows ready to send (filled), oldest first.
  std::vector<smbfleet::v1::ChangeCounters> Due();
  // A report carrying these was acknowledged: their records go.
  void Delivered(const std::vector<smbfleet::v1::ChangeCounters>& sent);

  size_t pending() const;
  // The sampler's CounterSampler::LastErrors().
  std::vector<std::string> SamplingErrors() const { return sampler_->LastErrors(); }

 private:
  using Key = std::pair<std::string, uint64_t>;
  std::string PathOf(const Key& key) const;
  absl::Status Write(const smbfleet::v1::ChangeCounters& record) const;

  std::string dir_;
  CounterSampler* sampler_;
  std::function<void()> on_filled_;
  mutable std::mutex mu_;
  std::map<Key, smbfleet::v1::ChangeCounters> records_ ABSL_GUARDED_BY(mu_);
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_COUNTER_WINDOWS_H_

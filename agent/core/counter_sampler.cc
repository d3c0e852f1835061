#include "agent/core/counter_sampler.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::agent {
namespace {

using google::protobuf::util::TimeUtil;
using smbfleet::v1::CounterSample;
using smbfleet::v1::CounterWindow;

google::protobuf::Timestamp ToProto(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

}  // namespace

CounterSampler::CounterSampler(CounterSource* source, std::chrono::milliseconds interval,
                               std::chrono::milliseconds window, Clock* clock,
                               std::function<absl::Time()> wall_now)
    : source_(source),
      interval_(interval),
      window_(window),
      capacity_(CapacityFor(interval, window)),
      clock_(clock),
      wall_now_(std::move(wall_now)) {}

CounterSampler::~CounterSampler() { Stop(); }

size_t CounterSampler::CapacityFor(std::chrono::milliseconds interval,
                                   std::chrono::milliseconds window) {
  if (interval.count() <= 0) return kMaxCounterSamples;
  const auto per_window = static_cast<size_t>(std::max<int64_t>(0, window / interval));
  return std::min(per_window + 1, kMaxCounterSamples);
}

void CounterSampler::SampleOnce() {
  if (source_ == nullptr) return;
  CounterReading reading = source_->Sample();
  *reading.sample.mutable_at() = ToProto(wall_now_());
  std::set<std::string> errors(reading.errors.begin(), reading.errors.end());
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ring_.push_back(std::move(reading.sample));
    while (ring_.size() > capacity_) ring_.pop_front();
    changed = errors != last_errors_;
    if (changed) last_errors_ = errors;
  }
  if (changed && errors.empty()) {
    Logger("agent")->info("counters: every counter readable again");
  } else if (changed) {
    Logger("agent")->warn("counters: left absent: {}", LogSafe(absl::StrJoin(errors, "; ")));
  }
  if (on_sample_) on_sample_();
}

CounterWindow CounterSampler::Window(absl::Time from, absl::Time to) const {
  CounterWindow window;
  *window.mutable_start() = ToProto(from);
  *window.mutable_end() = ToProto(to);
  *window.mutable_interval() = TimeUtil::MillisecondsToDuration(interval_.count());
  std::lock_guard<std::mutex> lock(mu_);
  for (const CounterSample& s : ring_) {
    const absl::Time at = FromProto(s.at());
    if (at >= from && at <= to) *window.add_samples() = s;
  }
  return window;
}

size_t CounterSampler::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_.size();
}

std::vector<std::string> CounterSampler::LastErrors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {last_errors_.begin(), last_errors_.end()};
}

void CounterSampler::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void CounterSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CounterSampler::Loop() {
  Clock::TimePoint next = clock_->Now();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      clock_->WaitUntil(lock, cv_, next,
                        [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return stopped_; });
      if (stopped_) return;
    }
    SampleOnce();
    // On schedule, not drifting by the sampling time; after a long stall, from now.
    next += interval_;
    if (next < clock_->Now()) next = clock_->Now() + interval_;
  }
}

}  // namespace smbfleet::agent

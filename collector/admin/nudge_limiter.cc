#include "collector/admin/nudge_limiter.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace smbfleet::collector {
namespace {

constexpr absl::Duration kWindow = absl::Minutes(1);
// Past this many remembered hosts or callers, entries that no longer limit anything go.
constexpr size_t kPruneAbove = 4096;

std::string When(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace

NudgeLimiter::NudgeLimiter(NudgeLimits limits, Clock clock)
    : limits_(limits), clock_(std::move(clock)) {}

absl::Status NudgeLimiter::Admit(absl::string_view caller, absl::string_view host) {
  const absl::Time now = clock_();
  const std::string key = absl::AsciiStrToLower(host);
  std::lock_guard<std::mutex> lock(mu_);
  if (last_by_host_.size() > kPruneAbove) {
    for (auto it = last_by_host_.begin(); it != last_by_host_.end();) {
      it = now - it->second >= limits_.per_host ? last_by_host_.erase(it) : std::next(it);
    }
  }
  if (recent_by_caller_.size() > kPruneAbove) {
    for (auto it = recent_by_caller_.begin(); it != recent_by_caller_.end();) {
      bool stale = it->second.empty() || now - it->second.back() >= kWindow;
      it = stale ? recent_by_caller_.erase(it) : std::next(it);
    }
  }

  std::deque<absl::Time>& recent = recent_by_caller_[std::string(caller)];
  while (!recent.empty() && now - recent.front() >= kWindow) recent.pop_front();
  if (static_cast<int>(recent.size()) >= limits_.per_caller_per_minute) {
    return absl::ResourceExhaustedError(
        absl::StrCat("'", caller, "' asked for ", recent.size(),
                     " reports in the last minute (the limit); ask again after ",
                     When(recent.front() + kWindow)));
  }
  auto last = last_by_host_.find(key);
  if (last != last_by_host_.end() && now - last->second < limits_.per_host) {
    return absl::ResourceExhaustedError(
        absl::StrCat("host '", host, "' was asked to report at ", When(last->second),
                     "; it may be asked again after ", When(last->second + limits_.per_host)));
  }
  recent.push_back(now);
  last_by_host_[key] = now;
  return absl::OkStatus();
}

void NudgeLimiter::Undelivered(absl::string_view host) {
  std::lock_guard<std::mutex> lock(mu_);
  last_by_host_.erase(absl::AsciiStrToLower(host));
}

}  // namespace smbfleet::collector

#ifndef SMBFLEET_COLLECTOR_ADMIN_NUDGE_LIMITER_H_
#define SMBFLEET_COLLECTOR_ADMIN_NUDGE_LIMITER_H_

// Rate limits of RequestReport: a nudge costs its host a full collection, so one host is asked
// at most once per interval, and one person nudges at most so many hosts a minute.

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace smbfleet::collector {

struct NudgeLimits {
  absl::Duration per_host = absl::Seconds(60);
  int per_caller_per_minute = 30;
};

class NudgeLimiter {
 public:
  using Clock = std::function<absl::Time()>;

  explicit NudgeLimiter(NudgeLimits limits = {}, Clock clock = absl::Now);

  // OK and counted, or RESOURCE_EXHAUSTED naming the host (or the caller) and when it may ask
  // again. Host names compare case-insensitively, as host identity does.
  absl::Status Admit(absl::string_view caller, absl::string_view host);
  // The nudge was not delivered: the host may be asked again at once (the caller's count stays).
  void Undelivered(absl::string_view host);

 private:
  NudgeLimits limits_;
  Clock clock_;
  std::mutex mu_;
  std::map<std::string, absl::Time> last_by_host_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::deque<absl::Time>> recent_by_caller_ ABSL_GUARDED_BY(mu_);
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_ADMIN_NUDGE_LIMITER_H_

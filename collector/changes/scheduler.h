#ifndef SMBFLEET_COLLECTOR_CHANGES_SCHEDULER_H_
#define SMBFLEET_COLLECTOR_CHANGES_SCHEDULER_H_

// The rollout scheduler: one thread that calls ChangeService::TickDue every `tick` (and when
// woken), so that ack timeouts, watch periods, windows and expiry move rollouts on by
// themselves. Every collector process may run one: ticks are steps, and steps on one change
// run one after another in the store.

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/changes/change_service.h"

namespace smbfleet::collector::changes {

class Scheduler {
 public:
  Scheduler(ChangeService* service, absl::Duration tick);
  ~Scheduler();  // stops and joins

  void Wake();
  void Stop();

 private:
  void Loop();

  ChangeService* service_;
  const absl::Duration tick_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_SCHEDULER_H_

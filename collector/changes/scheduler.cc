#include "collector/changes/scheduler.h"

#include "common/logging.h"

namespace smbfleet::collector::changes {

Scheduler::Scheduler(ChangeService* service, absl::Duration tick)
    : service_(service), tick_(tick), thread_([this] { Loop(); }) {}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Wake() {
  absl::MutexLock lock(&mu_);
  woken_ = true;
}

void Scheduler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Scheduler::Loop() {
  // A failing tick (the database is away) is logged once, when the failures begin, and the
  // recovery once: a tick a second must not write a line a second through an outage.
  int failed_ticks = 0;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      woken_ = false;
    }
    auto next = service_->TickDue();
    if (!next.ok()) {
      if (failed_ticks++ == 0) {
        Logger("collector")
            ->warn("rollout scheduler: {} (logged once until a tick succeeds)",
                   LogSafe(next.status()));
      }
    } else if (failed_ticks > 0) {
      Logger("collector")
          ->info("rollout scheduler: running again after {} failed tick(s)", failed_ticks);
      failed_ticks = 0;
    }
    absl::MutexLock lock(&mu_);
    auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || woken_; };
    mu_.AwaitWithTimeout(absl::Condition(&wake), tick_);
  }
}

}  // namespace smbfleet::collector::changes

#include "collector/server/history_job.h"

#include <utility>

#include "absl/strings/str_join.h"
#include "common/logging.h"

namespace smbfleet::collector {

HistoryJob::HistoryJob(HistoryStore* store, const HistoryConfig& config,
                       std::function<absl::Time()> clock)
    : store_(store), config_(config), clock_(std::move(clock)) {}

HistoryJob::~HistoryJob() { Stop(); }

void HistoryJob::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void HistoryJob::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<HistoryPass> HistoryJob::RunOnce() {
  auto log = Logger("collector");
  absl::StatusOr<HistoryPass> pass = store_->Maintain(clock_(), absl::FromChrono(config_.retention),
                                                      static_cast<int>(config_.partitions_ahead));
  if (!pass.ok()) {
    log->warn("history: the pass failed, next in {}: {}",
              absl::FormatDuration(absl::FromChrono(config_.interval)), LogSafe(pass.status()));
    return pass;
  }
  if (!pass->ran) {
    log->debug("history: another collector is running the pass");
    return pass;
  }
  if (!pass->created.empty()) {
    log->info("history: made {} partition(s): {}", pass->created.size(),
              absl::StrJoin(pass->created, ", "));
  }
  if (!pass->dropped.empty()) {
    log->info("history: dropped {} partition(s) older than the retention ({} days): {}",
              pass->dropped.size(), absl::ToInt64Hours(absl::FromChrono(config_.retention)) / 24,
              absl::StrJoin(pass->dropped, ", "));
  }
  if (!pass->kept.empty()) {
    log->info("history: kept {} old partition(s) that hold current state: {}", pass->kept.size(),
              absl::StrJoin(pass->kept, ", "));
  }
  if (pass->trimmed_rows > 0) {
    log->info("history: deleted {} old row(s) outside day partitions", pass->trimmed_rows);
  }
  return pass;
}

void HistoryJob::Loop() {
  const absl::Duration interval = absl::FromChrono(config_.interval);
  while (true) {
    RunOnce().IgnoreError();  // logged; the next pass tries again
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
    mu_.AwaitWithTimeout(absl::Condition(&stopping), interval);
    if (stopping_) return;
  }
}

}  // namespace smbfleet::collector

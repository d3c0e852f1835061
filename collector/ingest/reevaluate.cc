#include "collector/ingest/reevaluate.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/logging.h"

namespace smbfleet::collector {
namespace {

constexpr char kJob[] = "reevaluate";
// Failures of one pass written to the log each; the rest are counted in its summary line.
constexpr size_t kFailuresLogged = 5;

std::shared_ptr<spdlog::logger> Log() { return Logger("collector"); }

bool IsTransient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsAborted(status) ||
         absl::IsDeadlineExceeded(status) || absl::IsResourceExhausted(status);
}

}  // namespace

Reevaluator::Reevaluator(ReportPipeline* pipeline, ComplianceStore* compliance, JobClaims* claims,
                         ReevaluationOptions options, Metrics* metrics)
    : pipeline_(pipeline),
      compliance_(compliance),
      claims_(claims),
      options_(options),
      metrics_(metrics) {}

Reevaluator::~Reevaluator() { Stop(); }

bool Reevaluator::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool Reevaluator::WaitOrStop(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), d);
  return stopping_;
}

absl::StatusOr<ReevaluationPass> Reevaluator::RunPass() {
  ReevaluationPass pass;
  std::unique_ptr<JobClaim> claim;
  if (claims_ != nullptr) {
    absl::StatusOr<std::unique_ptr<JobClaim>> claimed = claims_->TryClaim(kJob);
    if (!claimed.ok()) return claimed.status();
    if (*claimed == nullptr) return pass;
    claim = *std::move(claimed);
  }
  pass.claimed = true;
  const policy::Policy* policy = pipeline_->policy();
  if (policy == nullptr) return pass;
  const absl::Time started = absl::Now();
  if (metrics_ != nullptr) metrics_->SetReevaluationRunning(true);
  Log()->info("re-evaluation: checking every stored posture against policy {} version {}",
              LogSafe(policy->name), LogSafe(policy->version));
  // Pages are listed one after another by name; options_.threads workers each evaluate the
  // page they took (one database connection each at a time).
  struct Cursor {
    absl::Mutex mu;
    std::string after ABSL_GUARDED_BY(mu);
    bool end ABSL_GUARDED_BY(mu) = false;
    absl::Status read ABSL_GUARDED_BY(mu);
    absl::Time next_progress ABSL_GUARDED_BY(mu);
    ReevaluationPass pass ABSL_GUARDED_BY(mu);
  } cursor;
  {
    absl::MutexLock lock(&cursor.mu);
    cursor.next_progress = started + options_.progress_every;
  }
  auto work = [&] {
    while (!stopping()) {
      std::vector<EvaluationState> page;
      {
        absl::MutexLock lock(&cursor.mu);
        if (cursor.end || !cursor.read.ok()) return;
        absl::StatusOr<std::vector<EvaluationState>> listed =
            compliance_->EvaluationStates(cursor.after, options_.page_hosts);
        if (!listed.ok()) {
          cursor.read = listed.status();
          return;
        }
        if (listed->empty()) {
          cursor.end = true;
          return;
        }
        page = *std::move(listed);
        cursor.after = page.back().host;
      }
      absl::StatusOr<StoredPageOutcome> outcome = pipeline_->EvaluateStoredPage(page);
      absl::MutexLock lock(&cursor.mu);
      if (!outcome.ok()) {
        if (cursor.read.ok()) cursor.read = outcome.status();
        return;
      }
      Count(page.size(), *outcome, &cursor.pass);
      if (absl::Now() >= cursor.next_progress) {
        cursor.next_progress = absl::Now() + options_.progress_every;
        Log()->info("re-evaluation: {} hosts checked, {} evaluated, {} failed ({}s)",
                    cursor.pass.checked, cursor.pass.evaluated, cursor.pass.failed,
                    absl::ToInt64Seconds(absl::Now() - started));
      }
    }
  };
  const size_t n = std::max<size_t>(1, options_.threads);
  std::vector<std::thread> threads;
  threads.reserve(n - 1);
  for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  absl::Status read;
  {
    absl::MutexLock lock(&cursor.mu);
    read = cursor.read;
    pass.checked = cursor.pass.checked;
    pass.evaluated = cursor.pass.evaluated;
    pass.failed = cursor.pass.failed;
    pass.transient_failures = cursor.pass.transient_failures;
    pass.stopped = !cursor.end && read.ok();
  }
  pass.took = absl::Now() - started;
  if (metrics_ != nullptr) metrics_->SetReevaluationRunning(false);
  if (!read.ok()) {
    Log()->warn("re-evaluation stopped after {} hosts checked, {} evaluated: {}", pass.checked,
                pass.evaluated, LogSafe(read));
    return read;
  }
  Log()->info("re-evaluation {}: {} hosts checked, {} evaluated, {} failed in {:.1f}s",
              pass.stopped ? "stopped" : "done", pass.checked, pass.evaluated, pass.failed,
              absl::ToDoubleSeconds(pass.took));
  return pass;
}

void Reevaluator::Count(size_t checked, const StoredPageOutcome& outcome, ReevaluationPass* pass) {
  pass->checked += checked;
  pass->evaluated += outcome.evaluated;
  for (const auto& [host, status] : outcome.failed) {
    if (IsTransient(status)) ++pass->transient_failures;
    if (pass->failed++ < kFailuresLogged) {
      Log()->warn("re-evaluation of {} failed: {}", LogSafe(host), LogSafe(status));
    }
  }
  if (metrics_ != nullptr) {
    metrics_->HostsReevaluated(ReevaluationResult::kCurrent, outcome.current);
    metrics_->HostsReevaluated(ReevaluationResult::kEvaluated, outcome.evaluated);
    metrics_->HostsReevaluated(ReevaluationResult::kFailed, outcome.failed.size());
  }
}

void Reevaluator::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (thread_.joinable() || stopping_) return;
  }
  thread_ = std::thread([this] { Loop(); });
}

void Reevaluator::Loop() {
  bool waiting_logged = false;
  while (!stopping()) {
    absl::StatusOr<ReevaluationPass> pass = RunPass();
    if (pass.ok() && !pass->claimed) {
      if (!waiting_logged) {
        Log()->info("re-evaluation: another collector is re-evaluating; waiting for it");
        waiting_logged = true;
      }
    } else if (pass.ok() && (pass->stopped || pass->transient_failures == 0)) {
      break;
    }
    // A failed read was logged by RunPass; transient failures are tried again in a new pass,
    // which skips the hosts already done.
    if (WaitOrStop(options_.retry)) break;
  }
  absl::MutexLock lock(&mu_);
  done_ = true;
}

void Reevaluator::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool Reevaluator::done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

}  // namespace smbfleet::collector

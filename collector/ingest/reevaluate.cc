#include "collector/ingest/reevaluate.h"

#include <algorithm>
#include <atomic>
#include <memory>
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
  absl::Time next_progress = started + options_.progress_every;
  if (metrics_ != nullptr) metrics_->SetReevaluationRunning(true);
  Log()->info("re-evaluation: checking every stored posture against policy {} version {}",
              LogSafe(policy->name), LogSafe(policy->version));
  std::string after;
  absl::Status read;
  while (!pass.stopped) {
    absl::StatusOr<std::vector<EvaluationState>> page =
        compliance_->EvaluationStates(after, options_.page_hosts);
    if (!page.ok()) {
      read = page.status();
      break;
    }
    if (page->empty()) break;
    after = page->back().host;
    absl::StatusOr<std::vector<size_t>> due = pipeline_->DueForEvaluation(*page);
    if (!due.ok()) {
      read = due.status();
      break;
    }
    pass.checked += page->size();
    if (metrics_ != nullptr) {
      metrics_->HostsReevaluated(ReevaluationResult::kCurrent, page->size() - due->size());
    }
    EvaluateDue(*page, *due, &pass);
    pass.stopped = pass.stopped || stopping();
    if (absl::Now() >= next_progress) {
      next_progress = absl::Now() + options_.progress_every;
      Log()->info("re-evaluation: {} hosts checked, {} evaluated, {} failed ({}s)", pass.checked,
                  pass.evaluated, pass.failed, absl::ToInt64Seconds(absl::Now() - started));
    }
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

void Reevaluator::EvaluateDue(const std::vector<EvaluationState>& states,
                              const std::vector<size_t>& due, ReevaluationPass* pass) {
  if (due.empty()) return;
  std::atomic<size_t> next{0};
  std::atomic<size_t> evaluated{0};
  std::atomic<size_t> failed{0};
  std::atomic<size_t> transient{0};
  std::atomic<size_t> logged{pass->failed};
  auto work = [&] {
    for (size_t i = next++; i < due.size() && !stopping(); i = next++) {
      const std::string& host = states[due[i]].host;
      absl::StatusOr<std::optional<size_t>> result = pipeline_->EvaluateStored(host);
      if (result.ok()) {
        // nullopt: a report evaluated the host meanwhile, or its posture is gone.
        if (result->has_value()) ++evaluated;
        if (metrics_ != nullptr) {
          metrics_->HostsReevaluated(
              result->has_value() ? ReevaluationResult::kEvaluated : ReevaluationResult::kCurrent,
              1);
        }
        continue;
      }
      ++failed;
      if (IsTransient(result.status())) ++transient;
      if (metrics_ != nullptr) metrics_->HostsReevaluated(ReevaluationResult::kFailed, 1);
      if (logged++ < kFailuresLogged) {
        Log()->warn("re-evaluation of {} failed: {}", LogSafe(host), LogSafe(result.status()));
      }
    }
  };
  const size_t n = std::max<size_t>(1, std::min(options_.threads, due.size()));
  std::vector<std::thread> threads;
  threads.reserve(n - 1);
  for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  pass->evaluated += evaluated;
  pass->failed += failed;
  pass->transient_failures += transient;
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

#include "collector/ingest/report_batch.h"

#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"

namespace smbfleet::collector {

ReportBatcher::ReportBatcher(StoreBatch store, size_t max_batch, size_t max_parallel)
    : store_(std::move(store)),
      max_batch_(max_batch == 0 ? 1 : max_batch),
      max_parallel_(max_parallel == 0 ? 1 : max_parallel) {}

void ReportBatcher::Submit(IncomingReport report, Done done) {
  {
    absl::MutexLock lock(&mu_);
    queue_.push_back({std::move(report), std::move(done)});
    // A thread storing a batch takes it into its next one.
    if (storing_ >= max_parallel_) return;
    ++storing_;
  }
  for (;;) {
    std::vector<Pending> batch;
    {
      absl::MutexLock lock(&mu_);
      if (queue_.empty()) {
        --storing_;
        return;
      }
      batch = TakeBatch();
    }
    std::vector<IncomingReport> reports;
    reports.reserve(batch.size());
    for (Pending& p : batch) reports.push_back(std::move(p.report));
    std::vector<BatchAnswer> answers = store_(reports);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (i < answers.size()) {
        batch[i].done(std::move(answers[i]));
      } else {  // a broken StoreBatch; the report is not acked
        batch[i].done({absl::InternalError("report left without an answer by its batch")});
      }
    }
  }
}

std::vector<ReportBatcher::Pending> ReportBatcher::TakeBatch() {
  std::vector<Pending> batch;
  std::set<std::string> hosts;
  for (auto it = queue_.begin(); it != queue_.end() && batch.size() < max_batch_;) {
    if (hosts.insert(it->report.host).second) {
      batch.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  return batch;
}

}  // namespace smbfleet::collector

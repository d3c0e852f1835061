#ifndef SMBFLEET_COLLECTOR_INGEST_REPORT_BATCH_H_
#define SMBFLEET_COLLECTOR_INGEST_REPORT_BATCH_H_

// Group commit of reports (the pipeline keeps one batcher for digest-only reports and one for
// reports with a posture). A report is queued; when fewer than max_parallel batches are being
// stored, the caller stores the queue's reports as one batch (one transaction) and keeps doing
// so until the queue is empty, answering each report's caller. Reports arriving while
// max_parallel batches are stored wait for the next one: under load batches grow with the
// arrivals, and an idle collector stores a lone report at once (no timer, no added wait). Of
// each host one report per batch: a second waits for the next batch, so the reports of one host
// are stored one after another as StoreReport would (two batches stored at once may each hold
// one of a host's reports: the store orders them, as two connections storing one each).

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/host_store.h"

namespace smbfleet::collector {

// What the pipeline needs of one report once its batch is stored.
struct BatchAnswer {
  absl::StatusOr<SavedReport> saved;
  // Of a digest-only report, with a policy, when current and stored: whether its stored
  // evaluation is of the same inputs (nothing to evaluate). Unused otherwise.
  absl::StatusOr<bool> evaluation_current = true;
  // Of a report with a posture, with a policy, when current: its evaluation's transitions, or
  // nullopt when nothing was due (the stored evaluation is of the same inputs). Unused
  // otherwise.
  absl::StatusOr<std::optional<size_t>> evaluated = std::optional<size_t>();
};

class ReportBatcher {
 public:
  // Stores a batch; returns one answer per report, in order.
  using StoreBatch = std::function<std::vector<BatchAnswer>(const std::vector<IncomingReport>&)>;
  using Done = std::function<void(BatchAnswer)>;

  // max_parallel: batches stored at once (each by its own caller's thread), at least 1.
  ReportBatcher(StoreBatch store, size_t max_batch, size_t max_parallel = 1);

  // Queues `report`. `done` runs exactly once with its answer: on this thread, or on the thread
  // storing the batch it is in. Returns after `done` ran or another thread took the report.
  void Submit(IncomingReport report, Done done);

 private:
  struct Pending {
    IncomingReport report;
    Done done;
  };

  std::vector<Pending> TakeBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const StoreBatch store_;
  const size_t max_batch_;
  const size_t max_parallel_;
  absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  size_t storing_ ABSL_GUARDED_BY(mu_) = 0;  // batches being stored
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_INGEST_REPORT_BATCH_H_

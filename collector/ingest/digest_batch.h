#ifndef SMBFLEET_COLLECTOR_INGEST_DIGEST_BATCH_H_
#define SMBFLEET_COLLECTOR_INGEST_DIGEST_BATCH_H_

// Group commit of digest-only reports. A report is queued; when no batch is being stored, the
// caller stores the queue's reports as one batch (one transaction) and keeps doing so until
// the queue is empty, answering each report's caller. Reports arriving while a batch is stored
// wait for the next one: under load batches grow with the arrivals, and an idle collector
// stores a lone report at once (no timer, no added wait). Of each host one report per batch:
// a second waits for the next batch, so the reports of one host are stored one after another
// as StoreReport would.

#include <cstddef>
#include <deque>
#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/host_store.h"

namespace smbfleet::collector {

// What the pipeline needs of one digest-only report once its batch is stored.
struct DigestAnswer {
  absl::StatusOr<SavedReport> saved;
  // With a policy, for a current stored report: whether its stored evaluation is of the same
  // inputs (nothing to evaluate). Unused otherwise.
  absl::StatusOr<bool> evaluation_current = true;
};

class DigestBatcher {
 public:
  // Stores a batch; returns one answer per report, in order.
  using StoreBatch = std::function<std::vector<DigestAnswer>(const std::vector<IncomingReport>&)>;
  using Done = std::function<void(DigestAnswer)>;

  DigestBatcher(StoreBatch store, size_t max_batch);

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
  absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool storing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_INGEST_DIGEST_BATCH_H_

#ifndef SMBFLEET_COLLECTOR_INGEST_REEVALUATE_H_
#define SMBFLEET_COLLECTOR_INGEST_REEVALUATE_H_

// The re-evaluation of stored postures: after the policy changed (a collector started with
// another policy file), every host's current posture is evaluated again from the store, without
// waiting for its agent's next report.
//
// A pass pages through the hosts by name (ComplianceStore::EvaluationStates), computes each
// host's evaluation key for the current policy, waivers and trusted labels, and evaluates the
// hosts whose stored key differs, a page at a time (ReportPipeline::EvaluateStoredPage: what
// the report path writes, with its guard against a concurrent evaluation of the same host, in
// a few statements and one transaction for the whole page). Hosts whose key matches are
// skipped, so a pass interrupted by a restart resumes where it stopped, and a pass with nothing
// due only reads. One process at a time runs a pass (JobClaims, job "reevaluate"); another
// waits for the claim and then finds little or nothing due.

#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/ingest/pipeline.h"
#include "collector/metrics/metrics.h"
#include "collector/store/compliance_store.h"
#include "collector/store/job_claims.h"

namespace smbfleet::collector {

struct ReevaluationOptions {
  size_t threads = 2;         // pages evaluated at once (each holds a database connection)
  uint32_t page_hosts = 500;  // hosts read and checked per page
  absl::Duration retry = absl::Seconds(5);  // wait before claiming again or retrying a pass
  absl::Duration progress_every = absl::Seconds(10);  // progress lines in the log
};

struct ReevaluationPass {
  bool claimed = false;           // false: another process held the claim; nothing was done
  size_t checked = 0;             // hosts with a posture whose key was compared
  size_t evaluated = 0;           // evaluated again (their key differed)
  size_t failed = 0;              // due but not evaluated (logged); a later pass tries again
  size_t transient_failures = 0;  // of `failed`: the database away, busy or racing
  bool stopped = false;           // Stop() ended it before the last host
  absl::Duration took;
};

class Reevaluator {
 public:
  // `pipeline` has the policy; `claims` may be null (then this process alone decides).
  Reevaluator(ReportPipeline* pipeline, ComplianceStore* compliance, JobClaims* claims,
              ReevaluationOptions options = {}, Metrics* metrics = nullptr);
  ~Reevaluator();  // Stop()

  // One pass in the calling thread, if the claim is free. Errors: the database (reading the
  // hosts or claiming); what was evaluated before stays.
  absl::StatusOr<ReevaluationPass> RunPass();

  // In a thread of its own: passes until one claimed pass ends with no transient failure,
  // waiting options.retry between tries (the claim held elsewhere, the database away).
  void Start();
  // Ends the thread after the hosts being evaluated now; the claim is released.
  void Stop();
  // Whether the background passes are over (all done, or stopped).
  bool done() const;

 private:
  void Loop();
  // Adds a page of `checked` hosts to `pass`, the metrics and the log.
  void Count(size_t checked, const StoredPageOutcome& outcome, ReevaluationPass* pass);
  bool stopping() const;
  // Waits `d` or until Stop(); true when stopping.
  bool WaitOrStop(absl::Duration d);

  ReportPipeline* pipeline_;
  ComplianceStore* compliance_;
  JobClaims* claims_;
  const ReevaluationOptions options_;
  Metrics* metrics_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_INGEST_REEVALUATE_H_

#ifndef SMBFLEET_COLLECTOR_INGEST_PIPELINE_H_
#define SMBFLEET_COLLECTOR_INGEST_PIPELINE_H_

// The report pipeline: validate -> digest -> save -> evaluate -> compute transitions -> save
// results. Plain absl::Status: the gRPC adapter (service/) maps it to the wire.
//
// A digest-only report (no posture, its digest instead) is stored as an unchanged report when
// the digest is the host's current posture's and the stored evaluation is of the same inputs;
// otherwise the agent is told to send the posture (send_full). Digest-only reports arriving
// together are stored in one transaction (ReportBatcher, at most limits.digest_batch_reports);
// so are reports with a posture (at most limits.posture_batch_reports), whose evaluations are
// then read and written for the group at once.
//
// Nothing lost, nothing doubled:
// - A report that can never be stored (a value the validation or the database refuses) is
//   INVALID_ARGUMENT naming the field, so the agent sets it aside instead of retrying it.
// - A report is stored whole in one transaction, once per (host, report_id).
// - A report is acknowledged only when the host's current state is evaluated: a transient
//   evaluation failure answers UNAVAILABLE and the resend (a duplicate) evaluates. The
//   evaluation key stored with the host makes each state's evaluation count once.
// - A report collected before the host's current state goes to history only: it does not
//   replace the current state or its evaluation.

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collector/ingest/change_counters_sink.h"
#include "collector/ingest/refusals.h"
#include "collector/ingest/report_batch.h"
#include "collector/ingest/validate.h"
#include "collector/metrics/metrics.h"
#include "collector/store/compliance_store.h"
#include "collector/store/enrollment_store.h"
#include "collector/store/host_store.h"
#include "policy/policy.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector {

struct IngestResult {
  SaveOutcome outcome = SaveOutcome::kStored;
  // False: the report was collected before the host's current state (history only), or is a
  // duplicate the host has moved on from. Neither is evaluated.
  bool current = true;
  absl::Time received_at;
  // Evaluation runs after the report is stored. A transient failure fails the report
  // (UNAVAILABLE: send it again); another is logged and reported here, and the host's next
  // report evaluates (its key was not stored).
  bool evaluated = false;  // false: no policy, not current, or nothing changed since last time
  size_t transitions = 0;
  absl::Status evaluation;
  // A digest-only report the collector cannot take as it is (OUTCOME_SEND_FULL): the host's
  // current posture has another digest (nothing stored), or its evaluation is due and needs the
  // posture (stored; the full resend is a current duplicate and evaluates).
  bool send_full = false;
};

// What ReportPipeline::EvaluateStoredPage did with each host of a page.
struct StoredPageOutcome {
  // Nothing due: the key matched (also when a report evaluated the host meanwhile), or the
  // host has no posture any more.
  size_t current = 0;
  size_t evaluated = 0;  // results written
  // Due but not evaluated: the host and why. A later pass tries again.
  std::vector<std::pair<std::string, absl::Status>> failed;
};

// How the pipeline groups reports (ReportBatcher).
struct ReportBatchLimits {
  size_t digest_reports = 512;  // digest-only reports in one batch
  size_t posture_reports = 32;  // reports with a posture in one batch
  // Batches of reports with a posture stored at once. One would leave PostgreSQL a single
  // connection for them, as many as the store threads batches of one; two keep both cores busy
  // here (docs/scaling.md, "Reports with a posture in groups").
  size_t posture_batches_at_once = 2;
};

class ReportPipeline {
 public:
  using Clock = std::function<absl::Time()>;

  // policy may be null: then nothing is evaluated.
  using Done = std::function<void(absl::StatusOr<IngestResult>)>;

  // policy may be null: then nothing is evaluated.
  ReportPipeline(HostStore* hosts, ComplianceStore* compliance, const policy::Policy* policy,
                 Clock clock = absl::Now, IngestLimits limits = {}, ReportBatchLimits batches = {});

  // host is the certificate's name, never the posture's. Errors: INVALID_ARGUMENT naming the
  // field (do not resend), UNAVAILABLE when the report was not stored or not evaluated (keep
  // it, retry later).
  absl::StatusOr<IngestResult> Ingest(const std::string& host,
                                      const smbfleet::v1::ReportRequest& request);
  // Ingest answering through `done`, which runs exactly once: on this thread, or possibly on
  // the thread storing the batch the report joined. `request` must stay valid until `done`
  // runs.
  void IngestAsync(const std::string& host, const smbfleet::v1::ReportRequest& request, Done done);

  // Gets the refusal events of stored reports from the hosts it watches (the change
  // workflow). Set before reports arrive; may stay null.
  void SetRefusalObserver(RefusalObserver* observer) { refusals_ = observer; }

  // Gets the counters around changes that stored reports carry (the change workflow). Set
  // before reports arrive; may stay null.
  void SetChangeCountersSink(ChangeCountersSink* sink) { counters_ = sink; }

  // Where the labels policy trusts come from (enrollment scope, an admin's SetHostLabels). Set
  // before reports arrive; null: policy sees no labels. What the agent reports about its labels
  // and FQDN never reaches policy (it is stored as reported and shown).
  void SetTrustedLabels(EnrollmentStore* labels) { trusted_labels_ = labels; }

  // Counts outcomes, refusals (invalid, not stored) and evaluation time. Set before reports
  // arrive; may stay null.
  void SetMetrics(Metrics* metrics) { metrics_ = metrics; }

  // The policy evaluated (null: none).
  const policy::Policy* policy() const { return policy_; }

  // For the re-evaluation of stored postures (reevaluate.h), without a report:
  // The indices of `states` whose stored key is not the one their digest, trusted labels, the
  // policy and the waivers in force now (the pipeline's clock) give, with one read of the
  // waivers and one of the labels for all of them. Empty without a policy.
  absl::StatusOr<std::vector<size_t>> DueForEvaluation(const std::vector<EvaluationState>& states);
  // Evaluates the host's stored posture as a report of it would be: the same key, results,
  // transitions and the same guard against a concurrent evaluation. Returns the number of
  // transitions, or nullopt when nothing was due (the key matches, no posture, no policy).
  absl::StatusOr<std::optional<size_t>> EvaluateStored(const std::string& host);
  // EvaluateStored for each host of `states` (a page of EvaluationStates), set-based, with the
  // same keys, results, transitions and guard: the waivers and trusted labels read once, the
  // postures of the due hosts in one read (HostStore::CurrentPostures), their stored keys and
  // results in one (ComplianceStore::StoredEvaluations), each evaluated here, and all written
  // in one transaction (ComplianceStore::SaveEvaluations). A host whose stored key changed
  // since it was read (a report evaluated it) is not written by the page: it is evaluated
  // again alone (EvaluateStored), which finds it current or computes its transitions anew. When
  // a read or the write of the page fails for another reason than a transient one (a posture
  // that cannot be parsed, a value the database refuses), each due host is evaluated alone, so
  // that only the host at fault fails. Errors: the waivers or labels not read (nothing done).
  absl::StatusOr<StoredPageOutcome> EvaluateStoredPage(const std::vector<EvaluationState>& states);

 private:
  // What an evaluation of the host's posture with `digest` reads besides the posture.
  struct EvaluationInputs {
    std::vector<smbfleet::v1::Waiver> waivers;  // in force
    HostLabels trusted;
    std::string key;  // EvaluationKey of all of it
  };
  absl::StatusOr<EvaluationInputs> InputsOf(const std::string& host, const std::string& digest,
                                            absl::Time now);
  using LabelsByHost = std::map<std::string, HostLabels>;
  // The trusted labels of a page's hosts in one read; none without a label store.
  absl::StatusOr<LabelsByHost> TrustedLabelsOf(const std::vector<EvaluationState>& states);
  // The inputs from the waivers stored in force and the host's trusted labels.
  EvaluationInputs InputsFrom(std::vector<smbfleet::v1::Waiver> stored_waivers, HostLabels trusted,
                              const std::string& digest, absl::Time now) const;
  // Everything after the report is stored (or not) and evaluated: outcome, counters,
  // refusals, the evaluation's outcome. `answer`: what its batch found (see BatchAnswer).
  absl::StatusOr<IngestResult> Finish(const std::string& host,
                                      const smbfleet::v1::ReportRequest& request,
                                      const IncomingReport& incoming, BatchAnswer answer);
  // After a batch's store failed with `failed`: each report stored alone into `answers` when a
  // resend of the batch would fail again (returns true), else `failed` for every report.
  bool StoreEachAloneAfter(const absl::Status& failed, const std::vector<IncomingReport>& reports,
                           std::vector<BatchAnswer>* answers);
  // ReportBatcher's StoreBatch: the batch stored, then its evaluation check with one read of
  // the waivers and one of the hosts' labels.
  std::vector<BatchAnswer> StoreDigestBatch(const std::vector<IncomingReport>& reports);
  // ReportBatcher's StoreBatch for reports with a posture: the batch stored in one transaction
  // (HostStore::StoreReports; each alone when the database refuses a value of one), then the
  // current ones evaluated together (EvaluatePage).
  std::vector<BatchAnswer> StorePostureBatch(const std::vector<IncomingReport>& reports);

  // One host's posture to evaluate in a page (EvaluatePage).
  struct PageSubject {
    std::string host;
    const smbfleet::v1::Posture* posture;  // as policy is to see it, but for the identity
    std::string digest;
    absl::Time now;  // which waivers are in force
  };
  // Transitions, or nullopt when nothing was due.
  using Evaluated = absl::StatusOr<std::optional<size_t>>;
  // Evaluates each subject whose stored key is not the one its inputs give, as Evaluate would
  // (the same key, results, transitions and guard), set-based: the waivers and trusted labels
  // read once, the stored keys and results in one read (ComplianceStore::StoredEvaluations) and
  // all written in one transaction (ComplianceStore::SaveEvaluations). A subject whose stored
  // key changed since it was read (another evaluation of the host was saved), and every subject
  // when a read or the write fails for another reason than a transient one, is evaluated by
  // `alone(index)`. `read`: the waivers and labels when the caller has read them (null: read
  // here). Returns one answer per subject; NOT_FOUND: the host is gone.
  struct PageInputs {
    std::vector<smbfleet::v1::Waiver> waivers;  // stored, in force
    std::map<std::string, HostLabels> labels;   // trusted, by host
  };
  std::vector<Evaluated> EvaluatePage(const std::vector<PageSubject>& subjects,
                                      const std::function<Evaluated(size_t)>& alone,
                                      const PageInputs* read = nullptr);
  // The due hosts of a page evaluated alone (EvaluateStored), counted into `out`.
  void EvaluateEachStored(const std::vector<std::string>& hosts, StoredPageOutcome* out);
  // After `failed` of a read or write of the page: each host alone, or all failed with it when
  // it is transient (the database away or busy: the next pass tries again).
  void PageFailed(const std::vector<std::string>& hosts, const absl::Status& failed,
                  StoredPageOutcome* out);
  // Returns the number of transitions, or nullopt when the evaluation key says nothing changed.
  absl::StatusOr<std::optional<size_t>> Evaluate(const std::string& host,
                                                 const smbfleet::v1::Posture& posture,
                                                 const std::string& digest, absl::Time now);

  HostStore* hosts_;
  ComplianceStore* compliance_;
  const policy::Policy* policy_;
  Clock clock_;
  IngestLimits limits_;
  RefusalObserver* refusals_ = nullptr;
  ChangeCountersSink* counters_ = nullptr;
  EnrollmentStore* trusted_labels_ = nullptr;
  Metrics* metrics_ = nullptr;
  ReportBatcher digest_batcher_;
  ReportBatcher posture_batcher_;
};

// What policy evaluates: the report with the identity and labels the collector trusts in place
// of what the agent said. hostname is the certificate's name; fqdn is that name when it is
// qualified (has a dot), else empty; labels are `trusted` only.
smbfleet::v1::Posture TrustedSubject(const std::string& host, const HostLabels& trusted,
                                     const smbfleet::v1::Posture& reported);

// Computes the transitions of `eval` against the host's stored results and saves both, with
// the evaluation key. Two evaluations of one host at once (two collectors, a nudge during a
// report) are serialised by the stored key: the later one computes its transitions again.
// Returns the number of transitions.
absl::StatusOr<size_t> RecordEvaluation(ComplianceStore& store, const std::string& host,
                                        const smbfleet::v1::HostEvaluation& eval,
                                        const std::string& evaluation_key = "");

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_INGEST_PIPELINE_H_

#include "collector/ingest/pipeline.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "collector/ingest/digest.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "policy/evaluate.h"
#include "policy/transitions.h"

namespace smbfleet::collector {
namespace {

using google::protobuf::util::TimeUtil;

std::shared_ptr<spdlog::logger> Log() { return Logger("collector"); }

absl::Time ToTime(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(ts));
}

// The same test policy::WaiverApplies makes of time: created and not yet expired.
bool InForce(const smbfleet::v1::Waiver& w, absl::Time now) {
  if (!w.has_expires_at() || ToTime(w.expires_at()) <= now) return false;
  return !w.has_created_at() || ToTime(w.created_at()) <= now;
}

// Errors a later attempt may not meet: the database away, busy or racing another writer.
bool IsTransient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsAborted(status) ||
         absl::IsDeadlineExceeded(status) || absl::IsResourceExhausted(status);
}

// Why a batch's store did not answer each of its reports.
template <typename T>
absl::Status BatchFailure(const absl::StatusOr<std::vector<T>>& stored) {
  return stored.ok() ? absl::InternalError("the store answered another number of reports")
                     : stored.status();
}

}  // namespace

ReportPipeline::ReportPipeline(HostStore* hosts, ComplianceStore* compliance,
                               const policy::Policy* policy, Clock clock, IngestLimits limits,
                               ReportBatchLimits batches)
    : hosts_(hosts),
      compliance_(compliance),
      policy_(policy),
      clock_(std::move(clock)),
      limits_(std::move(limits)),
      digest_batcher_(
          [this](const std::vector<IncomingReport>& reports) { return StoreDigestBatch(reports); },
          batches.digest_reports),
      posture_batcher_(
          [this](const std::vector<IncomingReport>& reports) { return StorePostureBatch(reports); },
          batches.posture_reports, batches.posture_batches_at_once) {}

absl::StatusOr<IngestResult> ReportPipeline::Ingest(const std::string& host,
                                                    const smbfleet::v1::ReportRequest& request) {
  absl::Notification done;
  absl::StatusOr<IngestResult> out;
  IngestAsync(host, request, [&](absl::StatusOr<IngestResult> result) {
    out = std::move(result);
    done.Notify();
  });
  done.WaitForNotification();
  return out;
}

void ReportPipeline::IngestAsync(const std::string& host,
                                 const smbfleet::v1::ReportRequest& request, Done done) {
  if (absl::Status valid = ValidateReport(request, limits_); !valid.ok()) {
    if (metrics_ != nullptr) metrics_->ReportRefused(ReportRefusal::kInvalid);
    done(valid);
    return;
  }
  const bool digest_only = !request.has_posture();
  IncomingReport incoming;
  incoming.host = host;
  incoming.report_id = request.report_id();
  incoming.reason = request.reason();
  if (digest_only) {
    incoming.digest = request.posture_digest();
    incoming.collected_at = request.collected_at();
  } else {
    incoming.posture = &request.posture();
    incoming.digest = PostureDigest(request.posture());
  }
  incoming.size_bytes = request.ByteSizeLong();
  incoming.received_at = clock_();
  IncomingReport queued = incoming;
  ReportBatcher& batcher = digest_only ? digest_batcher_ : posture_batcher_;
  batcher.Submit(std::move(queued), [this, host, &request, incoming = std::move(incoming),
                                     done = std::move(done)](BatchAnswer answer) {
    done(Finish(host, request, incoming, std::move(answer)));
  });
}

absl::StatusOr<IngestResult> ReportPipeline::Finish(const std::string& host,
                                                    const smbfleet::v1::ReportRequest& request,
                                                    const IncomingReport& incoming,
                                                    BatchAnswer answer) {
  const bool digest_only = incoming.posture == nullptr;
  absl::StatusOr<SavedReport>& saved = answer.saved;
  if (absl::IsInvalidArgument(saved.status())) {
    // The database refused a value validation let through: a resend would fail the same way.
    if (metrics_ != nullptr) metrics_->ReportRefused(ReportRefusal::kInvalid);
    return saved.status();
  }
  if (!saved.ok()) {
    // An unreachable or busy database is logged once per outage by the connection pool; only
    // other failures are worth a line per report.
    if (absl::IsUnavailable(saved.status())) {
      Log()->debug("report not stored: {}", LogSafe(saved.status()));
    } else {
      Log()->error("report not stored: {}", LogSafe(saved.status()));
    }
    if (metrics_ != nullptr) metrics_->ReportRefused(ReportRefusal::kNotStored);
    return absl::UnavailableError("report not stored; keep it and retry later");
  }
  IngestResult result;
  result.received_at = incoming.received_at;
  if (saved->unknown_digest) {
    result.send_full = true;
    result.current = false;
    return result;
  }
  if (metrics_ != nullptr) metrics_->ReportSaved(saved->outcome);
  result.outcome = saved->outcome;
  result.current = saved->current;
  if (!saved->current && saved->outcome != SaveOutcome::kDuplicate) {
    // No outcome of ReportResponse says so (OUTCOME_STORED or _UNCHANGED is answered).
    Log()->info("report {} of {} was collected before the host's current state: kept in history",
                LogSafe(request.report_id()), LogSafe(host));
  }
  // Counters ride on any stored report, digest-only ones too; keeping them never fails it.
  if (counters_ != nullptr && request.change_counters_size() > 0) {
    counters_->CountersReported(host, request.change_counters());
  }
  // A changed posture may carry new refusal events; rollouts watch the hosts they applied to.
  if (saved->outcome == SaveOutcome::kStored && !digest_only && refusals_ != nullptr &&
      refusals_->Watching(host)) {
    std::vector<SeenRefusal> seen = RefusalsIn(request.posture());
    if (!seen.empty()) refusals_->RefusalsSeen(host, seen);
  }
  if (policy_ == nullptr || !saved->current) return result;
  if (digest_only) {
    const absl::StatusOr<bool>& evaluation_current = answer.evaluation_current;
    if (!evaluation_current.ok() && IsTransient(evaluation_current.status())) {
      Log()->debug("not evaluating {}: {}", LogSafe(host), LogSafe(evaluation_current.status()));
      return absl::UnavailableError("report stored but not evaluated; send it again later");
    }
    // The stored report is kept: the full resend is a current duplicate and evaluates (or
    // meets the same error with the posture in hand, and reports it as a full report would).
    result.send_full = !evaluation_current.ok() || !*evaluation_current;
    return result;
  }

  // A duplicate that is still the host's current state was evaluated too: the first attempt
  // may have been stored without its evaluation (the collector died in between, or evaluation
  // failed and the agent was told to resend). The stored evaluation key makes the evaluation
  // of one state happen once, whichever attempt gets there.
  const Evaluated& transitions = answer.evaluated;
  if (!transitions.ok()) {
    result.evaluation = transitions.status();
    if (absl::IsUnavailable(transitions.status())) {
      Log()->debug("not evaluating {}: {}", LogSafe(host), LogSafe(transitions.status()));
    } else {
      Log()->error("not evaluating {}: {}", LogSafe(host), LogSafe(transitions.status()));
    }
    if (IsTransient(transitions.status())) {
      // Not acknowledged: the agent resends, the resend is a current duplicate and evaluates.
      return absl::UnavailableError("report stored but not evaluated; send it again later");
    }
  } else if (transitions->has_value()) {
    result.evaluated = true;
    result.transitions = **transitions;
  }
  return result;
}

bool ReportPipeline::StoreEachAloneAfter(const absl::Status& failed,
                                         const std::vector<IncomingReport>& reports,
                                         std::vector<BatchAnswer>* answers) {
  if (IsTransient(failed) || reports.size() < 2) {
    for (BatchAnswer& a : *answers) a.saved = failed;
    return false;
  }
  // One report fails the batch (a value the database refuses, or another error a resend of the
  // same batch would meet again): each alone, so that only that one fails.
  for (size_t i = 0; i < reports.size(); ++i) (*answers)[i].saved = hosts_->StoreReport(reports[i]);
  return true;
}

std::vector<BatchAnswer> ReportPipeline::StoreDigestBatch(
    const std::vector<IncomingReport>& reports) {
  std::vector<BatchAnswer> answers(reports.size());
  absl::StatusOr<std::vector<SavedDigestReport>> stored = hosts_->StoreDigestReports(reports);
  std::vector<SavedDigestReport> saved(reports.size());
  if (stored.ok() && stored->size() == reports.size()) {
    saved = *std::move(stored);
    for (size_t i = 0; i < reports.size(); ++i) answers[i].saved = saved[i].saved;
  } else if (StoreEachAloneAfter(BatchFailure(stored), reports, &answers)) {
    for (size_t i = 0; i < reports.size(); ++i) {
      if (answers[i].saved.ok()) saved[i].saved = *answers[i].saved;
    }
  } else {
    return answers;
  }
  if (policy_ == nullptr) return answers;

  // The evaluation check of each current stored report, with one read of the waivers and one
  // of the labels for the whole batch.
  std::vector<size_t> due;
  std::vector<std::string> hosts;
  for (size_t i = 0; i < reports.size(); ++i) {
    if (!answers[i].saved.ok() || answers[i].saved->unknown_digest || !answers[i].saved->current) {
      continue;
    }
    due.push_back(i);
    hosts.push_back(reports[i].host);
  }
  if (due.empty()) return answers;
  absl::StatusOr<std::vector<smbfleet::v1::Waiver>> waivers = compliance_->ActiveWaivers();
  absl::StatusOr<std::map<std::string, HostLabels>> labels = std::map<std::string, HostLabels>();
  if (waivers.ok() && trusted_labels_ != nullptr) labels = trusted_labels_->GetHostLabelsOf(hosts);
  for (size_t i : due) {
    if (!waivers.ok()) {
      answers[i].evaluation_current = waivers.status();
      continue;
    }
    if (!labels.ok()) {
      answers[i].evaluation_current = labels.status();
      continue;
    }
    const IncomingReport& r = reports[i];
    auto found = labels->find(r.host);
    EvaluationInputs in = InputsFrom(
        *waivers, found == labels->end() ? HostLabels() : found->second, r.digest, r.received_at);
    absl::StatusOr<std::string> last_key = saved[i].evaluation_key.has_value()
                                               ? *saved[i].evaluation_key
                                               : compliance_->EvaluationKey(r.host);
    if (!last_key.ok()) {
      answers[i].evaluation_current = last_key.status();
    } else {
      answers[i].evaluation_current = in.key == *last_key;
    }
  }
  return answers;
}

std::vector<BatchAnswer> ReportPipeline::StorePostureBatch(
    const std::vector<IncomingReport>& reports) {
  std::vector<BatchAnswer> answers(reports.size());
  absl::StatusOr<std::vector<SavedReport>> stored = hosts_->StoreReports(reports);
  if (stored.ok() && stored->size() == reports.size()) {
    for (size_t i = 0; i < reports.size(); ++i) answers[i].saved = (*stored)[i];
  } else if (!StoreEachAloneAfter(BatchFailure(stored), reports, &answers)) {
    return answers;
  }
  if (policy_ == nullptr) return answers;

  // The current ones (a current duplicate too: see Finish) are evaluated together.
  std::vector<PageSubject> subjects;
  std::vector<size_t> of;
  for (size_t i = 0; i < reports.size(); ++i) {
    if (!answers[i].saved.ok() || !answers[i].saved->current) continue;
    const IncomingReport& r = reports[i];
    subjects.push_back({r.host, r.posture, r.digest, r.received_at});
    of.push_back(i);
  }
  std::vector<Evaluated> evaluated = EvaluatePage(subjects, [&](size_t k) {
    const PageSubject& s = subjects[k];
    return Evaluate(s.host, *s.posture, s.digest, s.now);
  });
  for (size_t k = 0; k < of.size() && k < evaluated.size(); ++k) {
    answers[of[k]].evaluated = std::move(evaluated[k]);
  }
  return answers;
}

std::vector<ReportPipeline::Evaluated> ReportPipeline::EvaluatePage(
    const std::vector<PageSubject>& subjects, const std::function<Evaluated(size_t)>& alone,
    const PageInputs* read) {
  std::vector<Evaluated> out(subjects.size(), std::optional<size_t>());
  if (policy_ == nullptr || subjects.empty()) return out;
  // A read or write of the page failed: all fail with it when it is transient (the database
  // away or busy: the next attempt tries again), else each is evaluated alone, so that only a
  // subject at fault fails.
  auto page_failed = [&](const std::vector<size_t>& which, const absl::Status& failed) {
    if (!IsTransient(failed)) {
      Log()->warn("evaluating {} host(s) one by one: {}", which.size(), LogSafe(failed));
    }
    for (size_t k : which) out[k] = IsTransient(failed) ? Evaluated(failed) : alone(k);
  };
  std::vector<size_t> all(subjects.size());
  std::vector<std::string> hosts;
  hosts.reserve(subjects.size());
  for (size_t k = 0; k < subjects.size(); ++k) {
    all[k] = k;
    hosts.push_back(subjects[k].host);
  }
  PageInputs own;
  if (read == nullptr) {
    absl::StatusOr<std::vector<smbfleet::v1::Waiver>> waivers = compliance_->ActiveWaivers();
    if (!waivers.ok()) {
      page_failed(all, waivers.status());
      return out;
    }
    own.waivers = *std::move(waivers);
    if (trusted_labels_ != nullptr) {
      absl::StatusOr<LabelsByHost> labels = trusted_labels_->GetHostLabelsOf(hosts);
      if (!labels.ok()) {
        page_failed(all, labels.status());
        return out;
      }
      own.labels = *std::move(labels);
    }
    read = &own;
  }
  absl::StatusOr<std::map<std::string, StoredEvaluation>> stored =
      compliance_->StoredEvaluations(hosts, policy_->name);
  if (!stored.ok()) {
    page_failed(all, stored.status());
    return out;
  }

  std::vector<smbfleet::v1::HostEvaluation> evaluations;
  evaluations.reserve(subjects.size());  // the writes point into it
  std::vector<EvaluationWrite> writes;
  writes.reserve(subjects.size());
  std::vector<size_t> written;  // the subject of each write
  for (size_t k = 0; k < subjects.size(); ++k) {
    const PageSubject& s = subjects[k];
    auto trusted = read->labels.find(s.host);
    EvaluationInputs in =
        InputsFrom(read->waivers, trusted == read->labels.end() ? HostLabels() : trusted->second,
                   s.digest, s.now);
    auto found = stored->find(s.host);
    StoredEvaluation previous_evaluation =
        found == stored->end() ? StoredEvaluation() : std::move(found->second);
    if (in.key == previous_evaluation.evaluation_key) continue;  // nothing due
    // Policies match on the host's identity, which is its certificate's, not what it says.
    const smbfleet::v1::Posture subject = TrustedSubject(s.host, in.trusted, *s.posture);
    const absl::Time started = absl::Now();
    evaluations.push_back(policy::EvaluateHost(*policy_, subject, in.waivers, s.now));
    if (metrics_ != nullptr) metrics_->PolicyEvaluated(absl::Now() - started);
    std::vector<policy::StoredResult> previous;
    previous.reserve(previous_evaluation.results.size());
    for (auto& r : previous_evaluation.results) {
      previous.push_back(
          {std::move(r.rule_id), std::move(r.share), std::move(r.policy_version), r.status});
    }
    EvaluationWrite& w = writes.emplace_back();
    w.host = s.host;
    w.evaluation = &evaluations.back();
    w.transitions = policy::ComputeTransitions(previous, evaluations.back());
    w.evaluation_key = std::move(in.key);
    w.expected_key = std::move(previous_evaluation.evaluation_key);
    written.push_back(k);
  }
  if (writes.empty()) return out;

  absl::StatusOr<std::vector<absl::Status>> saved = compliance_->SaveEvaluations(writes);
  if (saved.ok() && saved->size() != writes.size()) {
    saved = absl::InternalError("the store answered another number of evaluations");
  }
  if (!saved.ok()) {
    page_failed(written, saved.status());
    return out;
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    const size_t k = written[i];
    const absl::Status& status = (*saved)[i];
    if (status.ok()) {
      Log()->debug("{}: {} compliant, {} non-compliant, {} transitions", LogSafe(writes[i].host),
                   evaluations[i].compliant(), evaluations[i].non_compliant(),
                   writes[i].transitions.size());
      out[k] = std::optional<size_t>(writes[i].transitions.size());
    } else if (absl::IsAborted(status)) {
      out[k] = alone(k);  // evaluated meanwhile: its transitions are stale
    } else {
      out[k] = status;
    }
  }
  return out;
}

absl::StatusOr<ReportPipeline::LabelsByHost> ReportPipeline::TrustedLabelsOf(
    const std::vector<EvaluationState>& states) {
  if (trusted_labels_ == nullptr) return LabelsByHost();
  std::vector<std::string> hosts;
  hosts.reserve(states.size());
  for (const EvaluationState& s : states) hosts.push_back(s.host);
  return trusted_labels_->GetHostLabelsOf(hosts);
}

absl::StatusOr<std::vector<size_t>> ReportPipeline::DueForEvaluation(
    const std::vector<EvaluationState>& states) {
  std::vector<size_t> due;
  if (policy_ == nullptr || states.empty()) return due;
  const absl::Time now = clock_();
  ASSIGN_OR_RETURN(std::vector<smbfleet::v1::Waiver> waivers, compliance_->ActiveWaivers());
  ASSIGN_OR_RETURN(const LabelsByHost labels, TrustedLabelsOf(states));
  for (size_t i = 0; i < states.size(); ++i) {
    auto found = labels.find(states[i].host);
    EvaluationInputs in = InputsFrom(waivers, found == labels.end() ? HostLabels() : found->second,
                                     states[i].posture_digest, now);
    if (in.key != states[i].evaluation_key) due.push_back(i);
  }
  return due;
}

absl::StatusOr<std::optional<size_t>> ReportPipeline::EvaluateStored(const std::string& host) {
  if (policy_ == nullptr) return std::optional<size_t>();
  const absl::Time now = clock_();
  ASSIGN_OR_RETURN(std::optional<HostRecord> record, hosts_->GetHost(host));
  if (!record.has_value() || record->posture_digest.empty()) return std::optional<size_t>();
  // What the agent reported: classifications are evaluation's output, not its input.
  for (auto& share : *record->posture.mutable_shares()) {
    share.clear_classification();
    share.clear_classification_rule();
  }
  return Evaluate(host, record->posture, record->posture_digest, now);
}

absl::StatusOr<StoredPageOutcome> ReportPipeline::EvaluateStoredPage(
    const std::vector<EvaluationState>& states) {
  StoredPageOutcome out;
  if (policy_ == nullptr) {
    out.current = states.size();
    return out;
  }
  const absl::Time now = clock_();
  PageInputs inputs;
  ASSIGN_OR_RETURN(inputs.waivers, compliance_->ActiveWaivers());
  ASSIGN_OR_RETURN(inputs.labels, TrustedLabelsOf(states));
  std::vector<std::string> due;
  for (const EvaluationState& s : states) {
    auto trusted = inputs.labels.find(s.host);
    if (InputsFrom(inputs.waivers, trusted == inputs.labels.end() ? HostLabels() : trusted->second,
                   s.posture_digest, now)
            .key == s.evaluation_key) {
      ++out.current;
    } else {
      due.push_back(s.host);
    }
  }
  if (due.empty()) return out;

  // The postures as they are now (a report may have replaced one since the page was listed).
  absl::StatusOr<std::map<std::string, StoredPosture>> postures = hosts_->CurrentPostures(due);
  if (!postures.ok()) {
    PageFailed(due, postures.status(), &out);
    return out;
  }
  std::vector<PageSubject> subjects;
  subjects.reserve(due.size());
  for (const std::string& host : due) {
    auto posture = postures->find(host);
    if (posture == postures->end()) {  // no posture any more
      ++out.current;
      continue;
    }
    // What the agent reported: classifications are evaluation's output, not its input.
    for (auto& share : *posture->second.posture.mutable_shares()) {
      share.clear_classification();
      share.clear_classification_rule();
    }
    subjects.push_back({host, &posture->second.posture, posture->second.digest, now});
  }
  // A host evaluated meanwhile (a report), or when the page could not be written, is evaluated
  // again alone from its posture as it is then.
  std::vector<Evaluated> evaluated = EvaluatePage(
      subjects, [&](size_t k) { return EvaluateStored(subjects[k].host); }, &inputs);
  for (size_t k = 0; k < subjects.size(); ++k) {
    if (evaluated[k].ok()) {
      ++(evaluated[k]->has_value() ? out.evaluated : out.current);
    } else if (absl::IsNotFound(evaluated[k].status())) {
      ++out.current;  // the host is gone, as EvaluateStored finds no posture
    } else {
      out.failed.emplace_back(subjects[k].host, evaluated[k].status());
    }
  }
  return out;
}

void ReportPipeline::PageFailed(const std::vector<std::string>& hosts, const absl::Status& failed,
                                StoredPageOutcome* out) {
  if (IsTransient(failed)) {
    for (const std::string& host : hosts) out->failed.emplace_back(host, failed);
    return;
  }
  Log()->warn("re-evaluating {} host(s) one by one: {}", hosts.size(), LogSafe(failed));
  EvaluateEachStored(hosts, out);
}

void ReportPipeline::EvaluateEachStored(const std::vector<std::string>& hosts,
                                        StoredPageOutcome* out) {
  for (const std::string& host : hosts) {
    absl::StatusOr<std::optional<size_t>> result = EvaluateStored(host);
    if (!result.ok()) {
      out->failed.emplace_back(host, result.status());
    } else if (result->has_value()) {
      ++out->evaluated;
    } else {
      ++out->current;
    }
  }
}

absl::StatusOr<ReportPipeline::EvaluationInputs> ReportPipeline::InputsOf(const std::string& host,
                                                                          const std::string& digest,
                                                                          absl::Time now) {
  ASSIGN_OR_RETURN(std::vector<smbfleet::v1::Waiver> waivers, compliance_->ActiveWaivers());
  HostLabels trusted;
  if (trusted_labels_ != nullptr) {
    ASSIGN_OR_RETURN(trusted, trusted_labels_->GetHostLabels(host));
  }
  return InputsFrom(std::move(waivers), std::move(trusted), digest, now);
}

ReportPipeline::EvaluationInputs ReportPipeline::InputsFrom(
    std::vector<smbfleet::v1::Waiver> stored_waivers, HostLabels trusted, const std::string& digest,
    absl::Time now) const {
  EvaluationInputs in;
  in.waivers = std::move(stored_waivers);
  for (const auto& w : policy_->waivers) {
    if (InForce(w, now)) in.waivers.push_back(w);
  }
  in.trusted = std::move(trusted);
  // A change of the trusted labels changes what policy sees, as a new posture would.
  std::string subject_digest = digest;
  for (const auto& [k, v] : in.trusted) {
    absl::StrAppend(&subject_digest, "\n", k.size(), ":", k, "=", v.size(), ":", v);
  }
  in.key = EvaluationKey(subject_digest, policy_->name, policy_->version, policy_->source_digest,
                         in.waivers);
  return in;
}

absl::StatusOr<std::optional<size_t>> ReportPipeline::Evaluate(const std::string& host,
                                                               const smbfleet::v1::Posture& posture,
                                                               const std::string& digest,
                                                               absl::Time now) {
  // The key lives with the host in the store (hosts.evaluation_key, one column read), so a
  // restart or another replica skips as well; after a failed save the key is unchanged and the
  // next report evaluates again.
  ASSIGN_OR_RETURN(EvaluationInputs in, InputsOf(host, digest, now));
  ASSIGN_OR_RETURN(std::string last_key, compliance_->EvaluationKey(host));
  if (in.key == last_key) return std::optional<size_t>();

  // Policies match on the host's identity, which is its certificate's, not what it says.
  const smbfleet::v1::Posture subject = TrustedSubject(host, in.trusted, posture);
  const absl::Time started = absl::Now();
  const auto eval = policy::EvaluateHost(*policy_, subject, in.waivers, now);
  if (metrics_ != nullptr) metrics_->PolicyEvaluated(absl::Now() - started);
  ASSIGN_OR_RETURN(size_t transitions, RecordEvaluation(*compliance_, host, eval, in.key));
  Log()->debug("{}: {} compliant, {} non-compliant, {} transitions", LogSafe(host),
               eval.compliant(), eval.non_compliant(), transitions);
  return std::optional<size_t>(transitions);
}

smbfleet::v1::Posture TrustedSubject(const std::string& host, const HostLabels& trusted,
                                     const smbfleet::v1::Posture& reported) {
  smbfleet::v1::Posture subject = reported;
  auto* h = subject.mutable_host();
  h->set_hostname(host);
  h->set_fqdn(host.find('.') == std::string::npos ? "" : host);
  h->mutable_labels()->clear();
  h->mutable_labels()->insert(trusted.begin(), trusted.end());
  return subject;
}

namespace {

// One attempt: transitions against the results stored now, saved only if no other evaluation
// of the host was saved in between.
absl::StatusOr<size_t> TryRecordEvaluation(ComplianceStore& store, const std::string& host,
                                           const smbfleet::v1::HostEvaluation& eval,
                                           const std::string& evaluation_key) {
  EvaluationWrite write;
  ASSIGN_OR_RETURN(write.expected_key, store.EvaluationKey(host));
  if (!evaluation_key.empty() && write.expected_key == evaluation_key) {
    return 0;  // a concurrent report of the same state has just stored this evaluation
  }
  ASSIGN_OR_RETURN(std::vector<ResultStatus> stored,
                   store.CurrentResults(host, eval.policy_name()));
  std::vector<policy::StoredResult> previous;
  previous.reserve(stored.size());
  for (auto& r : stored) {
    previous.push_back(
        {std::move(r.rule_id), std::move(r.share), std::move(r.policy_version), r.status});
  }
  write.host = host;
  write.evaluation = &eval;
  write.transitions = policy::ComputeTransitions(previous, eval);
  write.evaluation_key = evaluation_key;
  RETURN_IF_ERROR(store.SaveEvaluation(write));
  return write.transitions.size();
}

}  // namespace

absl::StatusOr<size_t> RecordEvaluation(ComplianceStore& store, const std::string& host,
                                        const smbfleet::v1::HostEvaluation& eval,
                                        const std::string& evaluation_key) {
  constexpr int kAttempts = 3;
  absl::StatusOr<size_t> result;
  for (int i = 0; i < kAttempts; ++i) {
    result = TryRecordEvaluation(store, host, eval, evaluation_key);
    if (!absl::IsAborted(result.status())) break;
  }
  return result;
}

}  // namespace smbfleet::collector

#include "collector/ingest/pipeline.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
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

}  // namespace

ReportPipeline::ReportPipeline(HostStore* hosts, ComplianceStore* compliance,
                               const policy::Policy* policy, Clock clock, IngestLimits limits)
    : hosts_(hosts),
      compliance_(compliance),
      policy_(policy),
      clock_(std::move(clock)),
      limits_(limits) {}

absl::StatusOr<IngestResult> ReportPipeline::Ingest(const std::string& host,
                                                    const smbfleet::v1::ReportRequest& request) {
  if (absl::Status valid = ValidateReport(request, limits_); !valid.ok()) {
    if (metrics_ != nullptr) metrics_->ReportRefused(ReportRefusal::kInvalid);
    return valid;
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
  auto saved = hosts_->StoreReport(incoming);
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
    auto current = EvaluationCurrent(host, incoming.digest, incoming.received_at);
    if (!current.ok() && IsTransient(current.status())) {
      Log()->debug("not evaluating {}: {}", LogSafe(host), LogSafe(current.status()));
      return absl::UnavailableError("report stored but not evaluated; send it again later");
    }
    // The stored report is kept: the full resend is a current duplicate and evaluates (or
    // meets the same error with the posture in hand, and reports it as a full report would).
    result.send_full = !current.ok() || !*current;
    return result;
  }

  // A duplicate that is still the host's current state is evaluated too: the first attempt may
  // have been stored without its evaluation (the collector died in between, or evaluation
  // failed and the agent was told to resend). The stored evaluation key makes the evaluation
  // of one state happen once, whichever attempt gets there.
  auto transitions = Evaluate(host, request.posture(), incoming.digest, incoming.received_at);
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

absl::StatusOr<ReportPipeline::EvaluationInputs> ReportPipeline::InputsOf(const std::string& host,
                                                                          const std::string& digest,
                                                                          absl::Time now) {
  EvaluationInputs in;
  ASSIGN_OR_RETURN(in.waivers, compliance_->ActiveWaivers());
  for (const auto& w : policy_->waivers) {
    if (InForce(w, now)) in.waivers.push_back(w);
  }
  if (trusted_labels_ != nullptr) {
    ASSIGN_OR_RETURN(in.trusted, trusted_labels_->GetHostLabels(host));
  }
  // A change of the trusted labels changes what policy sees, as a new posture would.
  std::string subject_digest = digest;
  for (const auto& [k, v] : in.trusted) {
    absl::StrAppend(&subject_digest, "\n", k.size(), ":", k, "=", v.size(), ":", v);
  }
  in.key = EvaluationKey(subject_digest, policy_->name, policy_->version, policy_->source_digest,
                         in.waivers);
  return in;
}

absl::StatusOr<bool> ReportPipeline::EvaluationCurrent(const std::string& host,
                                                       const std::string& digest, absl::Time now) {
  ASSIGN_OR_RETURN(EvaluationInputs in, InputsOf(host, digest, now));
  ASSIGN_OR_RETURN(std::string last_key, compliance_->EvaluationKey(host));
  return in.key == last_key;
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

#include "collector/metrics/metrics.h"

#include <vector>

#include "absl/strings/strip.h"
#include "common/version.h"
#include "prometheus/text_serializer.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

constexpr ReportRefusal kRefusals[] = {
    ReportRefusal::kUnauthenticated, ReportRefusal::kNotAgent, ReportRefusal::kInvalid,
    ReportRefusal::kNotStored,       ReportRefusal::kBusy,     ReportRefusal::kGone};
constexpr DatabaseOperation kOperations[] = {DatabaseOperation::kConnect, DatabaseOperation::kRead,
                                             DatabaseOperation::kWrite};

std::string OutcomeName(SaveOutcome outcome) {
  switch (outcome) {
    case SaveOutcome::kStored:
      return "stored";
    case SaveOutcome::kUnchanged:
      return "unchanged";
    case SaveOutcome::kDuplicate:
      return "duplicate";
  }
  return "unknown";
}

// "RESULT_APPLIED" -> "APPLIED", as the API names the host state it leads to.
std::string AckResultName(v1::AckChangeRequest::Result result) {
  absl::string_view name = v1::AckChangeRequest::Result_Name(result);
  absl::ConsumePrefix(&name, "RESULT_");
  return std::string(name);
}

// Acks come in at human and network speed (seconds), bounded by changes.ack_timeout.
const std::vector<double> kAckBuckets = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900};
// A lease is immediate unless every connection is busy.
const std::vector<double> kPoolWaitBuckets = {0.0001, 0.0005, 0.001, 0.005, 0.01,
                                              0.05,   0.1,    0.5,   1,     5};
// One host against the policy: sub-millisecond for a small posture.
const std::vector<double> kEvaluationBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                0.01,   0.025,   0.05,   0.1,   0.25,   1};

}  // namespace

absl::string_view ReportRefusalName(ReportRefusal reason) {
  switch (reason) {
    case ReportRefusal::kUnauthenticated:
      return "unauthenticated";
    case ReportRefusal::kNotAgent:
      return "not_agent";
    case ReportRefusal::kInvalid:
      return "invalid";
    case ReportRefusal::kNotStored:
      return "database";
    case ReportRefusal::kBusy:
      return "busy";
    case ReportRefusal::kGone:
      return "gone";
  }
  return "unknown";
}

absl::string_view DatabaseOperationName(DatabaseOperation operation) {
  switch (operation) {
    case DatabaseOperation::kConnect:
      return "connect";
    case DatabaseOperation::kRead:
      return "read";
    case DatabaseOperation::kWrite:
      return "write";
  }
  return "unknown";
}

absl::string_view ReevaluationResultName(ReevaluationResult result) {
  switch (result) {
    case ReevaluationResult::kCurrent:
      return "current";
    case ReevaluationResult::kEvaluated:
      return "evaluated";
    case ReevaluationResult::kFailed:
      return "failed";
  }
  return "unknown";
}

Metrics::Metrics() : Metrics(kVersion) {}

Metrics::Metrics(absl::string_view version) : registry_(std::make_shared<prometheus::Registry>()) {
  // Every series exists from the start at 0, so that rate() and alerts see the first event.
  auto& reports = BuildCounter()
                      .Name("smbfleet_reports_total")
                      .Help(
                          "Agent reports by result: received, then stored, unchanged or "
                          "duplicate (refused ones: smbfleet_reports_refused_total)")
                      .Register(*registry_);
  received_ = &reports.Add({{"result", "received"}});
  for (SaveOutcome o : {SaveOutcome::kStored, SaveOutcome::kUnchanged, SaveOutcome::kDuplicate}) {
    saved_[o] = &reports.Add({{"result", OutcomeName(o)}});
  }
  auto& refused = BuildCounter()
                      .Name("smbfleet_reports_refused_total")
                      .Help("Agent reports refused, by reason")
                      .Register(*registry_);
  for (ReportRefusal r : kRefusals) {
    refused_[r] = &refused.Add({{"reason", std::string(ReportRefusalName(r))}});
  }
  agents_connected_ = &BuildGauge()
                           .Name("smbfleet_agents_connected")
                           .Help("Agents' open Watch streams on this collector")
                           .Register(*registry_)
                           .Add({});
  orders_sent_ = &BuildCounter()
                      .Name("smbfleet_change_orders_sent_total")
                      .Help(
                          "Change orders sent down Watch streams (pending ones again on a "
                          "reconnect)")
                      .Register(*registry_)
                      .Add({});
  auto& acked = BuildCounter()
                    .Name("smbfleet_change_orders_total")
                    .Help("Change orders acked by agents, by the ack's result")
                    .Register(*registry_);
  for (int i = v1::AckChangeRequest::Result_MIN; i <= v1::AckChangeRequest::Result_MAX; ++i) {
    if (!v1::AckChangeRequest::Result_IsValid(i) || i == v1::AckChangeRequest::RESULT_UNSPECIFIED) {
      continue;
    }
    auto result = static_cast<v1::AckChangeRequest::Result>(i);
    acked_[result] = &acked.Add({{"result", AckResultName(result)}});
  }
  ack_latency_ = &BuildHistogram()
                      .Name("smbfleet_order_ack_latency_seconds")
                      .Help("From a change order's dispatch to its agent's ack")
                      .Register(*registry_)
                      .Add({}, kAckBuckets);
  auto& db_errors = BuildCounter()
                        .Name("smbfleet_database_errors_total")
                        .Help("Failed database calls, by what they were doing")
                        .Register(*registry_);
  for (DatabaseOperation op : kOperations) {
    database_errors_[op] = &db_errors.Add({{"operation", std::string(DatabaseOperationName(op))}});
  }
  pool_wait_ = &BuildHistogram()
                    .Name("smbfleet_database_pool_wait_seconds")
                    .Help("Waiting for a database connection from the pool")
                    .Register(*registry_)
                    .Add({}, kPoolWaitBuckets);
  policy_evaluation_ = &BuildHistogram()
                            .Name("smbfleet_policy_evaluation_seconds")
                            .Help("Evaluating one host's posture against the policy")
                            .Register(*registry_)
                            .Add({}, kEvaluationBuckets);
  queue_depth_ = &BuildGauge()
                      .Name("smbfleet_ingest_queue_depth")
                      .Help("Calls waiting in the work queue for a database thread")
                      .Register(*registry_)
                      .Add({});
  auto& reevaluated = BuildCounter()
                          .Name("smbfleet_policy_reevaluated_hosts_total")
                          .Help(
                              "Hosts checked by the re-evaluation of stored postures after a "
                              "policy change, by what was done")
                          .Register(*registry_);
  for (ReevaluationResult r : {ReevaluationResult::kCurrent, ReevaluationResult::kEvaluated,
                               ReevaluationResult::kFailed}) {
    reevaluated_[r] = &reevaluated.Add({{"result", std::string(ReevaluationResultName(r))}});
  }
  reevaluation_running_ = &BuildGauge()
                               .Name("smbfleet_policy_reevaluation_running")
                               .Help("1 while this collector re-evaluates stored postures")
                               .Register(*registry_)
                               .Add({});
  BuildGauge()
      .Name("smbfleet_build_info")
      .Help("Always 1; the collector's version as a label")
      .Register(*registry_)
      .Add({{"version", std::string(version)}})
      .Set(1);
}

void Metrics::ReportReceived() { received_->Increment(); }

void Metrics::ReportSaved(SaveOutcome outcome) {
  auto it = saved_.find(outcome);
  if (it != saved_.end()) it->second->Increment();
}

void Metrics::ReportRefused(ReportRefusal reason) {
  auto it = refused_.find(reason);
  if (it != refused_.end()) it->second->Increment();
}

void Metrics::SetAgentsConnected(size_t streams) {
  agents_connected_->Set(static_cast<double>(streams));
}

void Metrics::OrdersSent(size_t orders) { orders_sent_->Increment(static_cast<double>(orders)); }

void Metrics::OrderAcked(v1::AckChangeRequest::Result result,
                         std::optional<absl::Duration> since_dispatch) {
  auto it = acked_.find(result);
  if (it != acked_.end()) it->second->Increment();
  if (since_dispatch.has_value() && *since_dispatch >= absl::ZeroDuration()) {
    ack_latency_->Observe(absl::ToDoubleSeconds(*since_dispatch));
  }
}

void Metrics::DatabaseError(DatabaseOperation operation) {
  auto it = database_errors_.find(operation);
  if (it != database_errors_.end()) it->second->Increment();
}

void Metrics::DatabasePoolWait(absl::Duration wait) {
  pool_wait_->Observe(absl::ToDoubleSeconds(wait));
}

void Metrics::PolicyEvaluated(absl::Duration took) {
  policy_evaluation_->Observe(absl::ToDoubleSeconds(took));
}

void Metrics::SetIngestQueueDepth(size_t tasks) { queue_depth_->Set(static_cast<double>(tasks)); }

void Metrics::HostsReevaluated(ReevaluationResult result, size_t hosts) {
  auto it = reevaluated_.find(result);
  if (it != reevaluated_.end() && hosts > 0) it->second->Increment(static_cast<double>(hosts));
}

void Metrics::SetReevaluationRunning(bool running) { reevaluation_running_->Set(running ? 1 : 0); }

std::string Metrics::Text() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace smbfleet::collector

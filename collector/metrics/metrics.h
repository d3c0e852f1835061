#ifndef SMBFLEET_COLLECTOR_METRICS_METRICS_H_
#define SMBFLEET_COLLECTOR_METRICS_METRICS_H_

// The collector's Prometheus metrics (docs/metrics.md): one registry, its families, and the
// text format the web adapter serves on /metrics. Every label value comes from a fixed set
// below, never from what an agent or a request sent (bounded series, nothing to inject).
//
// Thread-safe: counters and gauges are atomics, histograms lock briefly. Components take a
// `Metrics*` that may be null (tests that do not count).

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collector/store/host_store.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector {

// Why a report was refused: smbfleet_reports_refused_total{reason}.
enum class ReportRefusal {
  kUnauthenticated,  // "unauthenticated": no valid credentials (none, or a revoked one)
  kNotAgent,         // "not_agent": authenticated, but not as an agent
  kInvalid,          // "invalid": ValidateReport refused a field (too long, too many, malformed)
  kNotStored,        // "database": the store failed; the agent keeps it and retries
  kBusy,             // "busy": the work queue was full
  kGone,             // "gone": the agent gave up (deadline passed, cancelled) while it was queued
};

// What a failed database call was doing: smbfleet_database_errors_total{operation}.
enum class DatabaseOperation {
  kConnect,  // "connect": opening a connection (or one broke)
  kRead,     // "read": a read-only transaction
  kWrite,    // "write": a writing transaction
};

// What the re-evaluation of stored postures did with a host:
// smbfleet_policy_reevaluated_hosts_total{result}.
enum class ReevaluationResult {
  kCurrent,    // "current": its stored evaluation key was the current one; nothing to do
  kEvaluated,  // "evaluated": evaluated again from its stored posture
  kFailed,     // "failed": due but not evaluated (a later pass tries again)
};

class Metrics {
 public:
  // `version` is smbfleet_build_info's label.
  explicit Metrics(absl::string_view version);
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A report call arrived (before authentication and the queue): every received report ends
  // as stored, unchanged, duplicate or one refusal.
  void ReportReceived();
  void ReportSaved(SaveOutcome outcome);
  void ReportRefused(ReportRefusal reason);

  // The number of open Watch streams on this collector.
  void SetAgentsConnected(size_t streams);
  // Change orders sent down Watch streams (a reconnect sends pending ones again).
  void OrdersSent(size_t orders);
  // An ack that moved a host's state. `since_dispatch`: from the order's dispatch to this ack;
  // nullopt when the change does not say when it was dispatched (then only counted).
  void OrderAcked(smbfleet::v1::AckChangeRequest::Result result,
                  std::optional<absl::Duration> since_dispatch);

  void DatabaseError(DatabaseOperation operation);
  // Time spent waiting for a connection of the pool (all leased).
  void DatabasePoolWait(absl::Duration wait);

  // One policy::EvaluateHost call.
  void PolicyEvaluated(absl::Duration took);
  // Tasks waiting in the work queue (not counting the ones running).
  void SetIngestQueueDepth(size_t tasks);
  // The re-evaluation of stored postures (ingest/reevaluate.h): hosts handled, and whether a
  // pass runs in this process now.
  void HostsReevaluated(ReevaluationResult result, size_t hosts);
  void SetReevaluationRunning(bool running);

  // Every family in the Prometheus text exposition format (version 0.0.4).
  std::string Text() const;
  prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* received_;
  std::map<SaveOutcome, prometheus::Counter*> saved_;
  std::map<ReportRefusal, prometheus::Counter*> refused_;
  prometheus::Gauge* agents_connected_;
  prometheus::Counter* orders_sent_;
  std::map<smbfleet::v1::AckChangeRequest::Result, prometheus::Counter*> acked_;
  prometheus::Histogram* ack_latency_;
  std::map<DatabaseOperation, prometheus::Counter*> database_errors_;
  prometheus::Histogram* pool_wait_;
  prometheus::Histogram* policy_evaluation_;
  prometheus::Gauge* queue_depth_;
  std::map<ReevaluationResult, prometheus::Counter*> reevaluated_;
  prometheus::Gauge* reevaluation_running_;
};

// The label values, for tests and docs.
absl::string_view ReportRefusalName(ReportRefusal reason);
absl::string_view DatabaseOperationName(DatabaseOperation operation);
absl::string_view ReevaluationResultName(ReevaluationResult result);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_METRICS_METRICS_H_

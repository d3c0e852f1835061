#ifndef SMBFLEET_AGENT_CORE_AGENT_H_
#define SMBFLEET_AGENT_CORE_AGENT_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/core/agent_config.h"
#include "agent/core/source.h"
#include "agent/core/spool.h"
#include "agent/core/transport.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::agent {

using BenchmarkFn = std::function<absl::StatusOr<std::vector<smbfleet::v1::Benchmark>>()>;
// Fills what the platform source does not know: CPU features, cores.
using HostInfoFn = std::function<void(smbfleet::v1::HostInfo*)>;

// Builds the report the agent sends: a posture from the source plus host identity fields,
// labels, the latest benchmark, a fresh report id. Keeps it under max_bytes by dropping the
// oldest events first (counted in events_dropped) and saying so in probe_errors.
absl::StatusOr<smbfleet::v1::ReportRequest> BuildReport(
    PostureSource& source, const AgentConfig& config, const std::string& reason,
    const std::vector<smbfleet::v1::Benchmark>& benchmarks, const HostInfoFn& host_info);

std::string NewReportId();

// Fits a report into max_bytes; returns false if even a posture without events and open
// files is too large.
bool FitReport(smbfleet::v1::ReportRequest* report, size_t max_bytes);

class Agent {
 public:
  Agent(AgentConfig config, PostureSource* source, CollectorClient* client, Spool* spool,
        BenchmarkFn benchmark, HostInfoFn host_info);

  // Collect, spool and deliver everything spooled; an error when something is left undelivered.
  absl::Status RunOnce(const std::string& reason);

  // The service loop: report at start (after a random part of the splay), then every interval
  // with splay, at once on a ReportNow nudge; keeps the Watch stream open. Returns when *stop.
  void Run(const std::atomic<bool>* stop);

  void Nudge(const std::string& reason);

 private:
  absl::Status Flush();
  absl::Status CollectAndSpool(const std::string& reason);
  void RefreshBenchmark();
  void WatchLoop(const std::atomic<bool>* stop);
  // Waits until the deadline, a nudge or stop; returns the nudge reason if nudged.
  std::string WaitUntil(std::chrono::steady_clock::time_point deadline,
                        const std::atomic<bool>* stop);

  AgentConfig config_;
  PostureSource* source_;
  CollectorClient* client_;
  Spool* spool_;
  BenchmarkFn benchmark_;
  HostInfoFn host_info_;
  std::vector<smbfleet::v1::Benchmark> last_benchmark_;
  std::chrono::steady_clock::time_point next_benchmark_{};
  std::mt19937_64 rng_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::string nudge_reason_;
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_AGENT_H_

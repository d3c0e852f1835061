#ifndef SMBFLEET_AGENT_CORE_AGENT_H_
#define SMBFLEET_AGENT_CORE_AGENT_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "agent/core/agent_config.h"
#include "agent/core/approver_trust.h"
#include "agent/core/change_executor.h"
#include "agent/core/clock.h"
#include "agent/core/counter_windows.h"
#include "agent/core/source.h"
#include "agent/core/spool.h"
#include "agent/core/transport.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::agent {

// One run of the on-host benchmarks: crypto rows go to Posture.benchmarks, compression rows to
// Posture.compression_benchmarks.
struct BenchmarkRun {
  std::vector<smbfleet::v1::Benchmark> crypto;
  std::vector<smbfleet::v1::CompressionBenchmark> compression;
  // The cost of a page fault; absent (no measured_at) where it was not measured.
  smbfleet::v1::MemoryBenchmark memory;
  // A part gave up for want of CPU time (the benches' DeadlineExceeded, "host busy") and is left
  // out: the agent runs the benchmarks again after kBenchmarkRetryWhenBusy, not a whole
  // benchmark_interval later, and meanwhile reports the part's last measurement.
  bool cut_short = false;
};
// When a benchmark run that a busy host cut short runs again (at most the benchmark_interval).
inline constexpr std::chrono::hours kBenchmarkRetryWhenBusy{1};
using BenchmarkFn = std::function<absl::StatusOr<BenchmarkRun>()>;
// Samples the compressibility of the share at a path on this host (bench::SampleCompressibility).
using ShareSamplerFn = std::function<smbfleet::v1::CompressibilitySample(const std::string& path)>;
// Fills what the platform source does not know: CPU features, cores.
using HostInfoFn = std::function<void(smbfleet::v1::HostInfo*)>;

// What must be equal for a posture to go as its digest only: its PostureDigest and its crypto
// benchmarks (which the digest leaves out, yet the collector stores each new run of).
std::string AckKey(const smbfleet::v1::Posture& posture);

// Builds the report the agent sends: a posture from the source plus host identity fields,
// labels, the latest benchmark, a fresh report id. Keeps it under max_bytes by dropping the
// oldest events first (counted in events_dropped) and saying so in probe_errors.
absl::StatusOr<smbfleet::v1::ReportRequest> BuildReport(PostureSource& source,
                                                        const AgentConfig& config,
                                                        const std::string& reason,
                                                        const BenchmarkRun& benchmarks,
                                                        const HostInfoFn& host_info);

std::string NewReportId();

// The spool bounds of `spool:` in the agent's config.
SpoolLimits SpoolLimitsOf(const AgentConfig& config);

// Fits a report into max_bytes; returns false if even a posture without events and open
// files is too large.
bool FitReport(smbfleet::v1::ReportRequest* report, size_t max_bytes);

class Agent {
 public:
  // `clock` and `seed` (splay and backoff jitter) are for tests; not owned.
  Agent(AgentConfig config, PostureSource* source, CollectorClient* client, Spool* spool,
        BenchmarkFn benchmark, HostInfoFn host_info, Clock* clock = RealClock(),
        uint64_t seed = std::random_device{}());
  // Waits for a benchmark run still in progress and keeps it for the next start.
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Collect, spool and deliver everything spooled; an error when something is left undelivered.
  absl::Status RunOnce(const std::string& reason);

  // The service loop: report at start (after a random part of the splay), then every interval
  // with splay, at once on a ReportNow nudge; retries undelivered reports with backoff; keeps the
  // Watch stream open. Returns after Stop().
  void Run();

  // Change orders from the Watch stream go to `executor` (not owned; opened by the caller), which
  // Run() works on a thread of its own; without one, orders are logged and ignored. Its finished
  // change ids open each Watch stream, and each order that touched the host nudges a report with
  // reason after_change. Call before Run().
  void set_change_executor(ChangeExecutor* executor);
  // Approver sets from the Watch stream go to `trust` (not owned; opened by the caller); without
  // one they are ignored. Call before Run().
  void set_approver_trust(ApproverTrust* trust) { trust_ = trust; }
  // With compression_sampling enabled, each report's shares named there get a
  // Share.compressibility from `sampler`, at most once per compression_sampling.interval per
  // share (and again when its path changes). Call before Run().
  void set_share_sampler(ShareSamplerFn sampler) { sampler_ = std::move(sampler); }

  // After-windows of load counters (not owned; opened by the caller): each delivered report,
  // digest-only ones too, carries those that are due as change_counters, and they are forgotten
  // once a report carrying them is acknowledged; an after-window that fills makes a report with
  // reason change_counters at once. Call before Run() and before the sampler starts.
  void set_counter_windows(CounterWindows* windows);
  // Called on the Run() thread once the first report after start has been delivered and again
  // after each delivery that followed a benchmark run: gives back memory that only the start and
  // the benchmark used (main: platform::ReleaseProgramPages). Call before Run().
  void set_release_memory(std::function<void()> release) { release_memory_ = std::move(release); }
  // How long a report waits for a benchmark run in progress (default 10 s; agent.cc,
  // RefreshBenchmark). Call before Run().
  void set_benchmark_wait(std::chrono::milliseconds wait) { benchmark_wait_ = wait; }

  // Makes Run() return soon; safe from any thread, before or during Run().
  void Stop();
  void Nudge(const std::string& reason);
  // A ReportNow from the collector: a Nudge, unless the last report was collected less than
  // schedule.min_nudge_interval ago (then ignored, logged at debug). True if it nudged.
  bool CollectorNudge(const std::string& reason);

  // Delivers everything spooled, oldest first: a report leaves the spool only once the collector
  // acknowledged it; a permanent refusal (IsPermanentReportError) moves it to rejected/ and a
  // corrupt file to rejected/ as <id>.corrupt (both counted), and the flush carries on with the
  // next report; any other error stops the flush and is returned, the report kept.
  // A report whose posture is the one the collector last acknowledged (same PostureDigest and
  // benchmarks) goes as its digest only, to a collector that takes those; on OUTCOME_SEND_FULL
  // the same report goes again whole.
  absl::Status Flush();

 private:
  // Sends one spooled report: digest-only when it can, else (or when asked) whole. *digest_only:
  // the collector took it as its digest; *sent_bytes: the serialised size of the last send.
  absl::StatusOr<smbfleet::v1::ReportResponse> Deliver(const smbfleet::v1::ReportRequest& report,
                                                       bool* digest_only, size_t* sent_bytes);
  // Remembers (in memory and in <spool_dir>/acked_digest) the AckKey of the posture the
  // collector acknowledged last; empty: send the next report whole.
  void SetAcked(const std::string& key);
  absl::Status CollectAndSpool(const std::string& reason);
  void RefreshBenchmark();
  // Takes the kept run when it is recent enough, else starts a run on a thread of its own
  // (benchmark_run_) when one is due.
  void StartBenchmarkIfDue();
  // Makes a finished benchmark run the one reports carry, and keeps it across restarts.
  void TakeBenchmark(absl::StatusOr<BenchmarkRun> result);
  // After a run a busy host cut short: the next run is due after kBenchmarkRetryWhenBusy.
  void RunBenchmarkAgainSooner();
  void SampleShares(smbfleet::v1::Posture* posture);
  void WatchLoop(uint64_t seed);
  // Waits until the deadline, a nudge or Stop(). False when stopped; else *nudge is the nudge
  // reason, empty when the deadline passed.
  bool WaitUntil(Clock::TimePoint deadline, std::string* nudge);
  bool Stopped();

  AgentConfig config_;
  PostureSource* source_;
  CollectorClient* client_;
  Spool* spool_;
  BenchmarkFn benchmark_;
  HostInfoFn host_info_;
  Clock* clock_;
  ChangeExecutor* changes_ = nullptr;
  CounterWindows* counters_ = nullptr;
  ApproverTrust* trust_ = nullptr;
  // Used by the Run() thread only (the watch thread gets its own seed).
  BenchmarkRun last_benchmark_;
  Clock::TimePoint next_benchmark_{};
  std::chrono::milliseconds benchmark_wait_{10000};
  // A benchmark run on a thread of its own, valid until taken. Declared after benchmark_ and
  // the state it may use: destroyed before them, it waits for the run to end.
  std::future<absl::StatusOr<BenchmarkRun>> benchmark_run_;
  struct ShareSample {
    std::string path;
    smbfleet::v1::CompressibilitySample sample;
    Clock::TimePoint next{};
  };
  ShareSamplerFn sampler_;
  std::map<std::string, ShareSample> share_samples_;  // by lower-case share name
  std::function<void()> release_memory_;
  bool release_due_ = true;  // at start, and after each benchmark run
  std::mt19937_64 rng_;
  // The spool's counts each spooled report carries in its probe errors; taken off the spool's
  // pending counts once that report is delivered.
  std::map<std::string, SpoolCounts> carried_counts_;
  // AckKey of the last posture a collector taking digest-only reports acknowledged; empty when
  // unknown or the collector does not take them. Loaded on the first Flush.
  std::string acked_;
  bool acked_loaded_ = false;

  std::mutex mu_;
  std::condition_variable cv_;  // nudge_reason_ or stopped_ changed
  std::string nudge_reason_ ABSL_GUARDED_BY(mu_);
  std::optional<Clock::TimePoint> last_report_ ABSL_GUARDED_BY(mu_);  // last collected
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_AGENT_H_

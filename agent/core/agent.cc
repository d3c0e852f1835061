#include "agent/core/agent.h"

#include <openssl/rand.h>

#include <algorithm>
#include <system_error>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "agent/core/backoff.h"
#include "agent/core/durable_file.h"
#include "agent/core/probe_errors.h"
#include "common/files.h"
#include "common/logging.h"
#include "common/posture_digest.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::agent {
namespace {

std::shared_ptr<spdlog::logger> Log() { return Logger("agent"); }

constexpr Probe kReportProbe{
    "report", {smbfleet::v1::POSTURE_SECTION_EVENTS, smbfleet::v1::POSTURE_SECTION_OPEN_FILES}};
// Reports of this host the collector will never see: no section of this posture is unknown.
constexpr Probe kSpoolProbe{"spool", {}};
// Load counters the host could not read (docs/agent-changes.md): no posture section is unknown.
constexpr Probe kCountersProbe{kLoadCountersProbe, {}};

// The last benchmark run, kept so that a restarted agent benchmarks once per benchmark_interval.
std::string BenchmarkCache(const AgentConfig& config) { return config.spool_dir + "/benchmark.pb"; }

// Tells the collector about reports lost since the last delivered report (probe errors "spool"
// with code DROPPED, CORRUPT or REJECTED; the count leads the message).
void AddSpoolCounts(smbfleet::v1::Posture* posture, const SpoolCounts& counts) {
  if (counts.dropped > 0) {
    AddProbeError(posture, kSpoolProbe, "DROPPED",
                  absl::StrCat(counts.dropped,
                               " reports dropped since the last delivered report (spool bounds "
                               "or a failed spool write)"));
  }
  if (counts.corrupt > 0) {
    AddProbeError(posture, kSpoolProbe, "CORRUPT",
                  absl::StrCat(counts.corrupt,
                               " spooled reports found corrupt since the last delivered report, "
                               "moved to the spool's rejected/"));
  }
  if (counts.rejected > 0) {
    AddProbeError(posture, kSpoolProbe, "REJECTED",
                  absl::StrCat(counts.rejected,
                               " reports refused by the collector since the last delivered "
                               "report, moved to the spool's rejected/"));
  }
}

}  // namespace

std::string NewReportId() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof(b)) != 1) {
    std::random_device rd;
    for (auto& x : b) x = static_cast<unsigned char>(rd());
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return absl::StrFormat("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                         b[12], b[13], b[14], b[15]);
}

SpoolLimits SpoolLimitsOf(const AgentConfig& config) {
  SpoolLimits limits;
  limits.max_reports = config.spool_max_reports;
  limits.max_bytes = config.spool_max_bytes;
  limits.max_age = std::chrono::duration_cast<std::chrono::seconds>(config.spool_max_age);
  limits.max_rejected = config.spool_max_rejected;
  return limits;
}

bool FitReport(smbfleet::v1::ReportRequest* report, size_t max_bytes) {
  auto* posture = report->mutable_posture();
  if (report->ByteSizeLong() <= max_bytes) return true;
  size_t events_before = static_cast<size_t>(posture->events_size());
  // Drop the oldest events first: events are kept in arrival order.
  while (posture->events_size() > 0 && report->ByteSizeLong() > max_bytes) {
    int drop = std::max(1, posture->events_size() / 4);
    posture->mutable_events()->DeleteSubrange(0, drop);
  }
  size_t dropped = events_before - static_cast<size_t>(posture->events_size());
  if (dropped > 0) {
    posture->set_events_dropped(posture->events_dropped() + dropped);
    AddProbeError(posture, kReportProbe, "TRUNCATED",
                  absl::StrCat(dropped, " events left out to stay under ", max_bytes, " bytes"));
  }
  if (report->ByteSizeLong() > max_bytes && posture->open_files_size() > 0) {
    size_t n = static_cast<size_t>(posture->open_files_size());
    posture->clear_open_files();
    AddProbeError(posture, kReportProbe, "TRUNCATED",
                  absl::StrCat(n, " open files left out to stay under ", max_bytes, " bytes"));
  }
  return report->ByteSizeLong() <= max_bytes;
}

// What the acked_digest file holds: the posture's digest (which leaves the benchmarks out) and a
// digest of the benchmarks, so that a new benchmark run still goes whole.
std::string AckKey(absl::string_view posture_digest, const smbfleet::v1::Posture& posture) {
  smbfleet::v1::Posture benchmarks;
  *benchmarks.mutable_benchmarks() = posture.benchmarks();
  return absl::StrCat(posture_digest, " ", Sha256Hex(DeterministicBytes(benchmarks)));
}

constexpr char kAckedDigestFile[] = "/acked_digest";

absl::StatusOr<smbfleet::v1::ReportRequest> BuildReport(PostureSource& source,
                                                        const AgentConfig& config,
                                                        const std::string& reason,
                                                        const BenchmarkRun& benchmarks,
                                                        const HostInfoFn& host_info) {
  ASSIGN_OR_RETURN(smbfleet::v1::Posture posture, source.Collect());
  smbfleet::v1::ReportRequest report;
  report.set_report_id(NewReportId());
  report.set_reason(reason);
  *report.mutable_posture() = std::move(posture);
  auto* p = report.mutable_posture();
  auto* host = p->mutable_host();
  if (host->hostname().empty()) host->set_hostname(LocalHostName());
  host->set_agent_version(kVersion);
  for (const auto& [k, v] : config.labels) (*host->mutable_labels())[k] = v;
  if (!host->has_logical_cores()) {
    host->set_logical_cores(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (host_info) host_info(host);
  if (!p->has_collected_at()) {
    *p->mutable_collected_at() = google::protobuf::util::TimeUtil::GetCurrentTime();
  }
  if (p->benchmarks_size() == 0) {
    for (const auto& b : benchmarks.crypto) *p->add_benchmarks() = b;
  }
  if (p->compression_benchmarks_size() == 0) {
    for (const auto& b : benchmarks.compression) *p->add_compression_benchmarks() = b;
  }
  if (!p->has_memory_benchmark() && benchmarks.memory.has_measured_at()) {
    *p->mutable_memory_benchmark() = benchmarks.memory;
  }
  if (!FitReport(&report, config.max_report_bytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("posture of ", host->hostname(), " is ", report.ByteSizeLong(),
                     " bytes even without events and open files; limit ", config.max_report_bytes));
  }
  return report;
}

Agent::Agent(AgentConfig config, PostureSource* source, CollectorClient* client, Spool* spool,
             BenchmarkFn benchmark, HostInfoFn host_info, Clock* clock, uint64_t seed)
    : config_(std::move(config)),
      source_(source),
      client_(client),
      spool_(spool),
      benchmark_(std::move(benchmark)),
      host_info_(std::move(host_info)),
      clock_(clock),
      rng_(seed) {}

Agent::~Agent() {
  if (benchmark_run_.valid()) TakeBenchmark(benchmark_run_.get());
}

void Agent::set_change_executor(ChangeExecutor* executor) {
  changes_ = executor;
  if (changes_ != nullptr) changes_->set_on_changed([this] { Nudge("after_change"); });
}

// The benchmarks run at idle priority, and a busy host may hold them back for minutes: a run
// goes on a thread of its own, and a report waits for it at most benchmark_wait_, then goes
// without it (or with the last run); a later report takes it once it is done.
void Agent::RefreshBenchmark() {
  if (!benchmark_ || config_.benchmark_interval.count() == 0) return;
  if (!benchmark_run_.valid()) StartBenchmarkIfDue();
  if (!benchmark_run_.valid()) return;
  if (benchmark_run_.wait_for(benchmark_wait_) == std::future_status::ready) {
    TakeBenchmark(benchmark_run_.get());
  } else {
    Log()->info("benchmark still running after {} ms (host busy): the report goes without it",
                benchmark_wait_.count());
  }
}

void Agent::StartBenchmarkIfDue() {
  auto now = clock_->Now();
  const bool have = !last_benchmark_.crypto.empty() || !last_benchmark_.compression.empty();
  if (have && now < next_benchmark_) return;
  // The last run survives restarts, so that an agent restarted every hour still benchmarks
  // once per benchmark_interval.
  if (!have) {
    smbfleet::v1::Posture cached;
    auto bytes = ReadFile(BenchmarkCache(config_), 1 << 20);
    if (bytes.ok() && cached.ParseFromString(*bytes) &&
        (cached.benchmarks_size() > 0 || cached.compression_benchmarks_size() > 0)) {
      const google::protobuf::Timestamp& at = cached.benchmarks_size() > 0
                                                  ? cached.benchmarks(0).measured_at()
                                                  : cached.compression_benchmarks(0).measured_at();
      auto measured = std::chrono::system_clock::time_point(std::chrono::seconds(at.seconds()));
      auto age = std::chrono::system_clock::now() - measured;
      if (age >= std::chrono::seconds(0) && age < config_.benchmark_interval) {
        last_benchmark_.crypto.assign(cached.benchmarks().begin(), cached.benchmarks().end());
        last_benchmark_.compression.assign(cached.compression_benchmarks().begin(),
                                           cached.compression_benchmarks().end());
        last_benchmark_.memory = cached.memory_benchmark();
        next_benchmark_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    config_.benchmark_interval - age);
        return;
      }
    }
  }
  next_benchmark_ = now + config_.benchmark_interval;
  try {
    benchmark_run_ = std::async(std::launch::async, benchmark_);
  } catch (const std::system_error& e) {
    Log()->warn("benchmark not run: no thread for it: {}", e.what());
  }
}

void Agent::TakeBenchmark(absl::StatusOr<BenchmarkRun> result) {
  if (!result.ok()) {
    Log()->warn("benchmark failed: {}", LogSafe(result.status()));
    if (absl::IsDeadlineExceeded(result.status())) RunBenchmarkAgainSooner();
    return;
  }
  BenchmarkRun run = *std::move(result);
  // A part this run could not measure keeps its last measurement, which says when it was taken.
  if (run.compression.empty()) run.compression = std::move(last_benchmark_.compression);
  if (!run.memory.has_measured_at()) run.memory = last_benchmark_.memory;
  if (run.cut_short) RunBenchmarkAgainSooner();
  last_benchmark_ = std::move(run);
  release_due_ = true;
  Log()->info("benchmark: {} crypto and {} compression results, page fault {}",
              last_benchmark_.crypto.size(), last_benchmark_.compression.size(),
              last_benchmark_.memory.has_measured_at()
                  ? absl::StrFormat("%.2f us", last_benchmark_.memory.page_fault_seconds() * 1e6)
                  : std::string("not measured"));
  smbfleet::v1::Posture keep;
  for (const auto& b : last_benchmark_.crypto) *keep.add_benchmarks() = b;
  for (const auto& b : last_benchmark_.compression) *keep.add_compression_benchmarks() = b;
  if (last_benchmark_.memory.has_measured_at()) {
    *keep.mutable_memory_benchmark() = last_benchmark_.memory;
  }
  if (auto s = WriteFileAtomic(BenchmarkCache(config_), keep.SerializeAsString(), 0600); !s.ok()) {
    Log()->warn("cannot keep the benchmark result: {}", LogSafe(s));
  }
}

void Agent::RunBenchmarkAgainSooner() {
  const auto retry =
      std::min<std::chrono::milliseconds>(config_.benchmark_interval, kBenchmarkRetryWhenBusy);
  next_benchmark_ = std::min(next_benchmark_, clock_->Now() + retry);
  Log()->info("benchmark cut short (host busy): it runs again in {} min",
              std::chrono::duration_cast<std::chrono::minutes>(retry).count());
}

void Agent::SampleShares(smbfleet::v1::Posture* posture) {
  const CompressionSamplingConfig& sampling = config_.compression_sampling;
  if (!sampler_ || !sampling.enabled) return;
  const Clock::TimePoint now = clock_->Now();
  for (smbfleet::v1::Share& share : *posture->mutable_shares()) {
    const std::string name = absl::AsciiStrToLower(share.name());
    if (sampling.shares.count(name) == 0) continue;
    auto [it, added] = share_samples_.try_emplace(name);
    ShareSample& cached = it->second;
    if (added || cached.path != share.path() || now >= cached.next) {
      cached.path = share.path();
      cached.next = now + sampling.interval;
      if (share.path().empty()) {
        cached.sample = smbfleet::v1::CompressibilitySample();
        cached.sample.set_not_sampled_reason("path not known");
      } else {
        cached.sample = sampler_(share.path());
      }
      // The share's name only: neither its path nor anything under it reaches the log.
      Log()->info("compression sampling of share {}: {}", LogSafe(share.name()),
                  cached.sample.not_sampled_reason().empty()
                      ? absl::StrFormat("ratio %.2f over %d files", cached.sample.ratio(),
                                        cached.sample.files_sampled())
                      : LogSafe(cached.sample.not_sampled_reason()));
    }
    *share.mutable_compressibility() = cached.sample;
  }
}

absl::Status Agent::CollectAndSpool(const std::string& reason) {
  RefreshBenchmark();
  ASSIGN_OR_RETURN(smbfleet::v1::ReportRequest report,
                   BuildReport(*source_, config_, reason, last_benchmark_, host_info_));
  SampleShares(report.mutable_posture());
  if (counters_ != nullptr) {
    if (std::vector<std::string> errors = counters_->SamplingErrors(); !errors.empty()) {
      AddProbeError(
          report.mutable_posture(), kCountersProbe, "UNREADABLE",
          absl::StrCat("counters left absent from the samples: ", absl::StrJoin(errors, "; ")));
    }
  }
  Log()->info("collected posture from {}: {} shares, {} sessions, {} probe errors",
              source_->Describe(), report.posture().shares_size(), report.posture().sessions_size(),
              report.posture().probe_errors_size());
  const SpoolCounts counts = spool_->counts();
  AddSpoolCounts(report.mutable_posture(), counts);
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_report_ = clock_->Now();
  }
  // The spool logs a failed write itself, once per episode (a full disk fails every cycle).
  RETURN_IF_ERROR(spool_->Put(report));
  Log()->info("report {} spooled", LogSafe(report.report_id()));
  if (!counts.empty()) carried_counts_[report.report_id()] = counts;
  if (absl::Status s = source_->CommitCollected(); !s.ok()) {
    Log()->warn("report {} spooled, but its source did not record it: {}",
                LogSafe(report.report_id()), LogSafe(s));
  }
  return absl::OkStatus();
}

absl::Status Agent::Flush() {
  ASSIGN_OR_RETURN(std::vector<std::string> ids, spool_->List());
  // Reports dropped from the spool take their carried counts with them: those stay pending.
  for (auto it = carried_counts_.begin(); it != carried_counts_.end();) {
    it = std::find(ids.begin(), ids.end(), it->first) == ids.end() ? carried_counts_.erase(it)
                                                                   : std::next(it);
  }
  for (const auto& id : ids) {
    auto report = spool_->Get(id);
    if (absl::IsNotFound(report.status())) continue;  // dropped meanwhile
    if (!report.ok()) {
      // Torn, corrupt or unreadable: set aside, so that one bad file does not hold the others.
      Log()->error("{}; moved to {}/rejected", LogSafe(report.status()), config_.spool_dir);
      if (auto s = spool_->MoveCorrupt(id); !s.ok()) Log()->error("{}", LogSafe(s));
      continue;
    }
    bool digest_only = false;
    size_t sent_bytes = 0;
    auto response = Deliver(*report, &digest_only, &sent_bytes);
    if (!response.ok()) {
      if (IsPermanentReportError(response.status())) {
        Log()->error("collector refused report {} for good: {}; kept in {}/rejected", LogSafe(id),
                     LogSafe(response.status()), config_.spool_dir);
        if (auto s = spool_->Reject(id); !s.ok()) Log()->error("{}", LogSafe(s));
        continue;
      }
      return response.status();
    }
    // The size is the serialised request of the send that was answered (tests/bench reads it).
    Log()->info("report {} delivered as {}: {}{} ({} bytes)", LogSafe(id),
                LogSafe(response->host()),
                smbfleet::v1::ReportResponse::Outcome_Name(response->outcome()),
                digest_only ? " (digest only)" : "", sent_bytes);
    // A DUPLICATE too: the collector has this report, counts included, from an earlier send.
    if (auto carried = carried_counts_.find(id); carried != carried_counts_.end()) {
      spool_->Forget(carried->second);
      carried_counts_.erase(carried);
    }
    RETURN_IF_ERROR(spool_->Remove(id));
  }
  return absl::OkStatus();
}

absl::StatusOr<smbfleet::v1::ReportResponse> Agent::Deliver(
    const smbfleet::v1::ReportRequest& report, bool* digest_only, size_t* sent_bytes) {
  if (!acked_loaded_) {
    auto bytes = ReadFile(config_.spool_dir + kAckedDigestFile, 1024);
    if (bytes.ok()) acked_ = std::string(absl::StripAsciiWhitespace(*bytes));
    acked_loaded_ = true;
  }
  // Counters ride on whichever report goes next; they stay pending until one is acknowledged.
  const std::vector<smbfleet::v1::ChangeCounters> counters =
      counters_ != nullptr ? counters_->Due() : std::vector<smbfleet::v1::ChangeCounters>{};
  auto sent = [&](const absl::StatusOr<smbfleet::v1::ReportResponse>& response) {
    // A DUPLICATE was stored before, maybe without these counters: the next report takes them.
    if (response.ok() && !counters.empty() &&
        response->outcome() != smbfleet::v1::ReportResponse::OUTCOME_DUPLICATE &&
        response->outcome() != smbfleet::v1::ReportResponse::OUTCOME_SEND_FULL) {
      Log()->info("report {} carried the load counters of {} change(s)",
                  LogSafe(report.report_id()), counters.size());
      counters_->Delivered(counters);
    }
  };
  const std::string digest = PostureDigest(report.posture());
  const std::string key = AckKey(digest, report.posture());
  if (!acked_.empty() && key == acked_) {
    smbfleet::v1::ReportRequest brief;
    brief.set_report_id(report.report_id());
    brief.set_reason(report.reason());
    brief.set_posture_digest(digest);
    if (report.posture().has_collected_at()) {
      *brief.mutable_collected_at() = report.posture().collected_at();
    }
    for (const auto& c : counters) *brief.add_change_counters() = c;
    *sent_bytes = brief.ByteSizeLong();
    auto response = client_->Report(brief);
    if (response.ok() && response->outcome() != smbfleet::v1::ReportResponse::OUTCOME_SEND_FULL) {
      *digest_only = true;
      sent(response);
      return response;
    }
    if (!response.ok() && !IsPermanentReportError(response.status())) return response;
    if (!response.ok()) {
      // A collector that no longer takes digest-only reports (an older one came back): the
      // report itself is fine, so it goes whole, and so do the next ones.
      Log()->warn("collector refused digest-only report {}: {}; sending it whole",
                  LogSafe(report.report_id()), LogSafe(response.status()));
      SetAcked("");
    } else {
      Log()->debug("collector asks for the posture of report {}", LogSafe(report.report_id()));
    }
  }
  absl::StatusOr<smbfleet::v1::ReportResponse> response;
  if (counters.empty()) {
    *sent_bytes = report.ByteSizeLong();
    response = client_->Report(report);
  } else {
    smbfleet::v1::ReportRequest with_counters = report;
    for (const auto& c : counters) *with_counters.add_change_counters() = c;
    *sent_bytes = with_counters.ByteSizeLong();
    response = client_->Report(with_counters);
  }
  if (response.ok()) SetAcked(response->digest_reports() ? key : "");
  sent(response);
  return response;
}

void Agent::SetAcked(const std::string& key) {
  if (key == acked_) return;
  acked_ = key;
  const std::string path = config_.spool_dir + kAckedDigestFile;
  // Lost on a failed write: the next report then goes whole, which is always safe.
  absl::Status s = key.empty() ? RemoveFile(path) : WriteFileDurably(path, key + "\n", 0600);
  if (!s.ok()) Log()->warn("{}", LogSafe(s));
}

absl::Status Agent::RunOnce(const std::string& reason) {
  RETURN_IF_ERROR(CollectAndSpool(reason));
  return Flush();
}

void Agent::set_counter_windows(CounterWindows* windows) {
  counters_ = windows;
  if (counters_ != nullptr) counters_->set_on_filled([this] { Nudge("change_counters"); });
}

void Agent::Nudge(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    nudge_reason_ = reason.empty() ? "nudge" : reason;
  }
  cv_.notify_all();
}

bool Agent::CollectorNudge(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (last_report_.has_value() && clock_->Now() - *last_report_ < config_.min_nudge_interval) {
      auto ago =
          std::chrono::duration_cast<std::chrono::milliseconds>(clock_->Now() - *last_report_);
      Log()->debug(
          "report request ignored: the last report is {} ms old (min_nudge_interval {} ms)",
          ago.count(), config_.min_nudge_interval.count());
      return false;
    }
  }
  Nudge(reason);
  return true;
}

void Agent::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

bool Agent::Stopped() {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

bool Agent::WaitUntil(Clock::TimePoint deadline, std::string* nudge) {
  std::unique_lock<std::mutex> lock(mu_);
  clock_->WaitUntil(lock, cv_, deadline, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return stopped_ || !nudge_reason_.empty();
  });
  if (stopped_) return false;
  nudge->clear();
  std::swap(*nudge, nudge_reason_);
  return true;
}

void Agent::WatchLoop(uint64_t seed) {
  Backoff backoff(std::chrono::seconds(1), config_.max_backoff, seed);
  while (!Stopped()) {
    auto started = clock_->Now();
    smbfleet::v1::WatchRequest request;
    request.set_agent_version(kVersion);
    if (changes_ != nullptr) {
      for (const std::string& id : changes_->CompletedChangeIds()) {
        request.add_completed_change_ids(id);
      }
    }
    absl::Status s = client_->Watch(request, [this](const smbfleet::v1::WatchResponse& m) {
      if (m.has_report_now()) {
        Log()->info("collector asks for a report: {}", LogSafe(m.report_now().reason()));
        CollectorNudge("nudge");
      } else if (m.has_approver_set()) {
        // Before any order that follows on the stream, so that the order is checked against it.
        if (trust_ == nullptr) return;
        absl::Status s = trust_->Accept(m.approver_set());
        if (!s.ok()) {
          Log()->log(absl::IsFailedPrecondition(s) ? spdlog::level::debug : spdlog::level::warn,
                     "approver set from the collector not taken: {}", LogSafe(s));
        }
      } else if (m.has_change_order()) {
        if (changes_ == nullptr) {
          Log()->warn("change {} ignored: this agent takes no change orders",
                      LogSafe(m.change_order().change_id()));
        } else {
          changes_->Submit(m.change_order());
        }
      }
    });
    if (Stopped()) break;
    // A stream that stayed up a while was healthy: start the backoff over.
    if (clock_->Now() - started > std::chrono::minutes(1)) backoff.Reset();
    auto wait = backoff.Next();
    Log()->info("watch stream ended ({}); reconnecting in {} ms", LogSafe(s), wait.count());
    std::unique_lock<std::mutex> lock(mu_);
    clock_->WaitUntil(lock, cv_, clock_->Now() + wait,
                      [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return stopped_; });
  }
}

void Agent::Run() {
  std::thread changes;
  if (changes_ != nullptr) changes = std::thread([this] { changes_->Run(); });
  std::thread watch([this, seed = rng_()] { WatchLoop(seed); });
  Backoff retry(std::chrono::seconds(2), config_.max_backoff, rng_());
  std::uniform_int_distribution<int64_t> first(0, std::max<int64_t>(0, config_.splay.count()));
  auto next = clock_->Now() + std::chrono::milliseconds(first(rng_));
  std::string reason = "startup";
  bool pending_delivery = !spool_->List().value_or(std::vector<std::string>{}).empty();
  while (true) {
    auto deadline = pending_delivery ? std::min(next, clock_->Now() + retry.Next()) : next;
    std::string nudged;
    if (!WaitUntil(deadline, &nudged)) break;
    bool scheduled = clock_->Now() >= next;
    const bool collect = !nudged.empty() || scheduled;
    if (collect) {
      absl::Status s = CollectAndSpool(nudged.empty() ? reason : nudged);
      if (!s.ok() && !spool_->write_failing()) Log()->error("collection failed: {}", LogSafe(s));
      if (scheduled) {
        next = clock_->Now() + SplayedInterval(config_.interval, config_.splay, rng_);
        reason = "schedule";
      }
    }
    absl::Status delivered = Flush();
    pending_delivery = !delivered.ok();
    if (delivered.ok()) {
      retry.Reset();
      if (collect && release_due_) {
        if (release_memory_) release_memory_();
        release_due_ = false;
      }
    } else {
      Log()->warn("collector unreachable, reports stay spooled (next try within {} ms): {}",
                  retry.Ceiling().count(), LogSafe(delivered));
    }
  }
  client_->CancelWatch();
  watch.join();
  if (changes_ != nullptr) {
    changes_->Stop();
    changes.join();
  }
}

}  // namespace smbfleet::agent

// smbfleet-agent: reports this host's SMB posture to the collector.
//
//   smbfleet-agent run --config FILE [--once]
//   smbfleet-agent enroll --config FILE
//   smbfleet-agent collect --once --source=SOURCE [--format=json|text]
//   smbfleet-agent bench [--format=json|text]
//   smbfleet-agent version
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "agent/bench/compression_bench.h"
#include "agent/bench/cpu_features.h"
#include "agent/bench/crypto_bench.h"
#include "agent/bench/memory_bench.h"
#include "agent/bench/share_sampler.h"
#include "agent/core/agent.h"
#include "agent/core/agent_config.h"
#include "agent/core/approver_trust.h"
#include "agent/core/change_executor.h"
#include "agent/core/command_runner.h"
#include "agent/core/counter_sampler.h"
#include "agent/core/counter_windows.h"
#include "agent/core/enrollment.h"
#include "agent/core/spool.h"
#include "agent/core/transport.h"
#include "agent/platform/platform.h"
#include "agent/sources.h"
#include "common/approval_signing.h"
#include "common/files.h"
#include "common/json.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/tls.h"
#include "common/version.h"

namespace smbfleet::agent {
namespace {

constexpr char kUsage[] =
    "usage:\n"
    "  smbfleet-agent run --config FILE [--once]\n"
    "  smbfleet-agent enroll --config FILE\n"
    "  smbfleet-agent collect --once --source=SOURCE [--format=json|text]\n"
    "      SOURCE: samba, samba:SMB_CONF, windows, windows-capture:DIR\n"
    "  smbfleet-agent bench [--format=json|text]\n"
    "  smbfleet-agent service install --config FILE | uninstall | start | stop   (Windows)\n"
    "  smbfleet-agent version\n";

struct Flags {
  std::string config, source, format = "text";
  bool once = false;
  std::vector<std::string> unknown;
};

Flags ParseFlags(const std::vector<std::string>& args) {
  Flags f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& name, std::string* out) {
      if (a == "--" + name && i + 1 < args.size()) {
        *out = args[++i];
        return true;
      }
      if (absl::StartsWith(a, "--" + name + "=")) {
        *out = a.substr(name.size() + 3);
        return true;
      }
      return false;
    };
    if (value("config", &f.config) || value("source", &f.source) || value("format", &f.format)) {
      continue;
    }
    if (a == "--once") {
      f.once = true;
      continue;
    }
    f.unknown.push_back(a);
  }
  return f;
}

int Usage(const std::string& problem) {
  if (!problem.empty()) std::cerr << "smbfleet-agent: " << problem << "\n";
  std::cerr << kUsage;
  return 2;
}

int Fail(const absl::Status& s) {
  std::cerr << "smbfleet-agent: " << s.message() << "\n";
  return 1;
}

// The agent's benchmark budget, 1.5 s of wall clock at idle priority: 1 s for the 42 crypto
// cells, 0.5 s for the 6 compression cells (each bench may overrun its share as its header
// says); then the cost of a page fault (96 MiB of fresh pages: 0.03-0.1 s where a fault costs
// 1 us, about 0.3 s where it costs 13). A failed compression or page-fault run leaves its
// figures out (the agent reports their last measurement; a busy host's run is cut short and
// runs again within the hour); a failed crypto run fails the whole.
absl::StatusOr<BenchmarkRun> Benchmark() {
  BenchmarkRun run;
  bench::BenchOptions crypto;
  crypto.budget = std::chrono::milliseconds(1000);
  ASSIGN_OR_RETURN(run.crypto, bench::RunCryptoBenchmark(crypto));
  bench::CompressionBenchOptions compression;
  compression.budget = std::chrono::milliseconds(500);
  auto rows = bench::RunCompressionBenchmark(compression);
  if (rows.ok()) {
    run.compression = *std::move(rows);
  } else {
    Logger("agent")->warn("compression benchmark failed: {}", LogSafe(rows.status()));
    run.cut_short = absl::IsDeadlineExceeded(rows.status());
  }
  auto memory = bench::RunPageFaultBenchmark(bench::MemoryBenchOptions());
  if (memory.ok()) {
    run.memory = *std::move(memory);
  } else if (memory.status().code() != absl::StatusCode::kUnimplemented) {
    Logger("agent")->warn("page-fault benchmark failed: {}", LogSafe(memory.status()));
    run.cut_short = run.cut_short || absl::IsDeadlineExceeded(memory.status());
  }
  platform::ReleaseFreeHeap();  // its buffers, and what loading wimlib allocated
  return run;
}

void HostInfo(smbfleet::v1::HostInfo* host) {
  if (!host->has_cpu()) *host->mutable_cpu() = bench::DetectCpuFeatures();
}

int Collect(const Flags& flags) {
  if (!flags.once) return Usage("collect needs --once");
  if (flags.source.empty()) return Usage("collect needs --source=SOURCE");
  auto runner = platform::NewCommandRunner();
  SourceContext context;
  context.runner = runner.get();
  auto source = MakeSource(flags.source, context);
  if (!source.ok()) return Fail(source.status());
  AgentConfig config;  // no collector: defaults for labels and size limits
  config.max_report_bytes = 256 << 20;
  auto report = BuildReport(**source, config, "collect", {}, HostInfo);
  if (!report.ok()) return Fail(report.status());
  if (flags.format == "json") {
    auto json = ToJson(report->posture());
    if (!json.ok()) return Fail(json.status());
    std::cout << *json;
  } else {
    const auto& p = report->posture();
    std::cout << "host " << p.host().hostname() << " ("
              << smbfleet::v1::Platform_Name(p.host().platform()) << "): " << p.shares_size()
              << " shares, " << p.sessions_size() << " sessions, " << p.connections_size()
              << " client connections, " << p.events_size() << " events, " << p.probe_errors_size()
              << " probe errors\n";
    for (const auto& e : p.probe_errors()) {
      std::cout << "  probe error " << e.probe() << ": " << e.code() << " " << e.message() << "\n";
    }
    std::cout << "(use --format=json for the whole posture)\n";
  }
  return 0;
}

int Bench(const Flags& flags) {
  auto results = Benchmark();
  if (!results.ok()) return Fail(results.status());
  smbfleet::v1::Posture p;
  *p.mutable_host()->mutable_cpu() = bench::DetectCpuFeatures();
  for (auto& b : results->crypto) *p.add_benchmarks() = b;
  for (auto& b : results->compression) *p.add_compression_benchmarks() = b;
  if (results->memory.has_measured_at()) *p.mutable_memory_benchmark() = results->memory;
  if (flags.format == "json") {
    auto json = ToJson(p);
    if (!json.ok()) return Fail(json.status());
    std::cout << *json;
    return 0;
  }
  for (const auto& b : p.benchmarks()) {
    std::cout << smbfleet::v1::CryptoAlgorithm_Name(b.algorithm()) << "\t" << b.buffer_bytes()
              << " B\t" << b.threads() << " thread(s)\t"
              << static_cast<int64_t>(b.bytes_per_second() / 1e6) << " MB/s\n";
  }
  for (const auto& b : p.compression_benchmarks()) {
    std::cout << smbfleet::v1::CompressionAlgorithm_Name(b.algorithm()) << "\t" << b.corpus()
              << "\t" << b.threads() << " thread(s)\tcompress "
              << static_cast<int64_t>(b.compress_bytes_per_second() / 1e6) << " MB/s\tdecompress "
              << static_cast<int64_t>(b.decompress_bytes_per_second() / 1e6) << " MB/s\tratio "
              << absl::StrFormat("%.2f", b.ratio()) << "\n";
  }
  if (p.has_memory_benchmark()) {
    std::cout << "page fault\t"
              << absl::StrFormat("%.2f us", p.memory_benchmark().page_fault_seconds() * 1e6) << "\t"
              << p.memory_benchmark().faults() << " faults of " << p.memory_benchmark().page_bytes()
              << " B pages\n";
  }
  return 0;
}

// The host an order must name: this agent's certificate identity, as the collector sees it.
absl::StatusOr<std::string> OwnHostIdentity(const AgentConfig& config) {
  ASSIGN_OR_RETURN(std::string pem, ReadFile(config.tls.cert, 1 << 20));
  ASSIGN_OR_RETURN(PeerIdentity id, IdentityFromPem(pem));
  return id.name;  // the same SAN-else-CN, lower case, the collector reads
}

int Enroll(const Flags& flags) {
  if (flags.config.empty()) return Usage("enroll needs --config FILE");
  auto config = LoadAgentConfig(flags.config);
  if (!config.ok()) return Fail(config.status());
  if (auto s = SetLogLevel(config->log_level); !s.ok()) return Fail(s);
  auto host = EnrollNow(*config);
  if (!host.ok()) return Fail(host.status());
  std::cout << "enrolled as " << *host << ": certificate " << config->tls.cert << ", key "
            << config->tls.key << "\n";
  return 0;
}

// Renews an enrolled agent's certificate at 2/3 of its lifetime and moves the client onto it,
// until stopped. A failed renewal is tried again every few minutes.
class Renewer {
 public:
  Renewer(const AgentConfig& config, GrpcCollectorClient* client)
      : config_(config), client_(client) {}

  void Start() {
    thread_ = std::thread([this] { Loop(); });
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    auto log = Logger("agent");
    absl::Time retry_at = absl::InfinitePast();
    while (true) {
      absl::StatusOr<absl::Time> due = RenewalDue(config_);
      absl::Time next = absl::Now() + absl::Hours(1);
      if (due.ok()) next = std::max(std::min(next, *due), retry_at);
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, absl::ToChronoSeconds(std::max(next - absl::Now(), absl::Seconds(1))),
                     [this] { return stopped_; });
        if (stopped_) return;
      }
      if (!due.ok() || absl::Now() < *due || absl::Now() < retry_at) continue;
      absl::StatusOr<absl::Time> renewed = RenewNow(config_);
      if (!renewed.ok()) {
        log->warn("certificate renewal failed, trying again in 5 minutes: {}",
                  LogSafe(renewed.status()));
        retry_at = absl::Now() + absl::Minutes(5);
        continue;
      }
      if (absl::Status s = client_->Reload(config_); !s.ok()) {
        log->error("renewed, but the new certificate does not load: {}", LogSafe(s));
      }
    }
  }

  const AgentConfig& config_;
  GrpcCollectorClient* client_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::thread thread_;
};

int RunService(const Flags& flags) {
  if (flags.config.empty()) return Usage("run needs --config FILE");
  auto config = LoadAgentConfig(flags.config);
  if (!config.ok()) return Fail(config.status());
  if (auto s = SetLogLevel(config->log_level); !s.ok()) return Fail(s);
  auto log = Logger("agent");
  if (NeedsEnrollment(*config)) {
    log->info("no certificate at {} yet: enrolling", config->tls.cert);
    auto host = EnrollNow(*config);
    if (!host.ok()) return Fail(host.status());
  }
  auto runner = platform::NewCommandRunner();
  SourceContext context;
  context.runner = runner.get();
  context.tool_env = config->tool_env;
  context.state_dir = config->spool_dir + "/state";
  auto source = MakeSource(config->source, context);
  if (!source.ok()) return Fail(source.status());
  Spool spool(config->spool_dir, SpoolLimitsOf(*config));
  if (auto s = spool.Open(); !s.ok()) return Fail(s);
  auto client = GrpcCollectorClient::Create(*config);
  if (!client.ok()) return Fail(client.status());
  Agent agent(*config, source->get(), client->get(), &spool, Benchmark, HostInfo);
  agent.set_release_memory([log] {
    if (absl::Status s = platform::ReleaseProgramPages(); !s.ok()) {
      log->debug("resident program pages kept: {}", LogSafe(s));
    }
  });

  ChangeExecutorOptions change_options;
  change_options.changes = config->changes;
  change_options.ack_max_backoff = config->max_backoff;
  if (auto s = MakeDirs(config->changes.journal_dir, 0700); !s.ok()) return Fail(s);
  ApproverTrust trust(config->trust, config->changes.journal_dir + "/approver-set.pb");
  if (auto s = trust.Open(); !s.ok()) return Fail(s);
  change_options.trust = &trust;
  agent.set_approver_trust(&trust);
  if (const CompressionSamplingConfig& sampling = config->compression_sampling; sampling.enabled) {
    bench::SamplingLimits limits;
    limits.max_files = sampling.max_files;
    limits.max_bytes_per_file = sampling.max_bytes_per_file;
    limits.max_bytes = sampling.max_bytes;
    agent.set_share_sampler(
        [limits](const std::string& path) { return bench::SampleCompressibility(path, limits); });
    log->info("compression sampling of {} share(s), at most {} files and {} bytes each",
              sampling.shares.size(), sampling.max_files, sampling.max_bytes);
  }
  if (auto host = OwnHostIdentity(*config); host.ok()) {
    change_options.host = *host;
  } else {
    log->warn("change orders will be refused: this agent's host identity is unknown ({})",
              std::string(host.status().message()));
  }
  // Load counters around changes: sampled on a thread of their own, cut into windows for acks
  // and reports (docs/agent-changes.md "Counters around a change").
  std::unique_ptr<CounterSource> counter_source;
  std::unique_ptr<CounterSampler> sampler;
  std::unique_ptr<CounterWindows> counter_windows;
  if (const CountersConfig& counters = config->changes.counters; counters.enabled) {
    // `run --once` takes no samples: it only sends the after-windows already due.
    if (!flags.once) counter_source = platform::NewCounterSource();
    sampler =
        std::make_unique<CounterSampler>(counter_source.get(), counters.interval, counters.window);
    counter_windows = std::make_unique<CounterWindows>(config->changes.journal_dir, sampler.get());
    if (auto s = counter_windows->Open(); !s.ok()) return Fail(s);
    sampler->set_on_sample([w = counter_windows.get()] { w->Tick(); });
    change_options.counters = counter_windows.get();
    agent.set_counter_windows(counter_windows.get());
    log->info("load counters around changes: every {} s, windows of {} s",
              counters.interval.count() / 1000, counters.window.count() / 1000);
  }
  auto crash = CrashPointFromEnv();  // test only, see docs/agent-changes.md
  if (!crash.ok()) return Fail(crash.status());
  change_options.crash_after = *crash;
  change_options.crash_exits = true;
  auto applier = MakeApplier(config->source, context);
  if (!applier.ok()) change_options.no_applier_reason = std::string(applier.status().message());
  ChangeExecutor changes(change_options, applier.ok() ? applier->get() : nullptr, client->get());
  if (auto s = changes.Open(); !s.ok()) return Fail(s);
  agent.set_change_executor(&changes);
  log->info("change orders: {} (journal {})",
            config->changes.enforce
                ? absl::StrCat("enforced for ", absl::StrJoin(config->changes.allow, ", "))
                : std::string("refused (changes.enforce is false)"),
            config->changes.journal_dir);
  log->info(
      "approvals: {} pinned approver key(s), {}, at least {} signature(s) per order",
      config->trust.approvers.size(),
      config->trust.root_public_key.empty()
          ? std::string("no approver-set root")
          : absl::StrCat("approver sets signed by root ", KeyId(config->trust.root_public_key),
                         ", held serial ", trust.serial()),
      config->trust.min_approvals);
  log->info("smbfleet-agent {} reporting {} to {}", kVersion, (*source)->Describe(),
            config->collector_address);
  if (flags.once) {
    changes.Drain();  // acks a crash left undelivered
    absl::Status s = agent.RunOnce("once");
    if (!s.ok()) return Fail(s);
    return 0;
  }
  if (sampler) sampler->Start();
  Renewer renewer(*config, client->get());
  const bool renews = !config->enroll.token_file.empty();
  if (renews) renewer.Start();
  int code = platform::RunUntilStopped(
      [&agent] {
        agent.Run();
        return 0;
      },
      [&agent] { agent.Stop(); });
  if (renews) renewer.Stop();
  if (sampler) sampler->Stop();
  log->info("stopped");
  return code;
}

}  // namespace
}  // namespace smbfleet::agent

int main(int argc, char** argv) {
  using namespace smbfleet::agent;
  platform::LimitHeapArenas();  // before any thread starts
  platform::UseBinaryStdout();
  const std::vector<std::string> args = platform::Arguments(argc, argv);
  if (args.size() < 2) return Usage("no command given");
  std::string command = args[1];
  // `service ACTION [flags]`: the action is the one positional argument.
  std::string action;
  size_t first_flag = 2;
  if (command == "service") {
    if (args.size() < 3 || absl::StartsWith(args[2], "--")) {
      return Usage("service needs an action: install, uninstall, start or stop");
    }
    action = args[2];
    first_flag = 3;
  }
  Flags flags = ParseFlags(std::vector<std::string>(args.begin() + first_flag, args.end()));
  if (!flags.unknown.empty()) return Usage(absl::StrCat("unknown argument ", flags.unknown[0]));
  if (flags.format != "json" && flags.format != "text") {
    return Usage(absl::StrCat("--format must be json or text, got '", flags.format, "'"));
  }
  if (command == "run") return RunService(flags);
  if (command == "service") {
    absl::Status s = platform::ServiceCommand(action, flags.config);
    if (!s.ok()) return Fail(s);
    std::cout << "service " << action << ": done\n";
    return 0;
  }
  if (command == "enroll") return Enroll(flags);
  if (command == "collect") return Collect(flags);
  if (command == "bench") return Bench(flags);
  if (command == "version" || command == "--version") {
    std::cout << "smbfleet-agent " << smbfleet::kVersion << "\n";
    return 0;
  }
  if (command == "-h" || command == "--help" || command == "help") return Usage("");
  return Usage(absl::StrCat("unknown command '", command, "'"));
}

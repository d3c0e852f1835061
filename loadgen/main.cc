// smbfleet-loadgen: simulated agents over real mutual TLS (docs/loadgen.md).
#include <signal.h>
#include <sys/resource.h>

#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "loadgen/loadgen.h"

ABSL_FLAG(std::string, collector, "",
          "collector address, host:port, or several comma-separated (agent i starts on the "
          "i % n-th and moves on when it fails)");
ABSL_FLAG(std::string, server_name, "localhost", "name in the collector's certificate");
ABSL_FLAG(std::string, pki, "", "deploy/ca.sh folder: agents-ca.pem/.key issue, ca.pem verifies");
ABSL_FLAG(int, agents, 10, "simulated agents, each with its own certificate and channel");
ABSL_FLAG(int, first_agent, 0, "number of the first agent (names sim-00000 on)");
ABSL_FLAG(std::string, name_prefix, "sim-", "host name prefix of the simulated agents");
ABSL_FLAG(int64_t, reports, 100, "reports in all, round robin over the agents");
ABSL_FLAG(double, rate, 0, "reports made per second over all agents; 0: all at once");
ABSL_FLAG(bool, watch, false, "each agent holds a Watch stream (reconnecting with backoff)");
ABSL_FLAG(int, report_timeout_ms, 10000, "deadline of one Report call");
ABSL_FLAG(int, base_backoff_ms, 100, "first retry wait (full jitter, doubling)");
ABSL_FLAG(int, max_backoff_ms, 2000, "cap of the retry and reconnect waits");
ABSL_FLAG(int, curve_ms, 100, "sampling interval of the connected/acked curve");
ABSL_FLAG(int, max_seconds, 120, "stop after this long, acked or not");
ABSL_FLAG(std::string, summary, "", "write the JSON summary here (also printed on stdout)");
ABSL_FLAG(std::string, acked_ids, "", "write the acked report ids here, one a line");
ABSL_FLAG(std::string, status_file, "", "rewritten every 200 ms: connected, acked, produced");
ABSL_FLAG(uint64_t, seed, 1, "seed of the postures' variation and the backoff jitter");
ABSL_FLAG(std::string, source_addresses, "auto",
          "on: each agent connects from its own 127.x address; auto: on for a 127.x collector");
ABSL_FLAG(double, connect_rate, 0, "agents opening their first stream per second; 0: all at once");
ABSL_FLAG(double, change_rate, 1, "share of reports whose posture changes (others: unchanged)");
ABSL_FLAG(uint64_t, settings_every, 1,
          "a changed posture's server settings change every this many changes (sessions and "
          "events every time)");
ABSL_FLAG(uint64_t, session_reports, 1,
          "a session lasts this many changed postures (1: every session new each time; N: 1/N "
          "of the sessions new each time, the others with new open-file counts and ages)");
ABSL_FLAG(double, ack_failure_share, 0, "share of change orders acked FAILED");
ABSL_FLAG(bool, hold_reports, false, "make no reports until SIGUSR1");

namespace {

std::atomic<bool>* g_stop = nullptr;
std::atomic<bool>* g_release = nullptr;

void OnSignal(int) {
  if (g_stop != nullptr) *g_stop = true;
}

void OnRelease(int) {
  if (g_release != nullptr) *g_release = true;
}

// Every agent holds a socket, and the collector on this machine one per agent too: open files
// go up to the hard limit, with a warning when that cannot be enough.
void RaiseOpenFiles(int agents) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  limit.rlim_cur = limit.rlim_max;
  (void)setrlimit(RLIMIT_NOFILE, &limit);
  const auto need = static_cast<rlim_t>(agents) * 2;
  if (limit.rlim_max != RLIM_INFINITY && need > limit.rlim_max) {
    std::cerr << "smbfleet-loadgen: warning: " << agents << " agents want about " << need
              << " open files (theirs and the collector's); the hard limit is " << limit.rlim_max
              << ". Raise it: `ulimit -Hn " << need << "` as root, or LimitNOFILE= in the systemd "
              << "unit, or nofile in /etc/security/limits.conf\n";
  }
}

int Fail(const absl::Status& status) {
  std::cerr << "smbfleet-loadgen: " << status.message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "smbfleet-loadgen --collector HOST:PORT[,HOST:PORT...] --pki DIR [--agents N] [--reports N] "
      "[--watch]");
  absl::ParseCommandLine(argc, argv);
  using smbfleet::loadgen::LoadGen;
  using smbfleet::loadgen::LoadGenOptions;
  LoadGenOptions o;
  o.collector = absl::GetFlag(FLAGS_collector);
  const std::string pki = absl::GetFlag(FLAGS_pki);
  if (o.collector.empty() || pki.empty()) {
    std::cerr << "smbfleet-loadgen: --collector and --pki are required\n";
    return 2;
  }
  o.server_name = absl::GetFlag(FLAGS_server_name);
  o.ca_cert = absl::StrCat(pki, "/agents-ca.pem");
  o.ca_key = absl::StrCat(pki, "/agents-ca.key");
  o.trust = absl::StrCat(pki, "/ca.pem");
  o.agents = absl::GetFlag(FLAGS_agents);
  o.first_agent = absl::GetFlag(FLAGS_first_agent);
  o.name_prefix = absl::GetFlag(FLAGS_name_prefix);
  o.reports = absl::GetFlag(FLAGS_reports);
  o.rate = absl::GetFlag(FLAGS_rate);
  o.watch = absl::GetFlag(FLAGS_watch);
  o.report_timeout = std::chrono::milliseconds(absl::GetFlag(FLAGS_report_timeout_ms));
  o.base_backoff = std::chrono::milliseconds(absl::GetFlag(FLAGS_base_backoff_ms));
  o.max_backoff = std::chrono::milliseconds(absl::GetFlag(FLAGS_max_backoff_ms));
  o.curve_interval = std::chrono::milliseconds(absl::GetFlag(FLAGS_curve_ms));
  o.max_seconds = std::chrono::seconds(absl::GetFlag(FLAGS_max_seconds));
  o.acked_ids_file = absl::GetFlag(FLAGS_acked_ids);
  o.status_file = absl::GetFlag(FLAGS_status_file);
  o.seed = absl::GetFlag(FLAGS_seed);
  const std::string source = absl::GetFlag(FLAGS_source_addresses);
  if (source == "on") {
    o.source_addresses = true;
  } else if (source == "auto") {
    o.source_addresses = o.collector.rfind("127.", 0) == 0;
  } else if (source != "off") {
    std::cerr << "smbfleet-loadgen: --source_addresses '" << source << "': on, off or auto\n";
    return 2;
  }
  o.connect_rate = absl::GetFlag(FLAGS_connect_rate);
  o.change_rate = absl::GetFlag(FLAGS_change_rate);
  o.settings_every = absl::GetFlag(FLAGS_settings_every);
  o.session_reports = absl::GetFlag(FLAGS_session_reports);
  o.ack_failure_share = absl::GetFlag(FLAGS_ack_failure_share);
  o.hold_reports = absl::GetFlag(FLAGS_hold_reports);
  if (o.curve_interval.count() < 1 || o.max_backoff.count() < 1 || o.base_backoff.count() < 1 ||
      o.report_timeout.count() < 1 || o.max_seconds.count() < 1) {
    std::cerr << "smbfleet-loadgen: --curve_ms, --*_backoff_ms, --report_timeout_ms and "
                 "--max_seconds must be positive\n";
    return 2;
  }

  RaiseOpenFiles(o.agents);
  LoadGen gen(o);
  // Before Setup, which may take long: a release sent early is kept, not fatal.
  g_release = &gen.release_flag();
  struct sigaction release {};
  release.sa_handler = OnRelease;
  sigaction(SIGUSR1, &release, nullptr);
  if (absl::Status s = gen.Setup(); !s.ok()) return Fail(s);
  g_stop = &gen.stop_flag();
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  absl::Status run = gen.Run();
  const std::string summary = gen.Summary().dump();
  if (!absl::GetFlag(FLAGS_summary).empty()) {
    if (absl::Status s = smbfleet::WriteFileAtomic(absl::GetFlag(FLAGS_summary), summary + "\n");
        !s.ok()) {
      return Fail(s);
    }
  }
  std::cout << summary << std::endl;
  if (!run.ok()) {
    std::cerr << "smbfleet-loadgen: " << run.message() << "\n";
    return 3;
  }
  return 0;
}

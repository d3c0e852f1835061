// smbfleet-loadgen: simulated agents over real mutual TLS (docs/loadgen.md).
#include <signal.h>

#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "loadgen/loadgen.h"

ABSL_FLAG(std::string, collector, "", "collector address, host:port");
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

namespace {

std::atomic<bool>* g_stop = nullptr;

void OnSignal(int) {
  if (g_stop != nullptr) *g_stop = true;
}

int Fail(const absl::Status& status) {
  std::cerr << "smbfleet-loadgen: " << status.message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "smbfleet-loadgen --collector HOST:PORT --pki DIR [--agents N] [--reports N] [--watch]");
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
  if (o.curve_interval.count() < 1 || o.max_backoff.count() < 1 || o.base_backoff.count() < 1 ||
      o.report_timeout.count() < 1 || o.max_seconds.count() < 1) {
    std::cerr << "smbfleet-loadgen: --curve_ms, --*_backoff_ms, --report_timeout_ms and "
                 "--max_seconds must be positive\n";
    return 2;
  }

  LoadGen gen(o);
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

// smbfleet-collector --config FILE [--log_level LEVEL] [--port_file FILE]
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "collector/config.h"
#include "collector/server/startup.h"
#include "common/files.h"
#include "common/logging.h"

ABSL_FLAG(std::string, config, "", "collector configuration file (YAML)");
ABSL_FLAG(std::string, log_level, "", "overrides log_level of the configuration");
ABSL_FLAG(std::string, port_file, "", "write the listening port to this file once serving");

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop = true; }

int Fail(const absl::Status& status) {
  std::cerr << "smbfleet-collector: " << status.message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("smbfleet-collector --config FILE");
  absl::ParseCommandLine(argc, argv);
  // The system's Abseil is built with the Mutex deadlock detector on: it records every lock
  // taken in a graph (5% of the collector's CPU on the report path). The tests keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  using namespace smbfleet;
  using namespace smbfleet::collector;
  const std::string config_file = absl::GetFlag(FLAGS_config);
  if (config_file.empty()) {
    std::cerr << "smbfleet-collector: --config FILE is required\n";
    return 2;
  }
  auto config = LoadCollectorConfig(config_file);
  if (!config.ok()) return Fail(config.status());
  std::string level =
      absl::GetFlag(FLAGS_log_level).empty() ? config->log_level : absl::GetFlag(FLAGS_log_level);
  if (auto s = SetLogLevel(level); !s.ok()) return Fail(s);
  auto log = Logger("collector");

  auto collector = StartFromConfig(*config);
  if (!collector.ok()) return Fail(collector.status());
  log->info("listening on {} (port {}), mutual TLS required", config->listen, (*collector)->port());
  if (!absl::GetFlag(FLAGS_port_file).empty()) {
    auto s =
        WriteFileAtomic(absl::GetFlag(FLAGS_port_file), absl::StrCat((*collector)->port(), "\n"));
    if (!s.ok()) return Fail(s);
  }

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto bound = config->shutdown_timeout;
  log->info("stopping: finishing the calls in flight for up to {} ms", bound.count());
  // Bounded even when the database is stuck: a call blocked in it past the deadline (the pool
  // cuts it only after database.statement_timeout) must not keep the process alive. Its report
  // was not acked, so the agent sends it again.
  std::thread([bound, log] {
    std::this_thread::sleep_for(bound + std::chrono::seconds(5));
    log->error("shutdown did not finish within shutdown_timeout + 5 s; exiting with calls running");
    log->flush();
    std::_Exit(1);
  }).detach();
  (*collector)->Shutdown();
  collector->reset();
  log->info("stopped");
  return 0;
}

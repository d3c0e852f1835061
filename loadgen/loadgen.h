#ifndef SMBFLEET_LOADGEN_LOADGEN_H_
#define SMBFLEET_LOADGEN_LOADGEN_H_

// smbfleet-loadgen: many simulated agents in one process, each a real gRPC client with its own
// certificate and mutual-TLS channel. Each keeps its reports until the collector acks them and
// retries transient failures with jittered backoff, as the real agent's spool does.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace smbfleet::loadgen {

struct LoadGenOptions {
  std::string collector;                  // host:port, or several comma-separated
  std::string server_name = "localhost";  // the name the collector's certificate carries
  std::string ca_cert;                    // issuing CA of agents (agents-ca.pem)
  std::string ca_key;                     // its key
  std::string trust;                      // root that verifies the collector (ca.pem)
  int agents = 10;
  int first_agent = 0;  // names run sim-<first> .. sim-<first+agents-1>
  std::string name_prefix = "sim-";
  int64_t reports = 100;  // total over all agents; 0 with watch: streams only
  double rate = 0;        // reports produced per second, 0 = all at once
  bool watch = false;     // each agent holds a Watch stream
  std::chrono::milliseconds report_timeout{10'000};
  std::chrono::milliseconds base_backoff{100};
  std::chrono::milliseconds max_backoff{2'000};
  std::chrono::milliseconds curve_interval{100};
  std::chrono::seconds max_seconds{120};
  std::string acked_ids_file;  // written at the end: one acked report id per line
  std::string status_file;     // rewritten while running: {"connected":..,"acked":..}
  uint64_t seed = 1;
  // Each agent binds its own loopback source address (127.1.0.1 upwards, see source_address.h),
  // so that more agents than one address has ephemeral ports can connect.
  bool source_addresses = false;
  double connect_rate = 0;       // agents opening their first Watch stream per second; 0: all
  double change_rate = 1;        // share of reports whose posture differs from the agent's last
  uint64_t settings_every = 1;   // a changed posture's settings change every this many changes
  uint64_t session_reports = 1;  // a session lasts this many postures (1: all new each time)
  double ack_failure_share = 0;  // share of change orders acked FAILED instead of APPLIED
  bool hold_reports = false;     // no reports until release_flag() is set (SIGUSR1 in main)
};

class LoadGen {
 public:
  explicit LoadGen(LoadGenOptions options);
  ~LoadGen();
  LoadGen(const LoadGen&) = delete;
  LoadGen& operator=(const LoadGen&) = delete;

  // Mints the agents' certificates and opens their channels.
  absl::Status Setup();
  // Runs until every report is acked (and, with watch, until Stop()), Stop() or max_seconds.
  // OK when every report was acked; DeadlineExceeded when time ran out first.
  absl::Status Run();
  // Safe from another thread (not from a signal handler: set the flag of stop_flag() there).
  void Stop() { stop_ = true; }
  std::atomic<bool>& stop_flag() { return stop_; }
  // With hold_reports: setting it starts the reports (safe from a signal handler).
  std::atomic<bool>& release_flag() { return release_; }

  // The figures: sent, acked, outcomes, retries, errors by code, reconnect times, change orders,
  // the report phase's rate, the curve.
  nlohmann::json Summary() const;

  struct State;  // the agents and figures, shared with the gRPC callbacks (loadgen.cc)

 private:
  LoadGenOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> release_{false};
  std::unique_ptr<State> state_;
};

}  // namespace smbfleet::loadgen

#endif  // SMBFLEET_LOADGEN_LOADGEN_H_

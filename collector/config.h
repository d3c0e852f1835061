#ifndef SMBFLEET_COLLECTOR_CONFIG_H_
#define SMBFLEET_COLLECTOR_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tls.h"

namespace smbfleet::collector {

// The change workflow (docs/collector.md "changes").
struct ChangesConfig {
  // A change targeting more hosts than this needs two approvers (so does one whose impact
  // names a client that would be refused).
  uint32_t two_approvers_above_hosts = 10;
  std::chrono::milliseconds lifetime{7 * 24 * 3'600'000};  // proposal to expiry
  std::chrono::milliseconds ack_timeout{15 * 60'000};      // an order's lifetime on the agent
  std::chrono::milliseconds tick{1'000};                   // the rollout scheduler's pass
};

// Which CA issues which kind of client certificate (docs/collector.md "identity"). Both empty
// (an old config): the kind is the certificate's first OU, with a warning at startup.
struct IdentityConfig {
  std::vector<std::string> agent_issuers;     // PEM CA certificate files, resolved
  std::vector<std::string> operator_issuers;  // PEM CA certificate files, resolved
  // How often a replica re-reads the revocations besides being told by NOTIFY.
  std::chrono::milliseconds revocation_poll{5'000};
};

// The issuing CA for agents that enroll with a token (docs/enrollment.md). No ca_cert: this
// collector does not issue, and agents bring certificates from the organisation's own PKI.
struct EnrollmentConfig {
  std::string ca_cert;  // PEM CA certificate (the agents CA), sent to agents as their chain
  std::string ca_key;   // its private key; refused when the group or others may read it
  std::chrono::milliseconds certificate_lifetime{7 * 24 * 3'600'000};
};

// The web console (docs/console.md). No `console:` section: no web server.
struct ConsoleConfig {
  bool enabled = false;
  std::string listen = "127.0.0.1:8443";
  std::string cert;  // PEM; empty: the collector's tls.cert
  std::string key;   // PEM; empty: the collector's tls.key
  std::chrono::milliseconds session_idle{30 * 60'000};
  std::chrono::milliseconds session_max{12 * 3'600'000};
};

// History kept by UTC day (docs/collector.md "History and retention"): postures, reports,
// events, compliance transitions and benchmarks.
struct HistoryConfig {
  // Days wholly older than this are dropped (0: history kept for ever). Whole days: a day is
  // the unit dropped.
  std::chrono::hours retention{90 * 24};
  uint32_t partitions_ahead = 3;                  // days made before they come
  std::chrono::milliseconds interval{3'600'000};  // between two passes of the history job
};

// How the collector bounds its use of PostgreSQL (docs/collector.md "Faults and bounds").
struct DatabaseConfig {
  // A call waits this long for a free pooled connection, then fails UNAVAILABLE "database busy".
  std::chrono::milliseconds acquire_timeout{5'000};
  std::chrono::milliseconds connect_timeout{5'000};     // libpq connect_timeout (whole seconds)
  std::chrono::milliseconds statement_timeout{30'000};  // set on every connection
  std::chrono::milliseconds keepalives_idle{30'000};    // TCP keepalives on every connection
  // At start the collector retries an unreachable database this long, then exits.
  std::chrono::milliseconds startup_timeout{60'000};
};

struct CollectorConfig {
  std::string listen = "127.0.0.1:7443";
  TlsFiles tls;
  // How often the certificate, key and CA files are re-read (`tls_reload`): renewed ones are
  // served without a restart.
  std::chrono::seconds tls_reload{60};
  std::string database_dsn;  // libpq connection string or URI
  uint32_t database_pool_size = 4;
  DatabaseConfig database;
  uint64_t max_report_bytes = 4 << 20;
  // Every agent RPC but Report (Watch, AckChange, Enroll, RenewCertificate): a request larger
  // is refused RESOURCE_EXHAUSTED (`limits.max_message_bytes`).
  uint64_t max_message_bytes = 64 << 10;
  // Reports and calls waiting for a store thread: at most this many bytes of requests
  // (`limits.max_queued_bytes`) besides the count; over it a call is answered UNAVAILABLE busy.
  uint64_t max_queued_bytes = 256ull << 20;
  uint32_t max_queued_calls = 10'000;
  // Digest-only reports stored together in one transaction, at most
  // (`limits.digest_batch_reports`).
  uint32_t digest_batch_reports = 512;
  // Reports with a posture stored together in one transaction, their evaluations written
  // together in another, at most (`limits.posture_batch_reports`).
  uint32_t posture_batch_reports = 32;
  // gRPC's memory for the transport (`limits.transport_memory`), and HTTP/2 streams one
  // connection may have open at once (`limits.max_streams_per_connection`).
  uint64_t transport_memory = 512ull << 20;
  uint32_t max_streams_per_connection = 16;
  // Per-connection buffers, which dominate the memory of an idle agent's connection
  // (docs/scaling.md): the largest TLS record the collector writes, whose buffer each connection
  // keeps (`limits.tls_frame_bytes`), and the size of a socket read
  // (`limits.tcp_read_chunk_bytes`).
  uint64_t tls_frame_bytes = 16384;
  uint64_t tcp_read_chunk_bytes = 8192;
  // SIGTERM/SIGINT: in-flight reports are finished for up to this long (`shutdown_timeout`).
  std::chrono::milliseconds shutdown_timeout{20'000};
  // RequestReport: one nudge per host per interval, and at most nudges_per_minute from one
  // person across the fleet (each costs a host a collection).
  std::chrono::milliseconds nudge_interval{60'000};
  uint32_t nudges_per_minute = 30;
  std::chrono::milliseconds keepalive_interval{60'000};
  std::chrono::milliseconds max_connection_age{6 * 3'600'000};
  uint32_t store_threads = 4;
  std::string log_level = "info";
  std::string policy_file;  // empty: no evaluation
  // Pages of hosts the re-evaluation of stored postures evaluates at once after a policy change
  // (`policy.reevaluate_threads`; 0: none, hosts wait for their next report).
  uint32_t reevaluate_threads = 2;
  ChangesConfig changes;
  // How often a replica re-reads the latest published approver set, so that a set published
  // through another replica reaches the agents connected here (`approver_sets.poll`; 0 = never).
  std::chrono::milliseconds approver_set_poll{5'000};
  IdentityConfig identity;
  EnrollmentConfig enrollment;
  ConsoleConfig console;
  HistoryConfig history;
  // A host not seen for this long is stale (the overview, ListHosts stale_only): twice the
  // agent's default report interval.
  std::chrono::milliseconds stale_after{2 * 3'600'000};
};

// Parses and validates; every problem is listed in the returned error, each with file:line.
absl::StatusOr<CollectorConfig> ParseCollectorConfig(const std::string& file,
                                                     const std::string& text);
absl::StatusOr<CollectorConfig> LoadCollectorConfig(const std::string& file);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_CONFIG_H_

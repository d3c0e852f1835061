#ifndef SMBFLEET_AGENT_CORE_AGENT_CONFIG_H_
#define SMBFLEET_AGENT_CORE_AGENT_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tls.h"

namespace smbfleet::agent {

// The host's own consent to change orders (`changes:` in the YAML). Orders for a setting that is
// not on `allow`, or any order while `enforce` is false, are acked REFUSED and nothing is touched.
// Sampling of the host's load around each applied change (`changes.counters:`; on by default):
// one sample every `interval`, the last `window` kept in memory for the ack's before-window, and
// the `window` after the apply sent with a later report (docs/agent-changes.md).
struct CountersConfig {
  bool enabled = true;
  std::chrono::milliseconds interval{15'000};
  std::chrono::milliseconds window{900'000};
};

struct ChangesConfig {
  bool enforce = false;
  std::set<std::string> allow;  // policy/settings.h names, e.g. "share.encryptData"
  std::string journal_dir;      // not in the YAML: "<spool.dir>-changes"
  CountersConfig counters;
};

// Whose approvals this host accepts (`trust:` in the YAML; docs/threat-model.md). An order is
// applied only with at least max(min_approvals, the order's approvals_required) valid signatures
// by distinct approvers, none of them the proposer. With no approver keys and no root, every
// order is refused.
struct TrustConfig {
  std::map<std::string, std::string> approvers;  // name -> raw Ed25519 public key (pinned)
  std::string root_public_key;  // raw key of the offline root that signs approver sets
  uint32_t min_approvals = 1;
};

// Enrollment with a token (`enroll:` in the YAML; docs/enrollment.md). When set, tls.cert and
// tls.key need not exist: the agent makes them by enrolling, then renews them itself.
struct EnrollConfig {
  std::string token_file;  // the enrollment token (set_<id>_<secret>); read, never logged
  std::string host;        // the host name to ask a certificate for (lower case)
};

// Optional share sampling (`compression_sampling:` in the YAML; off by default): how well the
// named shares' data compresses, from the first bytes of a few of their files, read at idle
// priority. Reports carry only the ratio and how much was sampled (Share.compressibility).
struct CompressionSamplingConfig {
  bool enabled = false;
  std::set<std::string> shares;  // share names, lower case (SMB share names ignore case)
  uint32_t max_files = 16;
  uint64_t max_bytes_per_file = 1 << 20;
  uint64_t max_bytes = 16 << 20;
  std::chrono::milliseconds interval{86'400'000};  // a share is sampled again after this
};

struct AgentConfig {
  // `collector.address`: each entry host:port (one, or several collectors on one database), and
  // the gRPC target the agent dials, made of them (collector_target.h).
  std::vector<std::string> collector_addresses;
  std::string collector_address;
  // TLS name to verify; empty = the host of the first address (required when the hosts differ).
  std::string collector_server_name;
  TlsFiles tls;
  std::string source = "samba";  // see DESIGN.md: samba[:SMB_CONF], windows, windows-capture:DIR
  std::map<std::string, std::string> labels;
  std::chrono::milliseconds interval{3'600'000};
  std::chrono::milliseconds splay{600'000};
  std::chrono::milliseconds benchmark_interval{86'400'000};  // 0 = never
  // A ReportNow from the collector this soon after the last report is ignored (the collector
  // limits nudges too; this holds even if it does not).
  std::chrono::milliseconds min_nudge_interval{30'000};
  std::chrono::milliseconds report_timeout{30'000};
  std::chrono::milliseconds max_backoff{300'000};
#ifdef _WIN32
  std::string spool_dir = "C:\\ProgramData\\smbfleet\\spool";
#else
  std::string spool_dir = "/var/lib/smbfleet/spool";
#endif
  uint32_t spool_max_reports = 200;
  uint64_t spool_max_bytes = uint64_t{256} << 20;           // report files together
  std::chrono::milliseconds spool_max_age{7 * 86'400'000};  // 0 = no limit
  uint32_t spool_max_rejected = 50;                         // files kept in <spool>/rejected
  uint64_t max_report_bytes = 4 << 20;
  std::string log_level = "info";
  // Environment for the platform's tools (e.g. NSS_WRAPPER_* for a private Samba).
  std::map<std::string, std::string> tool_env;
  ChangesConfig changes;
  TrustConfig trust;
  EnrollConfig enroll;
  CompressionSamplingConfig compression_sampling;
};

absl::StatusOr<AgentConfig> ParseAgentConfig(const std::string& file, const std::string& text);
absl::StatusOr<AgentConfig> LoadAgentConfig(const std::string& file);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_AGENT_CONFIG_H_

#ifndef SMBFLEET_AGENT_CORE_TCP_STATS_H_
#define SMBFLEET_AGENT_CORE_TCP_STATS_H_

// The kernel's view of the server's SMB connections (TCP, by local port: 445 and 139 unless the
// server listens elsewhere): round-trip times and retransmits per connection, for matching to the
// sessions a platform reports. Linux implements it with sock_diag
// (agent/platform/posix/sock_diag.h), Windows with TCP extended statistics
// (agent/platform/windows/tcp_estats.h); tests use a fake.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace smbfleet::agent {

// One TCP connection. Addresses are in inet_ntop form, IPv4-mapped IPv6 as plain IPv4. A value
// the kernel did not report (its tcp_info too short to hold the field) is absent, never 0.
struct TcpConnection {
  std::string local_address;
  uint16_t local_port = 0;
  std::string remote_address;
  uint16_t remote_port = 0;
  std::optional<uint32_t> rtt_us;       // smoothed round-trip time (tcpi_rtt)
  std::optional<uint32_t> rttvar_us;    // its mean deviation (tcpi_rttvar)
  std::optional<uint32_t> min_rtt_us;   // lowest round-trip time seen (tcpi_min_rtt)
  std::optional<uint32_t> retransmits;  // tcpi_total_retrans
  std::optional<uint64_t> delivery_rate_bytes_per_sec;  // tcpi_delivery_rate
  // Not OK when this connection's statistics could not be read (Windows reads them one
  // connection at a time): the values above are absent and the session it carries gets a probe
  // error saying why.
  absl::Status status;
};

class TcpStats {
 public:
  virtual ~TcpStats() = default;
  // Every connection whose local port is one of `local_ports`. An error (no permission, not
  // supported) means the values are unknown; an empty list means no such connection.
  virtual absl::StatusOr<std::vector<TcpConnection>> Connections(
      const std::vector<uint16_t>& local_ports) = 0;
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_TCP_STATS_H_

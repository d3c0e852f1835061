#ifndef SMBFLEET_AGENT_CORE_SESSION_RTT_H_
#define SMBFLEET_AGENT_CORE_SESSION_RTT_H_

// The round-trip times of the server's TCP connections (tcp_stats.h) onto the sessions a
// platform reported, matched by the client's address and port. Shared by the Samba source
// (sock_diag) and the Windows live source (TCP extended statistics).

#include <cstdint>
#include <vector>

#include "agent/core/probe_errors.h"
#include "agent/core/tcp_stats.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent {

enum class PeerMatch {
  // Only a session with a client port, by address and port (smbstatus prints the port).
  kAddressAndPort,
  // As above; a session without a port (no SMB cmdlet shows it) by its address alone when
  // exactly one connection comes from that address, else it stays unmeasured.
  kAddressOrUniqueAddress,
};

// Copies rtt_us, rttvar_us, min_rtt_us, retransmits and delivery_rate_bytes_per_sec of the
// matching connection onto each session; a value the connection lacks stays unset. A session
// whose connection's read failed (TcpConnection::status) gets nothing and the failure becomes a
// probe error of `probe` (identical messages once).
void MatchSessionRoundTrips(const std::vector<TcpConnection>& connections, PeerMatch match,
                            const Probe& probe, smbfleet::v1::Posture* posture);

// Reads `tcp_stats` for `local_ports` (not at all without sessions or without tcp_stats) and
// matches as above. A failed read leaves every session unmeasured and is one probe error of
// `probe`: PERMISSION_DENIED, UNSUPPORTED (Unimplemented), TIMEOUT or ERROR.
void FillSessionRoundTrips(TcpStats* tcp_stats, const std::vector<uint16_t>& local_ports,
                           PeerMatch match, const Probe& probe, smbfleet::v1::Posture* posture);

// The probe error code for a failed TCP statistics read.
std::string TcpStatsProbeCode(const absl::Status& status);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_SESSION_RTT_H_

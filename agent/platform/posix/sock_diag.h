#ifndef SMBFLEET_AGENT_PLATFORM_POSIX_SOCK_DIAG_H_
#define SMBFLEET_AGENT_PLATFORM_POSIX_SOCK_DIAG_H_

// TCP round-trip times from the kernel's sock_diag netlink interface (what `ss -ti` shows): a dump
// of the TCP connections asking for INET_DIAG_INFO, i.e. struct tcp_info. Reading other
// processes' sockets this way needs no capability.
//
// The kernel walks its whole table of connections for every dump, whatever the filter: every
// bucket of the established hash (262,144 of them on a host with 24 GiB), empty or not, which is
// nearly all of a reading's CPU. A dump per address family walks it twice; the legacy request
// (TCPDIAG_GETSOCK with struct inet_diag_req, which `ss` sent before sock_diag existed) asks for
// both families in one walk, and every kernel since 2.6 answers it.

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/core/tcp_stats.h"

namespace smbfleet::agent::posix {

// What one recv() of a dump reply held.
struct SockDiagChunk {
  std::vector<TcpConnection> connections;  // those on the local ports asked for
  bool done = false;                       // NLMSG_DONE seen: the dump is complete
};

// Parses the netlink messages in `bytes` (one datagram of a dump reply: SOCK_DIAG_BY_FAMILY or
// TCPDIAG_GETSOCK messages, which both carry an inet_diag_msg),
// keeping the connections whose local port is one of `local_ports`. Pure: no I/O. Fails naming the
// message and what is wrong on a truncated or inconsistent message, and on NLMSG_ERROR (its errno
// as the status: EPERM -> PermissionDenied). Fields whose bytes the kernel's tcp_info attribute
// does not hold stay absent.
absl::StatusOr<SockDiagChunk> ParseSockDiagReply(absl::string_view bytes,
                                                 const std::vector<uint16_t>& local_ports);

// How a reading asks the kernel.
enum class SockDiagDump {
  kAuto,       // one walk; from the first time the kernel refuses it, a dump per family
  kOneWalk,    // the legacy request, both families in one walk of the table
  kPerFamily,  // one SOCK_DIAG_BY_FAMILY dump per address family: two walks
};

// The Linux TcpStats: a NETLINK_SOCK_DIAG socket per dump.
std::unique_ptr<TcpStats> NewSockDiagTcpStats(SockDiagDump dump = SockDiagDump::kAuto);

}  // namespace smbfleet::agent::posix

#endif  // SMBFLEET_AGENT_PLATFORM_POSIX_SOCK_DIAG_H_

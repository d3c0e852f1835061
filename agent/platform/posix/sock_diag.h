#ifndef SMBFLEET_AGENT_PLATFORM_POSIX_SOCK_DIAG_H_
#define SMBFLEET_AGENT_PLATFORM_POSIX_SOCK_DIAG_H_

// TCP round-trip times from the kernel's sock_diag netlink interface (what `ss -ti` shows): one
// inet_diag_req_v2 dump per address family asking for INET_DIAG_INFO, i.e. struct tcp_info.
// Reading other processes' sockets this way needs no capability.

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

// Parses the netlink messages in `bytes` (one datagram of a SOCK_DIAG_BY_FAMILY dump reply),
// keeping the connections whose local port is one of `local_ports`. Pure: no I/O. Fails naming the
// message and what is wrong on a truncated or inconsistent message, and on NLMSG_ERROR (its errno
// as the status: EPERM -> PermissionDenied). Fields whose bytes the kernel's tcp_info attribute
// does not hold stay absent.
absl::StatusOr<SockDiagChunk> ParseSockDiagReply(absl::string_view bytes,
                                                 const std::vector<uint16_t>& local_ports);

// The Linux TcpStats: a NETLINK_SOCK_DIAG socket per call.
std::unique_ptr<TcpStats> NewSockDiagTcpStats();

}  // namespace smbfleet::agent::posix

#endif  // SMBFLEET_AGENT_PLATFORM_POSIX_SOCK_DIAG_H_

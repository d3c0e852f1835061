#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_TCP_ESTATS_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_TCP_ESTATS_H_

// The shim's raw TCP extended statistics (shim/tcp_estats.h) as the platform-neutral
// TcpConnections the sessions are matched to (agent/core/session_rtt.h). Portable: tested on
// Linux with rows shaped as the Windows tables hold them.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/core/probe_errors.h"
#include "agent/core/tcp_stats.h"
#include "agent/platform/windows/shim/tcp_estats.h"

namespace smbfleet::agent::windows {

// Sessions' round-trip times on Windows. No section: the sessions themselves are still known.
inline constexpr Probe kTcpEstatsProbe{"tcp_estats", {}};

// The ports the Windows SMB server takes sessions on: SMB over TCP and over NetBIOS.
inline const std::vector<uint16_t>& WindowsSmbPorts() {
  static const std::vector<uint16_t> kPorts = {445, 139};
  return kPorts;
}

// A failed table read is an error (PermissionDenied for ERROR_ACCESS_DENIED, Unimplemented for
// ERROR_NOT_SUPPORTED / ERROR_CALL_NOT_IMPLEMENTED, else Internal) naming the call and the
// Windows error code. A connection that closed between the table and its statistics
// (ERROR_NOT_FOUND) is left out; another per-connection failure is a TcpConnection with that
// status and no values. Milliseconds become microseconds; round-trip times are absent until the
// connection has an RTT sample since collection started (none on the read that switched it on).
absl::StatusOr<std::vector<TcpConnection>> ConnectionsFromEstats(const shim::TcpEstatsRead& read);

// "5 (access denied)": a Win32 error code with its meaning where the agent knows it.
std::string DescribeWin32Error(uint32_t code);

// TcpStats over a reader of raw statistics: shim::ReadTcpEstats on Windows, a fake in tests.
std::unique_ptr<TcpStats> NewEstatsTcpStats(
    shim::TcpEstatsRead (*read)(const std::vector<uint16_t>& local_ports));

}  // namespace smbfleet::agent::windows

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_TCP_ESTATS_H_

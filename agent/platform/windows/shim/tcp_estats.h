#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_TCP_ESTATS_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_TCP_ESTATS_H_

// Windows-only: the SMB server's established TCP connections (GetTcpTable2 / GetTcp6Table2) with
// their TCP extended statistics (GetPerTcpConnectionEStats, TcpConnectionEstatsPath), which this
// read switches on where they are off (SetPerTcpConnectionEStats; needs an administrator). Raw
// values as the API returns them; agent/platform/windows/tcp_estats.h turns them into
// TcpConnections. Plain structs only (builds with mingw-w64).

#include <cstdint>
#include <string>
#include <vector>

namespace smbfleet::agent::windows::shim {

// One established connection.
struct TcpEstatsRow {
  bool ipv6 = false;
  // In network byte order as the tables hold them; IPv4 in the first 4 bytes.
  uint8_t local_address[16] = {};
  uint8_t remote_address[16] = {};
  // dwLocalPort / dwRemotePort as the tables hold them: the port in network byte order in the
  // low 16 bits.
  uint32_t local_port_raw = 0;
  uint32_t remote_port_raw = 0;
  // Non-zero: the Win32 error of error_call for this connection; no statistics.
  uint32_t error = 0;
  std::string error_call;
  // Statistics were off and this read switched them on: they count from now, nothing yet.
  bool enabled_now = false;
  // TCP_ESTATS_PATH_ROD_v0 was read (statistics were already on). Times in milliseconds.
  bool have_path = false;
  uint32_t smoothed_rtt_ms = 0;
  uint32_t rtt_var_ms = 0;
  uint32_t min_rtt_ms = 0;
  uint32_t count_rtt = 0;     // RTT samples since collection started; 0: the times mean nothing
  uint32_t pkts_retrans = 0;  // segments retransmitted since collection started
};

struct TcpEstatsRead {
  std::vector<TcpEstatsRow> rows;
  // Non-zero: the Win32 error of error_call (a table read); rows may be partial.
  uint32_t error = 0;
  std::string error_call;
};

// Every established connection (IPv4 and IPv6) whose local port is in local_ports.
TcpEstatsRead ReadTcpEstats(const std::vector<uint16_t>& local_ports);

}  // namespace smbfleet::agent::windows::shim

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_TCP_ESTATS_H_

// winsock2 before windows.h and iphlpapi.h: the IPv6 table types need its definitions.
// clang-format off
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <iphlpapi.h>
#include <tcpestats.h>
// clang-format on

#include <algorithm>
#include <cstring>
#include <vector>

#include "agent/platform/windows/shim/tcp_estats.h"

namespace smbfleet::agent::windows::shim {
namespace {

// The port in a table's DWORD (network byte order in the low 16 bits), in host order.
uint16_t PortOf(DWORD raw) {
  return static_cast<uint16_t>(((raw & 0xff) << 8) | ((raw >> 8) & 0xff));
}

bool Wanted(DWORD local_port, const std::vector<uint16_t>& ports) {
  return std::find(ports.begin(), ports.end(), PortOf(local_port)) != ports.end();
}

// A table call that sizes its own buffer (the table may grow between the two calls).
template <typename Fn>
ULONG ReadTable(Fn fn, std::vector<unsigned char>* buf) {
  ULONG size = 0;
  ULONG err = fn(nullptr, &size);
  for (int attempt = 0; attempt < 4 && err == ERROR_INSUFFICIENT_BUFFER; ++attempt) {
    size += 4096;
    buf->assign(size, 0);
    err = fn(buf->data(), &size);
  }
  return err;
}

// Wine exports GetPerTcpConnectionEStats as a stub that aborts the process when called; there the
// statistics are "not implemented" (its ntdll exports wine_get_version, Windows' does not).
bool EstatsImplemented() {
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  return ntdll == nullptr || GetProcAddress(ntdll, "wine_get_version") == nullptr;
}

// Reads TcpConnectionEstatsPath for one connection through get/set (the IPv4 or IPv6 call),
// switching collection on where it is off.
template <typename GetFn, typename SetFn>
void ReadPath(GetFn get, SetFn set, TcpEstatsRow* row) {
  static const bool implemented = EstatsImplemented();
  if (!implemented) {
    row->error = ERROR_CALL_NOT_IMPLEMENTED;
    row->error_call = "GetPerTcpConnectionEStats";
    return;
  }
  TCP_ESTATS_PATH_RW_v0 rw{};
  TCP_ESTATS_PATH_ROD_v0 rod{};
  ULONG err = get(reinterpret_cast<PUCHAR>(&rw), static_cast<ULONG>(sizeof(rw)),
                  reinterpret_cast<PUCHAR>(&rod), static_cast<ULONG>(sizeof(rod)));
  if (err == NO_ERROR && rw.EnableCollection) {
    row->have_path = true;
    row->smoothed_rtt_ms = rod.SmoothedRtt;
    row->rtt_var_ms = rod.RttVar;
    row->min_rtt_ms = rod.MinRtt;
    row->count_rtt = rod.CountRtt;
    row->pkts_retrans = rod.PktsRetrans;
    return;
  }
  if (err == ERROR_NOT_FOUND) {  // the connection closed since the table was read
    row->error = err;
    row->error_call = "GetPerTcpConnectionEStats";
    return;
  }
  // Off (or not readable while off): switch it on; the counts start now.
  TCP_ESTATS_PATH_RW_v0 on{};
  on.EnableCollection = TRUE;
  ULONG set_err = set(reinterpret_cast<PUCHAR>(&on), static_cast<ULONG>(sizeof(on)));
  if (set_err != NO_ERROR) {
    row->error = set_err;
    row->error_call = "SetPerTcpConnectionEStats";
    return;
  }
  if (err != NO_ERROR) {
    row->error = err;
    row->error_call = "GetPerTcpConnectionEStats";
    return;
  }
  row->enabled_now = true;
}

void ReadIpv4(const std::vector<uint16_t>& ports, TcpEstatsRead* out) {
  std::vector<unsigned char> buf;
  ULONG err = ReadTable(
      [](unsigned char* b, ULONG* size) {
        return GetTcpTable2(reinterpret_cast<PMIB_TCPTABLE2>(b), size, FALSE);
      },
      &buf);
  if (err != NO_ERROR) {
    out->error = err;
    out->error_call = "GetTcpTable2";
    return;
  }
  if (buf.empty()) return;
  const auto* table = reinterpret_cast<const MIB_TCPTABLE2*>(buf.data());
  for (DWORD i = 0; i < table->dwNumEntries; ++i) {
    const MIB_TCPROW2& r = table->table[i];
    if (r.dwState != MIB_TCP_STATE_ESTAB || !Wanted(r.dwLocalPort, ports)) continue;
    TcpEstatsRow row;
    std::memcpy(row.local_address, &r.dwLocalAddr, 4);
    std::memcpy(row.remote_address, &r.dwRemoteAddr, 4);
    row.local_port_raw = r.dwLocalPort;
    row.remote_port_raw = r.dwRemotePort;
    MIB_TCPROW key{};
    key.dwState = r.dwState;
    key.dwLocalAddr = r.dwLocalAddr;
    key.dwLocalPort = r.dwLocalPort;
    key.dwRemoteAddr = r.dwRemoteAddr;
    key.dwRemotePort = r.dwRemotePort;
    ReadPath(
        [&key](PUCHAR rw, ULONG rw_size, PUCHAR rod, ULONG rod_size) {
          return GetPerTcpConnectionEStats(&key, TcpConnectionEstatsPath, rw, 0, rw_size, nullptr,
                                           0, 0, rod, 0, rod_size);
        },
        [&key](PUCHAR rw, ULONG rw_size) {
          return SetPerTcpConnectionEStats(&key, TcpConnectionEstatsPath, rw, 0, rw_size, 0);
        },
        &row);
    out->rows.push_back(row);
  }
}

void ReadIpv6(const std::vector<uint16_t>& ports, TcpEstatsRead* out) {
  std::vector<unsigned char> buf;
  ULONG err = ReadTable(
      [](unsigned char* b, ULONG* size) {
        return GetTcp6Table2(reinterpret_cast<PMIB_TCP6TABLE2>(b), size, FALSE);
      },
      &buf);
  if (err != NO_ERROR) {
    out->error = err;
    out->error_call = "GetTcp6Table2";
    return;
  }
  if (buf.empty()) return;
  const auto* table = reinterpret_cast<const MIB_TCP6TABLE2*>(buf.data());
  for (DWORD i = 0; i < table->dwNumEntries; ++i) {
    const MIB_TCP6ROW2& r = table->table[i];
    if (r.State != MIB_TCP_STATE_ESTAB || !Wanted(r.dwLocalPort, ports)) continue;
    TcpEstatsRow row;
    row.ipv6 = true;
    std::memcpy(row.local_address, &r.LocalAddr, 16);
    std::memcpy(row.remote_address, &r.RemoteAddr, 16);
    row.local_port_raw = r.dwLocalPort;
    row.remote_port_raw = r.dwRemotePort;
    MIB_TCP6ROW key{};
    key.State = r.State;
    key.LocalAddr = r.LocalAddr;
    key.dwLocalScopeId = r.dwLocalScopeId;
    key.dwLocalPort = r.dwLocalPort;
    key.RemoteAddr = r.RemoteAddr;
    key.dwRemoteScopeId = r.dwRemoteScopeId;
    key.dwRemotePort = r.dwRemotePort;
    ReadPath(
        [&key](PUCHAR rw, ULONG rw_size, PUCHAR rod, ULONG rod_size) {
          return GetPerTcp6ConnectionEStats(&key, TcpConnectionEstatsPath, rw, 0, rw_size, nullptr,
                                            0, 0, rod, 0, rod_size);
        },
        [&key](PUCHAR rw, ULONG rw_size) {
          return SetPerTcp6ConnectionEStats(&key, TcpConnectionEstatsPath, rw, 0, rw_size, 0);
        },
        &row);
    out->rows.push_back(row);
  }
}

}  // namespace

TcpEstatsRead ReadTcpEstats(const std::vector<uint16_t>& local_ports) {
  TcpEstatsRead out;
  ReadIpv4(local_ports, &out);
  if (out.error != 0) return out;
  ReadIpv6(local_ports, &out);
  return out;
}

}  // namespace smbfleet::agent::windows::shim

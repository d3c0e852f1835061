// smbfleet-shim-selftest.exe: exercises the shim on a Windows host (or under wine for the
// process part): runs a child with pipes and a timeout, reads the SMB channels, reads the TCP
// statistics of a loopback connection it makes.
//   smbfleet-shim-selftest.exe             process + event log checks, exit 0 when they pass
#include <winsock2.h>
#include <ws2tcpip.h>

#include <cstdio>
#include <string>

#include "agent/platform/windows/shim/cmdline.h"
#include "agent/platform/windows/shim/event_log.h"
#include "agent/platform/windows/shim/process.h"
#include "agent/platform/windows/shim/system_paths.h"
#include "agent/platform/windows/shim/tcp_estats.h"

using namespace smbfleet::agent::windows::shim;

// A loopback connection to a listener on an ephemeral port, and what ReadTcpEstats gives for it
// twice (the first read may only switch collection on). Fails when the connection is not in the
// table, or when it has neither statistics nor an error saying why.
static int CheckTcpEstats() {
  WSADATA wsa;
  if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0) return 1;
  SOCKET listener = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int len = sizeof(addr);
  SOCKET client = INVALID_SOCKET, server = INVALID_SOCKET;
  bool ok = listener != INVALID_SOCKET &&
            bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            listen(listener, 1) == 0 &&
            getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (ok) {
    client = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    ok = client != INVALID_SOCKET &&
         connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  if (ok) server = accept(listener, nullptr, nullptr);
  if (ok && server != INVALID_SOCKET) send(client, "ping", 4, 0);
  uint16_t port = ntohs(addr.sin_port);
  size_t found = 0;
  bool explained = false;
  for (int round = 1; ok && round <= 2; ++round) {
    TcpEstatsRead r = ReadTcpEstats({port});
    found = r.rows.size();
    explained = found == 1 && (r.rows[0].have_path || r.rows[0].enabled_now ||
                               (r.rows[0].error != 0 && !r.rows[0].error_call.empty()));
    std::printf("tcp estats %d: port=%u rows=%zu table_error=%lu(%s)", round, port, r.rows.size(),
                static_cast<unsigned long>(r.error), r.error_call.c_str());
    for (const TcpEstatsRow& row : r.rows) {
      std::printf(
          " [error=%lu(%s) enabled_now=%d path=%d srtt=%lums min=%lums samples=%lu]",
          static_cast<unsigned long>(row.error), row.error_call.c_str(), row.enabled_now ? 1 : 0,
          row.have_path ? 1 : 0, static_cast<unsigned long>(row.smoothed_rtt_ms),
          static_cast<unsigned long>(row.min_rtt_ms), static_cast<unsigned long>(row.count_rtt));
    }
    std::printf("\n");
  }
  for (SOCKET s : {client, server, listener}) {
    if (s != INVALID_SOCKET) closesocket(s);
  }
  WSACleanup();
  ok = ok && found == 1 && explained;
  std::printf("tcp estats: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

int main() {
  int failures = 0;
  ProcessRequest echo;
  echo.argv = {"cmd.exe", "/c", "echo", "hello"};
  echo.timeout_ms = 10000;
  ProcessResult r = RunProcess(echo);
  bool ok =
      r.outcome == ProcessOutcome::kExited && r.stdout_data.find("hello") != std::string::npos;
  std::printf("process: %s (%s)\n", ok ? "ok" : "FAILED", r.error.c_str());
  failures += ok ? 0 : 1;

  // PowerShell by its full path: found without the search order.
  ProcessRequest ps;
  ps.argv = {SystemPowerShellPath(), "-NoProfile", "-NonInteractive", "-Command", "exit 7"};
  ps.timeout_ms = 60000;
  r = RunProcess(ps);
  std::printf("powershell %s: %s\n", ps.argv[0].c_str(),
              r.outcome == ProcessOutcome::kExited && r.exit_code == 7 ? "ok" : r.error.c_str());

  ProcessRequest slow;
  slow.argv = {"cmd.exe", "/c", "ping", "-n", "30", "127.0.0.1"};
  slow.timeout_ms = 500;
  r = RunProcess(slow);
  ok = r.outcome == ProcessOutcome::kTimedOut;
  std::printf("timeout: %s\n", ok ? "ok" : "FAILED");
  failures += ok ? 0 : 1;

  ProcessRequest missing;
  missing.argv = {"no-such-program-smbfleet.exe"};
  r = RunProcess(missing);
  ok = r.outcome == ProcessOutcome::kNotFound;
  std::printf("not found: %s (%s)\n", ok ? "ok" : "FAILED", r.error.c_str());
  failures += ok ? 0 : 1;

  ChannelRead events = ReadChannel("Microsoft-Windows-SMBServer/Operational", 0, 5);
  std::printf("event log: exists=%d latest=%llu read=%zu error=%s\n", events.channel_exists ? 1 : 0,
              static_cast<unsigned long long>(events.latest_record_id), events.events.size(),
              events.error.c_str());
  failures += CheckTcpEstats();
  return failures == 0 ? 0 : 1;
}

#include "agent/platform/windows/tcp_estats.h"

#include <arpa/inet.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/platform/windows/testing/fake_powershell_runner.h"
#include "agent/platform/windows/windows_source.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;

// A table row as GetTcpTable2 / GetTcp6Table2 hold it: address bytes in network order, the port
// in network order in the low 16 bits of a little-endian DWORD.
shim::TcpEstatsRow Row(const std::string& local, uint16_t local_port, const std::string& remote,
                       uint16_t remote_port) {
  shim::TcpEstatsRow row;
  row.ipv6 = remote.find(':') != std::string::npos;
  int family = row.ipv6 ? AF_INET6 : AF_INET;
  EXPECT_EQ(inet_pton(family, local.c_str(), row.local_address), 1) << local;
  EXPECT_EQ(inet_pton(family, remote.c_str(), row.remote_address), 1) << remote;
  uint16_t be = htons(local_port);
  std::memcpy(&row.local_port_raw, &be, 2);
  be = htons(remote_port);
  std::memcpy(&row.remote_port_raw, &be, 2);
  return row;
}

shim::TcpEstatsRow Measured(shim::TcpEstatsRow row, uint32_t smoothed_ms, uint32_t min_ms) {
  row.have_path = true;
  row.smoothed_rtt_ms = smoothed_ms;
  row.rtt_var_ms = smoothed_ms / 2;
  row.min_rtt_ms = min_ms;
  row.count_rtt = 40;
  row.pkts_retrans = 3;
  return row;
}

TEST(TcpEstatsTest, RowsAsTheTablesHoldThem) {
  shim::TcpEstatsRead read;
  read.rows.push_back(Measured(Row("10.2.0.1", 445, "10.2.0.15", 50123), 31, 23));
  read.rows.push_back(
      Measured(Row("fd00::1", 445, "fe80::c8c0:f65d:3bc6:7313", 49800), 2, 0));  // a LAN: < 1 ms
  shim::TcpEstatsRow fresh = Row("10.2.0.1", 445, "10.2.0.77", 50200);
  fresh.enabled_now = true;  // switched on by this read: counts from now, nothing yet
  read.rows.push_back(fresh);
  shim::TcpEstatsRow no_sample = Row("10.2.0.1", 139, "10.2.0.80", 50300);
  no_sample.have_path = true;
  no_sample.min_rtt_ms = 0xffffffff;
  read.rows.push_back(no_sample);
  shim::TcpEstatsRow closed = Row("10.2.0.1", 445, "10.2.0.90", 50400);
  closed.error = 1168;  // ERROR_NOT_FOUND: gone since the table was read
  closed.error_call = "GetPerTcpConnectionEStats";
  read.rows.push_back(closed);
  shim::TcpEstatsRow denied = Row("10.2.0.1", 445, "10.2.0.91", 50500);
  denied.error = 5;
  denied.error_call = "SetPerTcpConnectionEStats";
  read.rows.push_back(denied);

  auto connections = ConnectionsFromEstats(read);
  ASSERT_TRUE(connections.ok()) << connections.status();
  ASSERT_EQ(connections->size(), 5u);
  const TcpConnection& v4 = (*connections)[0];
  EXPECT_EQ(v4.local_address, "10.2.0.1");
  EXPECT_EQ(v4.local_port, 445);
  EXPECT_EQ(v4.remote_address, "10.2.0.15");
  EXPECT_EQ(v4.remote_port, 50123);
  EXPECT_EQ(v4.rtt_us, 31000u);
  EXPECT_EQ(v4.rttvar_us, 15000u);
  EXPECT_EQ(v4.min_rtt_us, 23000u);
  EXPECT_EQ(v4.retransmits, 3u);
  EXPECT_FALSE(v4.delivery_rate_bytes_per_sec.has_value());
  EXPECT_TRUE(v4.status.ok());

  const TcpConnection& v6 = (*connections)[1];
  EXPECT_EQ(v6.local_address, "fd00::1");
  EXPECT_EQ(v6.remote_address, "fe80::c8c0:f65d:3bc6:7313");
  EXPECT_EQ(v6.remote_port, 49800);
  EXPECT_EQ(v6.min_rtt_us, 0u);  // whole milliseconds: a LAN client reads 0

  const TcpConnection& now = (*connections)[2];
  EXPECT_EQ(now.remote_address, "10.2.0.77");
  EXPECT_TRUE(now.status.ok());
  EXPECT_FALSE(now.rtt_us.has_value());
  EXPECT_FALSE(now.min_rtt_us.has_value());
  EXPECT_FALSE(now.retransmits.has_value());

  const TcpConnection& unsampled = (*connections)[3];
  EXPECT_EQ(unsampled.local_port, 139);
  EXPECT_FALSE(unsampled.min_rtt_us.has_value());
  EXPECT_FALSE(unsampled.rtt_us.has_value());
  EXPECT_EQ(unsampled.retransmits, 0u);

  const TcpConnection& failed = (*connections)[4];
  EXPECT_EQ(failed.remote_address, "10.2.0.91");
  EXPECT_EQ(failed.status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(failed.status.message(),
            "tcp_estats: 10.2.0.91:50500: SetPerTcpConnectionEStats: Windows error 5 (access "
            "denied: the agent must run as an administrator or LocalSystem)");
  EXPECT_FALSE(failed.min_rtt_us.has_value());
}

TEST(TcpEstatsTest, FailedTableReadNamesTheCallAndTheCode) {
  struct Case {
    uint32_t error;
    absl::StatusCode code;
    const char* message;
  };
  for (const Case& c :
       {Case{5, absl::StatusCode::kPermissionDenied,
             "tcp_estats: GetTcp6Table2: Windows error 5 (access denied: the agent must run as an "
             "administrator or LocalSystem)"},
        Case{50, absl::StatusCode::kUnimplemented,
             "tcp_estats: GetTcp6Table2: Windows error 50 (not supported)"},
        Case{120, absl::StatusCode::kUnimplemented,
             "tcp_estats: GetTcp6Table2: Windows error 120 (not implemented on this system)"},
        Case{1784, absl::StatusCode::kInternal, "tcp_estats: GetTcp6Table2: Windows error 1784"}}) {
    shim::TcpEstatsRead read;
    read.rows.push_back(Measured(Row("10.2.0.1", 445, "10.2.0.15", 50123), 31, 23));
    read.error = c.error;
    read.error_call = "GetTcp6Table2";
    auto connections = ConnectionsFromEstats(read);
    ASSERT_FALSE(connections.ok());
    EXPECT_EQ(connections.status().code(), c.code);
    EXPECT_EQ(connections.status().message(), c.message);
  }
}

// The fake reader behind NewEstatsTcpStats: what the next read returns, and the ports asked.
shim::TcpEstatsRead next_read;
std::vector<uint16_t> asked_ports;
int reads = 0;
shim::TcpEstatsRead FakeRead(const std::vector<uint16_t>& local_ports) {
  ++reads;
  asked_ports = local_ports;
  return next_read;
}

std::map<std::string, const v1::Session*> ByAddress(const v1::Posture& p) {
  std::map<std::string, const v1::Session*> out;
  for (const auto& s : p.sessions()) out[s.client_address()] = &s;
  return out;
}

std::string Fixture(const std::string& name) {
  return absl::StrCat(SMBFLEET_SOURCE_DIR, "/tests/fixtures/windows/", name);
}

TEST(TcpEstatsTest, LiveSessionsGetTheTimesOfTheirClientsOnlyConnection) {
  // ws2022's sessions come from 10.2.0.15, 10.2.0.77 and 10.2.0.80.
  next_read = {};
  next_read.rows.push_back(Measured(Row("10.2.0.1", 445, "10.2.0.15", 50123), 31, 23));
  next_read.rows.push_back(Measured(Row("10.2.0.1", 445, "10.2.0.77", 50200), 9, 4));
  next_read.rows.push_back(Measured(Row("10.2.0.1", 445, "10.2.0.77", 50201), 1, 1));
  shim::TcpEstatsRow denied = Row("10.2.0.1", 445, "10.2.0.80", 50300);
  denied.error = 5;
  denied.error_call = "SetPerTcpConnectionEStats";
  next_read.rows.push_back(denied);
  reads = 0;
  auto tcp = NewEstatsTcpStats(&FakeRead);
  testing::FakePowerShellRunner runner(Fixture("ws2022"));
  WindowsOptions options;
  options.tcp_stats = tcp.get();
  auto p = NewWindowsLiveSource(options, &runner)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(asked_ports, (std::vector<uint16_t>{445, 139}));
  auto sessions = ByAddress(*p);
  ASSERT_EQ(sessions.size(), 3u);
  EXPECT_EQ(sessions.at("10.2.0.15")->client_port(), 0u);  // no cmdlet shows it
  EXPECT_EQ(sessions.at("10.2.0.15")->min_rtt_us(), 23000u);
  EXPECT_EQ(sessions.at("10.2.0.15")->rtt_us(), 31000u);
  EXPECT_EQ(sessions.at("10.2.0.15")->retransmits(), 3u);
  // Two connections from 10.2.0.77: which is the session's is unknown, so neither is used.
  EXPECT_FALSE(sessions.at("10.2.0.77")->has_min_rtt_us());
  EXPECT_FALSE(sessions.at("10.2.0.77")->has_rtt_us());
  EXPECT_FALSE(sessions.at("10.2.0.80")->has_min_rtt_us());
  ASSERT_EQ(p->probe_errors_size(), 1);
  EXPECT_EQ(p->probe_errors(0).probe(), "tcp_estats");
  EXPECT_EQ(p->probe_errors(0).code(), "PERMISSION_DENIED");
  EXPECT_EQ(p->probe_errors(0).sections_size(), 0);

  // A failed table read: every session unmeasured, one probe error.
  next_read = {};
  next_read.error = 120;
  next_read.error_call = "GetTcpTable2";
  p = NewWindowsLiveSource(options, &runner)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  for (const auto& s : p->sessions()) EXPECT_FALSE(s.has_min_rtt_us()) << s.session_id();
  ASSERT_EQ(p->probe_errors_size(), 1);
  EXPECT_EQ(p->probe_errors(0).code(), "UNSUPPORTED");
  EXPECT_EQ(p->probe_errors(0).message(),
            "tcp_estats: GetTcpTable2: Windows error 120 (not implemented on this system)");
}

TEST(TcpEstatsTest, CaptureFoldersCarryNoRoundTripTimes) {
  reads = 0;
  auto tcp = NewEstatsTcpStats(&FakeRead);
  WindowsOptions options;
  options.tcp_stats = tcp.get();  // ignored: a capture is not this machine's connections
  auto p = NewWindowsCaptureSource(Fixture("ws2022"), options)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(reads, 0);
  ASSERT_GT(p->sessions_size(), 0);
  for (const auto& s : p->sessions()) EXPECT_FALSE(s.has_min_rtt_us()) << s.session_id();
  for (const auto& e : p->probe_errors()) EXPECT_NE(e.probe(), "tcp_estats");
}

TEST(TcpEstatsTest, NoSessionsNoRead) {
  reads = 0;
  auto tcp = NewEstatsTcpStats(&FakeRead);
  testing::FakePowerShellRunner runner;  // every cmdlet prints nothing
  WindowsOptions options;
  options.tcp_stats = tcp.get();
  auto p = NewWindowsLiveSource(options, &runner)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(reads, 0);
}

}  // namespace
}  // namespace smbfleet::agent::windows

#include "agent/core/session_rtt.h"

#include <string>
#include <utility>
#include <vector>

#include "agent/core/testing/fake_tcp_stats.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

namespace v1 = ::smbfleet::v1;

constexpr Probe kProbe{"tcp_test", {}};

using ::smbfleet::agent::testing::FakeTcpStats;

TcpConnection Peer(const std::string& address, uint16_t port, uint32_t min_rtt_us) {
  TcpConnection c;
  c.local_address = "10.0.0.1";
  c.local_port = 445;
  c.remote_address = address;
  c.remote_port = port;
  c.rtt_us = min_rtt_us * 3;
  c.min_rtt_us = min_rtt_us;
  return c;
}

v1::Session* AddSession(v1::Posture* p, const std::string& id, const std::string& address,
                        uint32_t port) {
  v1::Session* s = p->add_sessions();
  s->set_session_id(id);
  s->set_client_address(address);
  s->set_client_port(port);
  return s;
}

bool Measured(const v1::Session& s) {
  return s.has_rtt_us() || s.has_rttvar_us() || s.has_min_rtt_us() || s.has_retransmits() ||
         s.has_delivery_rate_bytes_per_sec();
}

TEST(SessionRttTest, ByAddressAndPortInCanonicalForm) {
  TcpConnection full = Peer("10.0.0.7", 50001, 12);
  full.rttvar_us = 6;
  full.retransmits = 0;
  full.delivery_rate_bytes_per_sec = 125000000;
  std::vector<TcpConnection> connections = {full, Peer("10.0.0.7", 50002, 900),
                                            Peer("fd00::9", 51000, 23000)};
  for (PeerMatch match : {PeerMatch::kAddressAndPort, PeerMatch::kAddressOrUniqueAddress}) {
    v1::Posture p;
    AddSession(&p, "a", "10.0.0.7", 50001);
    AddSession(&p, "b", "::ffff:10.0.0.7", 50002);
    AddSession(&p, "c", "FD00:0:0::0009", 51000);
    AddSession(&p, "gone", "10.0.0.7", 50003);  // closed between the session list and the read
    MatchSessionRoundTrips(connections, match, kProbe, &p);
    EXPECT_EQ(p.probe_errors_size(), 0);
    const v1::Session& a = p.sessions(0);
    EXPECT_EQ(a.min_rtt_us(), 12u);
    EXPECT_EQ(a.rtt_us(), 36u);
    EXPECT_EQ(a.rttvar_us(), 6u);
    EXPECT_TRUE(a.has_retransmits());
    EXPECT_EQ(a.retransmits(), 0u);
    EXPECT_EQ(a.delivery_rate_bytes_per_sec(), 125000000u);
    const v1::Session& b = p.sessions(1);
    EXPECT_EQ(b.min_rtt_us(), 900u);
    EXPECT_FALSE(b.has_rttvar_us());  // the connection did not carry it: absent, not 0
    EXPECT_FALSE(b.has_retransmits());
    EXPECT_EQ(p.sessions(2).min_rtt_us(), 23000u);
    EXPECT_FALSE(Measured(p.sessions(3)));
  }
}

TEST(SessionRttTest, WithoutAPortOnlyAUniqueAddressMatches) {
  std::vector<TcpConnection> connections = {
      Peer("10.0.0.7", 50001, 12), Peer("10.0.0.8", 50100, 4000), Peer("10.0.0.8", 50101, 5000),
      Peer("fe80::c8c0:f65d:3bc6:7313", 50200, 300)};
  v1::Posture p;
  AddSession(&p, "one", "10.0.0.7", 0);
  AddSession(&p, "same-connection", "10.0.0.7", 0);  // two sessions over one connection
  AddSession(&p, "two-connections", "10.0.0.8", 0);  // which one is this session's?
  AddSession(&p, "ipv6", "fe80::c8c0:f65d:3bc6:7313", 0);
  AddSession(&p, "no-connection", "10.0.0.9", 0);
  AddSession(&p, "name-only", "", 0)->set_client_name("LAPTOP-7");

  v1::Posture exact = p;
  MatchSessionRoundTrips(connections, PeerMatch::kAddressAndPort, kProbe, &exact);
  for (const auto& s : exact.sessions()) EXPECT_FALSE(Measured(s)) << s.session_id();

  MatchSessionRoundTrips(connections, PeerMatch::kAddressOrUniqueAddress, kProbe, &p);
  EXPECT_EQ(p.sessions(0).min_rtt_us(), 12u);
  EXPECT_EQ(p.sessions(1).min_rtt_us(), 12u);
  EXPECT_FALSE(Measured(p.sessions(2)));
  EXPECT_EQ(p.sessions(3).min_rtt_us(), 300u);
  EXPECT_FALSE(Measured(p.sessions(4)));
  EXPECT_FALSE(Measured(p.sessions(5)));
  EXPECT_EQ(p.probe_errors_size(), 0);
}

TEST(SessionRttTest, AConnectionThatCouldNotBeReadIsAProbeErrorForItsSessions) {
  TcpConnection denied = Peer("10.0.0.7", 50001, 0);
  denied.rtt_us.reset();
  denied.min_rtt_us.reset();
  denied.status = absl::PermissionDeniedError("tcp_test: 10.0.0.7:50001: error 5");
  TcpConnection denied2 = denied;
  denied2.remote_port = 50002;  // same message: listed once
  TcpConnection other = Peer("10.0.0.8", 50100, 0);
  other.status = absl::InternalError("tcp_test: 10.0.0.8:50100: error 87");
  TcpConnection unrelated = Peer("10.0.0.99", 50300, 0);  // no session: not reported
  unrelated.status = absl::InternalError("tcp_test: 10.0.0.99:50300: error 87");
  v1::Posture p;
  AddSession(&p, "a", "10.0.0.7", 50001);
  AddSession(&p, "b", "10.0.0.7", 50002);
  AddSession(&p, "c", "10.0.0.8", 0);
  MatchSessionRoundTrips({denied, denied2, other, unrelated}, PeerMatch::kAddressOrUniqueAddress,
                         kProbe, &p);
  for (const auto& s : p.sessions()) EXPECT_FALSE(Measured(s)) << s.session_id();
  ASSERT_EQ(p.probe_errors_size(), 2);
  EXPECT_EQ(p.probe_errors(0).probe(), "tcp_test");
  EXPECT_EQ(p.probe_errors(0).code(), "ERROR");
  EXPECT_EQ(p.probe_errors(0).message(), "tcp_test: 10.0.0.8:50100: error 87");
  EXPECT_EQ(p.probe_errors(1).code(), "PERMISSION_DENIED");
  EXPECT_EQ(p.probe_errors(1).message(), "tcp_test: 10.0.0.7:50001: error 5");
  EXPECT_EQ(p.probe_errors(1).sections_size(), 0);  // the sessions themselves are known
}

TEST(SessionRttTest, FailedReadLeavesEverySessionUnmeasured) {
  struct Case {
    absl::Status status;
    const char* code;
  };
  for (const Case& c : {Case{absl::PermissionDeniedError("denied"), "PERMISSION_DENIED"},
                        Case{absl::UnimplementedError("not supported"), "UNSUPPORTED"},
                        Case{absl::DeadlineExceededError("no reply"), "TIMEOUT"},
                        Case{absl::InternalError("error 87"), "ERROR"}}) {
    v1::Posture p;
    AddSession(&p, "a", "10.0.0.7", 50001);
    FakeTcpStats tcp(c.status);
    FillSessionRoundTrips(&tcp, {445, 139}, PeerMatch::kAddressOrUniqueAddress, kProbe, &p);
    EXPECT_EQ(tcp.calls(), 1);
    EXPECT_EQ(tcp.ports(), (std::vector<uint16_t>{445, 139}));
    ASSERT_EQ(p.probe_errors_size(), 1) << c.code;
    EXPECT_EQ(p.probe_errors(0).code(), c.code);
    EXPECT_EQ(p.probe_errors(0).message(), c.status.message());
    EXPECT_FALSE(Measured(p.sessions(0)));
  }
}

TEST(SessionRttTest, NoSessionsNoRead) {
  v1::Posture p;
  FakeTcpStats tcp(absl::PermissionDeniedError("must not be asked"));
  FillSessionRoundTrips(&tcp, {445}, PeerMatch::kAddressAndPort, kProbe, &p);
  FillSessionRoundTrips(nullptr, {445}, PeerMatch::kAddressAndPort, kProbe, &p);
  EXPECT_EQ(tcp.calls(), 0);
  EXPECT_EQ(p.probe_errors_size(), 0);

  AddSession(&p, "a", "10.0.0.7", 50001);
  FakeTcpStats some(std::vector<TcpConnection>{Peer("10.0.0.7", 50001, 77)});
  FillSessionRoundTrips(&some, {445}, PeerMatch::kAddressAndPort, kProbe, &p);
  EXPECT_EQ(p.sessions(0).min_rtt_us(), 77u);
}

}  // namespace
}  // namespace smbfleet::agent

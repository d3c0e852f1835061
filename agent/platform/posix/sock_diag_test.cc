#include "agent/platform/posix/sock_diag.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::posix {
namespace {

using ::testing::HasSubstr;

// One SOCK_DIAG_BY_FAMILY message as the kernel writes it. `info_len` bytes of a tcp_info (the
// kernel's struct grows; older ones send fewer bytes).
std::string DiagMessage(uint8_t family, const std::string& local, uint16_t local_port,
                        const std::string& remote, uint16_t remote_port, size_t info_len,
                        uint16_t type = SOCK_DIAG_BY_FAMILY) {
  struct inet_diag_msg msg = {};
  msg.idiag_family = family;
  msg.idiag_state = 1;  // TCP_ESTABLISHED
  msg.idiag_inode = 4242;
  msg.id.idiag_sport = htons(local_port);
  msg.id.idiag_dport = htons(remote_port);
  int af = family == AF_INET6 ? AF_INET6 : AF_INET;
  EXPECT_EQ(inet_pton(af, local.c_str(), msg.id.idiag_src), 1) << local;
  EXPECT_EQ(inet_pton(af, remote.c_str(), msg.id.idiag_dst), 1) << remote;

  struct tcp_info info = {};
  info.tcpi_rtt = 8900;
  info.tcpi_rttvar = 4450;
  info.tcpi_min_rtt = 12;
  info.tcpi_total_retrans = 7;
  info.tcpi_delivery_rate = 29127111104ull;
  info.tcpi_bytes_acked = 5000000000ull;
  info.tcpi_bytes_received = 123456;
  std::string body(reinterpret_cast<const char*>(&msg), sizeof(msg));
  body.resize(NLMSG_ALIGN(body.size()), '\0');
  struct rtattr attr = {};
  attr.rta_len = static_cast<uint16_t>(RTA_LENGTH(info_len));
  attr.rta_type = INET_DIAG_INFO;
  body.append(reinterpret_cast<const char*>(&attr), sizeof(attr));
  std::string info_bytes(reinterpret_cast<const char*>(&info), sizeof(info));
  info_bytes.resize(info_len, '\0');
  body.append(info_bytes);
  body.resize(NLMSG_ALIGN(body.size()), '\0');

  struct nlmsghdr header = {};
  header.nlmsg_len = static_cast<uint32_t>(NLMSG_HDRLEN + body.size());
  header.nlmsg_type = type;
  header.nlmsg_flags = NLM_F_MULTI;
  std::string out(reinterpret_cast<const char*>(&header), sizeof(header));
  return out + body;
}

std::string Control(uint16_t type, int error) {
  struct nlmsghdr header = {};
  header.nlmsg_len = NLMSG_LENGTH(sizeof(int));
  header.nlmsg_type = type;
  std::string out(reinterpret_cast<const char*>(&header), sizeof(header));
  out.append(reinterpret_cast<const char*>(&error), sizeof(error));
  return out;
}

std::string Done() { return Control(NLMSG_DONE, 0); }

absl::StatusOr<SockDiagChunk> Parse(absl::string_view bytes) {
  return ParseSockDiagReply(bytes, {445, 139});
}

TEST(SockDiagTest, ReadsTcpInfoOfSmbConnectionsOnly) {
  std::string bytes =
      DiagMessage(AF_INET, "192.0.2.1", 445, "192.0.2.9", 49812, sizeof(struct tcp_info)) +
      DiagMessage(AF_INET, "192.0.2.1", 22, "192.0.2.9", 40000, sizeof(struct tcp_info)) +
      DiagMessage(AF_INET6, "2001:db8::1", 139, "2001:db8::9", 51000, sizeof(struct tcp_info)) +
      Done();
  auto chunk = Parse(bytes);
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  EXPECT_TRUE(chunk->done);
  ASSERT_EQ(chunk->connections.size(), 2u);
  const TcpConnection& v4 = chunk->connections[0];
  EXPECT_EQ(v4.local_address, "192.0.2.1");
  EXPECT_EQ(v4.local_port, 445);
  EXPECT_EQ(v4.remote_address, "192.0.2.9");
  EXPECT_EQ(v4.remote_port, 49812);
  EXPECT_EQ(v4.rtt_us, 8900u);
  EXPECT_EQ(v4.rttvar_us, 4450u);
  EXPECT_EQ(v4.min_rtt_us, 12u);
  EXPECT_EQ(v4.retransmits, 7u);
  EXPECT_EQ(v4.delivery_rate_bytes_per_sec, 29127111104ull);
  EXPECT_EQ(v4.bytes_acked, 5000000000ull);
  EXPECT_EQ(v4.bytes_received, 123456u);
  EXPECT_EQ(v4.inode, 4242u);
  const TcpConnection& v6 = chunk->connections[1];
  EXPECT_EQ(v6.local_port, 139);
  EXPECT_EQ(v6.remote_address, "2001:db8::9");
  EXPECT_EQ(v6.remote_port, 51000);
}

// The reply to the legacy request (both families in one walk) carries the same inet_diag_msg
// under the request's own type; other message types are not connections.
TEST(SockDiagTest, ReadsTheRepliesToTheOneWalkRequest) {
  std::string bytes = DiagMessage(AF_INET, "192.0.2.1", 445, "192.0.2.9", 49812,
                                  sizeof(struct tcp_info), TCPDIAG_GETSOCK) +
                      DiagMessage(AF_INET6, "2001:db8::1", 445, "2001:db8::9", 51000,
                                  sizeof(struct tcp_info), TCPDIAG_GETSOCK) +
                      DiagMessage(AF_INET, "192.0.2.1", 445, "192.0.2.7", 40000,
                                  sizeof(struct tcp_info), RTM_NEWLINK) +
                      Done();
  auto chunk = Parse(bytes);
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  EXPECT_TRUE(chunk->done);
  ASSERT_EQ(chunk->connections.size(), 2u);
  EXPECT_EQ(chunk->connections[0].remote_port, 49812);
  EXPECT_EQ(chunk->connections[0].bytes_acked, 5000000000ull);
  EXPECT_EQ(chunk->connections[1].remote_address, "2001:db8::9");
}

TEST(SockDiagTest, IPv4MappedAddressesArePlainIPv4) {
  auto chunk = Parse(DiagMessage(AF_INET6, "::ffff:10.0.0.1", 445, "::ffff:10.0.0.9", 50123,
                                 sizeof(struct tcp_info)));
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  EXPECT_FALSE(chunk->done);  // more datagrams follow
  ASSERT_EQ(chunk->connections.size(), 1u);
  EXPECT_EQ(chunk->connections[0].local_address, "10.0.0.1");
  EXPECT_EQ(chunk->connections[0].remote_address, "10.0.0.9");
}

TEST(SockDiagTest, FieldsBeyondAShortTcpInfoStayUnknown) {
  struct Case {
    size_t info_len;
    bool rtt, min_rtt, retransmits, delivery_rate;
  };
  const size_t rtt_end = offsetof(struct tcp_info, tcpi_rttvar) + sizeof(uint32_t);
  const size_t min_rtt_end = offsetof(struct tcp_info, tcpi_min_rtt) + sizeof(uint32_t);
  const size_t rate_end = offsetof(struct tcp_info, tcpi_delivery_rate) + sizeof(uint64_t);
  for (const Case& c :
       {Case{0, false, false, false, false}, Case{rtt_end, true, false, false, false},
        Case{min_rtt_end, true, true, true, false}, Case{rate_end - 1, true, true, true, false},
        Case{rate_end, true, true, true, true}}) {
    auto chunk = Parse(DiagMessage(AF_INET, "10.0.0.1", 445, "10.0.0.9", 50000, c.info_len));
    ASSERT_TRUE(chunk.ok()) << chunk.status();
    ASSERT_EQ(chunk->connections.size(), 1u);
    const TcpConnection& t = chunk->connections[0];
    EXPECT_EQ(t.rtt_us.has_value(), c.rtt) << c.info_len;
    EXPECT_EQ(t.rttvar_us.has_value(), c.rtt) << c.info_len;
    EXPECT_EQ(t.min_rtt_us.has_value(), c.min_rtt) << c.info_len;
    EXPECT_EQ(t.retransmits.has_value(), c.retransmits) << c.info_len;
    EXPECT_EQ(t.delivery_rate_bytes_per_sec.has_value(), c.delivery_rate) << c.info_len;
    EXPECT_EQ(t.bytes_acked.has_value(),
              c.info_len >= offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(uint64_t))
        << c.info_len;
    EXPECT_EQ(t.bytes_received.has_value(),
              c.info_len >= offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(uint64_t))
        << c.info_len;
  }
}

TEST(SockDiagTest, NoRttSampleYetIsUnknown) {
  std::string bytes =
      DiagMessage(AF_INET, "10.0.0.1", 445, "10.0.0.9", 50000, sizeof(struct tcp_info));
  const size_t info_at = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct inet_diag_msg)) + RTA_LENGTH(0);
  const uint32_t zero = 0, none = UINT32_MAX;
  std::memcpy(bytes.data() + info_at + offsetof(struct tcp_info, tcpi_rtt), &zero, 4);
  std::memcpy(bytes.data() + info_at + offsetof(struct tcp_info, tcpi_min_rtt), &none, 4);
  auto chunk = Parse(bytes);
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  ASSERT_EQ(chunk->connections.size(), 1u);
  EXPECT_FALSE(chunk->connections[0].rtt_us.has_value());
  EXPECT_FALSE(chunk->connections[0].rttvar_us.has_value());
  EXPECT_FALSE(chunk->connections[0].min_rtt_us.has_value());
  EXPECT_EQ(chunk->connections[0].retransmits, 7u);
}

TEST(SockDiagTest, KernelErrorBecomesItsStatus) {
  auto denied = Parse(Control(NLMSG_ERROR, -EPERM));
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(denied.status().message(), HasSubstr("sock_diag"));
  auto odd = Parse(Control(NLMSG_ERROR, 12345));
  EXPECT_FALSE(odd.ok());
  // An error code of 0 is an acknowledgement, not a failure.
  auto ack = Parse(Control(NLMSG_ERROR, 0) + Done());
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_TRUE(ack->done);
}

TEST(SockDiagTest, TruncatedOrInconsistentMessagesAreRejected) {
  std::string good = DiagMessage(AF_INET, "10.0.0.1", 445, "10.0.0.9", 50000, 104);
  // Cut inside the netlink header, inside the inet_diag_msg and inside the attribute.
  for (size_t cut : {size_t{7}, size_t{NLMSG_HDRLEN + 20}, good.size() - 9}) {
    auto r = Parse(good.substr(0, cut));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << cut;
  }
  // A header whose length runs past the datagram.
  std::string longer = good;
  uint32_t len = static_cast<uint32_t>(good.size() + 64);
  std::memcpy(longer.data(), &len, sizeof(len));
  EXPECT_THAT(Parse(longer).status().message(), HasSubstr("length"));
  // A header that claims less than itself.
  len = 3;
  std::memcpy(longer.data(), &len, sizeof(len));
  EXPECT_FALSE(Parse(longer).ok());
  // An attribute longer than the message.
  std::string bad_attr = good;
  uint16_t rta_len = 4000;
  std::memcpy(bad_attr.data() + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct inet_diag_msg)), &rta_len,
              sizeof(rta_len));
  EXPECT_THAT(Parse(bad_attr).status().message(), HasSubstr("attribute"));
  // NLMSG_ERROR without its code.
  struct nlmsghdr header = {};
  header.nlmsg_len = NLMSG_HDRLEN;
  header.nlmsg_type = NLMSG_ERROR;
  EXPECT_FALSE(Parse(std::string(reinterpret_cast<const char*>(&header), sizeof(header))).ok());
}

TEST(SockDiagTest, EmptyDatagramHasNothing) {
  auto chunk = Parse("");
  ASSERT_TRUE(chunk.ok());
  EXPECT_TRUE(chunk->connections.empty());
  EXPECT_FALSE(chunk->done);
}

TEST(SockDiagTest, OnlyTheLocalPortsAskedFor) {
  std::string bytes = DiagMessage(AF_INET, "10.0.0.1", 445, "10.0.0.9", 50000, 104) +
                      DiagMessage(AF_INET, "10.0.0.1", 44590, "10.0.0.9", 50001, 104);
  auto chunk = ParseSockDiagReply(bytes, {44590});
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  ASSERT_EQ(chunk->connections.size(), 1u);
  EXPECT_EQ(chunk->connections[0].remote_port, 50001);
  chunk = ParseSockDiagReply(bytes, {});
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  EXPECT_TRUE(chunk->connections.empty());
}

// A connected pair on the loopback of `family` that has exchanged one byte (so the kernel has
// measured a round trip), closed with the object. Empty when the host has no such loopback (an
// IPv6-less namespace).
class LoopbackPair {
 public:
  explicit LoopbackPair(int family) {
    listener_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ < 0) return;
    struct sockaddr_storage addr = {};
    socklen_t len = 0;
    if (family == AF_INET6) {
      auto* a6 = reinterpret_cast<struct sockaddr_in6*>(&addr);
      a6->sin6_family = AF_INET6;
      a6->sin6_addr = in6addr_loopback;
      len = sizeof(*a6);
    } else {
      auto* a4 = reinterpret_cast<struct sockaddr_in*>(&addr);
      a4->sin_family = AF_INET;
      a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof(*a4);
    }
    if (bind(listener_, reinterpret_cast<struct sockaddr*>(&addr), len) != 0) return;
    if (listen(listener_, 1) != 0) return;
    if (getsockname(listener_, reinterpret_cast<struct sockaddr*>(&addr), &len) != 0) return;
    client_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(client_, reinterpret_cast<struct sockaddr*>(&addr), len) != 0) return;
    server_ = accept(listener_, nullptr, nullptr);
    char byte = 'x';
    if (server_ < 0 || write(server_, &byte, 1) != 1 || read(client_, &byte, 1) != 1) return;
    struct sockaddr_storage local = {};
    socklen_t local_len = sizeof(local);
    if (getsockname(client_, reinterpret_cast<struct sockaddr*>(&local), &local_len) != 0) return;
    port_ = ntohs(family == AF_INET6 ? reinterpret_cast<struct sockaddr_in6*>(&addr)->sin6_port
                                     : reinterpret_cast<struct sockaddr_in*>(&addr)->sin_port);
    client_port_ =
        ntohs(family == AF_INET6 ? reinterpret_cast<struct sockaddr_in6*>(&local)->sin6_port
                                 : reinterpret_cast<struct sockaddr_in*>(&local)->sin_port);
  }
  ~LoopbackPair() {
    for (int fd : {server_, client_, listener_}) {
      if (fd >= 0) close(fd);
    }
  }
  LoopbackPair(const LoopbackPair&) = delete;
  LoopbackPair& operator=(const LoopbackPair&) = delete;

  bool ok() const { return port_ != 0; }
  uint16_t port() const { return port_; }
  uint16_t client_port() const { return client_port_; }

 private:
  int listener_ = -1;
  int client_ = -1;
  int server_ = -1;
  uint16_t port_ = 0;
  uint16_t client_port_ = 0;
};

// The real kernel, with a connection of this process on loopback: sock_diag finds it by the
// listener's port, with the round-trip times the kernel measured.
TEST(SockDiagTest, LiveLoopbackConnection) {
  absl::StatusOr<std::vector<TcpConnection>> connections;
  uint16_t client_port = 0;
  {
    LoopbackPair pair(AF_INET);
    ASSERT_TRUE(pair.ok());
    client_port = pair.client_port();
    connections = NewSockDiagTcpStats()->Connections({pair.port()});
  }
  ASSERT_TRUE(connections.ok()) << connections.status();
  ASSERT_EQ(connections->size(), 1u);
  const TcpConnection& c = (*connections)[0];
  EXPECT_EQ(c.local_address, "127.0.0.1");
  EXPECT_EQ(c.remote_address, "127.0.0.1");
  EXPECT_EQ(c.remote_port, client_port);
  ASSERT_TRUE(c.rtt_us.has_value());
  EXPECT_GT(*c.rtt_us, 0u);
  EXPECT_LT(*c.rtt_us, 1000000u);
  ASSERT_TRUE(c.retransmits.has_value());
}

// The real kernel, an IPv4 and an IPv6 connection: the one-walk request, the dumps per family and
// the default each find both, the same ones.
TEST(SockDiagTest, EveryWayOfAskingFindsBothFamilies) {
  LoopbackPair v4(AF_INET);
  LoopbackPair v6(AF_INET6);
  ASSERT_TRUE(v4.ok());
  if (!v6.ok()) GTEST_SKIP() << "no IPv6 loopback on this host";
  for (SockDiagDump dump :
       {SockDiagDump::kOneWalk, SockDiagDump::kPerFamily, SockDiagDump::kAuto}) {
    SCOPED_TRACE(static_cast<int>(dump));
    auto connections = NewSockDiagTcpStats(dump)->Connections({v4.port(), v6.port()});
    ASSERT_TRUE(connections.ok()) << connections.status();
    ASSERT_EQ(connections->size(), 2u);
    std::vector<std::string> found;
    for (const TcpConnection& c : *connections) {
      found.push_back(absl::StrCat(c.local_address, " ", c.local_port, " ", c.remote_port));
      EXPECT_TRUE(c.bytes_acked.has_value());
    }
    EXPECT_THAT(found, ::testing::UnorderedElementsAre(
                           absl::StrCat("127.0.0.1 ", v4.port(), " ", v4.client_port()),
                           absl::StrCat("::1 ", v6.port(), " ", v6.client_port())));
  }
}

}  // namespace
}  // namespace smbfleet::agent::posix

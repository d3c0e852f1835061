#include "agent/platform/posix/sock_diag.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"

namespace smbfleet::agent::posix {
namespace {

constexpr uint32_t kTcpListen = 10;  // TCP_LISTEN of the kernel's tcp_states.h
// A reply datagram is at most a page or two; 64 KiB is never short (MSG_TRUNC is checked).
constexpr size_t kReceiveBuffer = 64 * 1024;

template <typename T>
T Load(absl::string_view bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// A tcp_info field at `offset` when the kernel's attribute is long enough to hold it.
template <typename T>
std::optional<T> TcpInfoField(absl::string_view info, size_t offset) {
  if (info.size() < offset + sizeof(T)) return std::nullopt;
  return Load<T>(info, offset);
}

std::string AddressText(uint8_t family, const uint32_t (&words)[4]) {
  std::array<unsigned char, 16> raw{};
  std::memcpy(raw.data(), words, sizeof(words));
  char text[INET6_ADDRSTRLEN] = {};
  if (family == AF_INET6) {
    static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(raw.data(), kMapped, sizeof(kMapped)) == 0) {
      // IPv4 through a dual-stack socket: the address smbstatus prints is the plain IPv4 one.
      inet_ntop(AF_INET, raw.data() + 12, text, sizeof(text));
    } else {
      inet_ntop(AF_INET6, raw.data(), text, sizeof(text));
    }
  } else {
    inet_ntop(AF_INET, raw.data(), text, sizeof(text));
  }
  return text;
}

void ReadTcpInfo(absl::string_view info, TcpConnection* c) {
  c->rtt_us = TcpInfoField<uint32_t>(info, offsetof(struct tcp_info, tcpi_rtt));
  c->rttvar_us = TcpInfoField<uint32_t>(info, offsetof(struct tcp_info, tcpi_rttvar));
  c->min_rtt_us = TcpInfoField<uint32_t>(info, offsetof(struct tcp_info, tcpi_min_rtt));
  // Before the first RTT sample the kernel reports 0 (smoothed) and ~0U (lowest): no measurement.
  if (c->rtt_us == 0u) {
    c->rtt_us.reset();
    c->rttvar_us.reset();
  }
  if (c->min_rtt_us == UINT32_MAX) c->min_rtt_us.reset();
  c->retransmits = TcpInfoField<uint32_t>(info, offsetof(struct tcp_info, tcpi_total_retrans));
  c->delivery_rate_bytes_per_sec =
      TcpInfoField<uint64_t>(info, offsetof(struct tcp_info, tcpi_delivery_rate));
  c->bytes_acked = TcpInfoField<uint64_t>(info, offsetof(struct tcp_info, tcpi_bytes_acked));
  c->bytes_received = TcpInfoField<uint64_t>(info, offsetof(struct tcp_info, tcpi_bytes_received));
}

// One message of a dump (SOCK_DIAG_BY_FAMILY or TCPDIAG_GETSOCK): inet_diag_msg, then rtattrs.
// Appends it when its local port is one of local_ports.
absl::Status ParseDiagMessage(absl::string_view payload, size_t at,
                              const std::vector<uint16_t>& local_ports,
                              std::vector<TcpConnection>* out) {
  if (payload.size() < sizeof(struct inet_diag_msg)) {
    return absl::InvalidArgumentError(absl::StrCat("sock_diag message at byte ", at, ": ",
                                                   payload.size(), " bytes, inet_diag_msg needs ",
                                                   sizeof(struct inet_diag_msg)));
  }
  auto msg = Load<struct inet_diag_msg>(payload, 0);
  if (msg.idiag_family != AF_INET && msg.idiag_family != AF_INET6) return absl::OkStatus();
  uint16_t local_port = ntohs(msg.id.idiag_sport);
  if (std::find(local_ports.begin(), local_ports.end(), local_port) == local_ports.end()) {
    return absl::OkStatus();
  }
  TcpConnection c;
  c.local_address = AddressText(msg.idiag_family, msg.id.idiag_src);
  c.local_port = local_port;
  c.remote_address = AddressText(msg.idiag_family, msg.id.idiag_dst);
  c.remote_port = ntohs(msg.id.idiag_dport);
  c.inode = msg.idiag_inode;
  size_t off = NLMSG_ALIGN(sizeof(struct inet_diag_msg));
  while (off < payload.size()) {
    size_t left = payload.size() - off;
    if (left < sizeof(struct rtattr)) break;  // trailing alignment padding
    auto attr = Load<struct rtattr>(payload, off);
    if (attr.rta_len < sizeof(struct rtattr) || attr.rta_len > left) {
      return absl::InvalidArgumentError(absl::StrCat("sock_diag message at byte ", at,
                                                     ": attribute at offset ", off, " has length ",
                                                     attr.rta_len, ", ", left, " bytes left"));
    }
    if (attr.rta_type == INET_DIAG_INFO) {
      ReadTcpInfo(payload.substr(off + RTA_LENGTH(0), attr.rta_len - RTA_LENGTH(0)), &c);
    }
    off += RTA_ALIGN(attr.rta_len);
  }
  out->push_back(std::move(c));
  return absl::OkStatus();
}

// Sends one dump request: a netlink header of `type`, then `request`.
template <typename Request>
ssize_t SendDump(int fd, uint16_t type, const Request& request) {
  struct {
    struct nlmsghdr header;
    Request request;
  } message = {};
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = type;
  message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  message.header.nlmsg_seq = 1;
  message.request = request;
  struct sockaddr_nl kernel = {};
  kernel.nl_family = AF_NETLINK;
  return sendto(fd, &message, sizeof(message), 0, reinterpret_cast<struct sockaddr*>(&kernel),
                sizeof(kernel));
}

// The request of one dump, for one address family or (nullopt) for both: the legacy
// TCPDIAG_GETSOCK request, which the kernel answers with AF_UNSPEC (inet_diag_dump_compat).
absl::Status SendDumpRequest(int fd, std::optional<uint8_t> family) {
  constexpr uint32_t kStates = ~(1u << kTcpListen);  // listeners have no peer
  constexpr uint8_t kInfo = 1u << (INET_DIAG_INFO - 1);
  ssize_t sent = 0;
  if (family.has_value()) {
    struct inet_diag_req_v2 request = {};
    request.sdiag_family = *family;
    request.sdiag_protocol = IPPROTO_TCP;
    request.idiag_ext = kInfo;
    request.idiag_states = kStates;
    sent = SendDump(fd, SOCK_DIAG_BY_FAMILY, request);
  } else {
    struct inet_diag_req request = {};
    request.idiag_family = AF_UNSPEC;
    request.idiag_ext = kInfo;
    request.idiag_states = kStates;
    sent = SendDump(fd, TCPDIAG_GETSOCK, request);
  }
  if (sent < 0) return absl::ErrnoToStatus(errno, "sock_diag: sending the dump request");
  return absl::OkStatus();
}

absl::Status DumpOn(int fd, std::optional<uint8_t> family, const std::vector<uint16_t>& local_ports,
                    std::vector<TcpConnection>* out) {
  struct timeval timeout = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  absl::Status sent = SendDumpRequest(fd, family);
  if (!sent.ok()) return sent;
  std::vector<char> buffer(kReceiveBuffer);
  for (;;) {
    struct iovec iov = {buffer.data(), buffer.size()};
    struct msghdr mh = {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    ssize_t n = recvmsg(fd, &mh, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      if (e == EAGAIN || e == EWOULDBLOCK) {
        return absl::DeadlineExceededError("sock_diag: no reply from the kernel within 5 s");
      }
      return absl::ErrnoToStatus(e, "sock_diag: reading the dump");
    }
    if (n == 0) return absl::InternalError("sock_diag: the dump ended without NLMSG_DONE");
    if ((mh.msg_flags & MSG_TRUNC) != 0) {
      return absl::InternalError("sock_diag: a reply datagram was truncated");
    }
    auto chunk =
        ParseSockDiagReply(absl::string_view(buffer.data(), static_cast<size_t>(n)), local_ports);
    if (!chunk.ok()) return chunk.status();
    for (auto& c : chunk->connections) out->push_back(std::move(c));
    if (chunk->done) return absl::OkStatus();
  }
}

absl::Status Dump(std::optional<uint8_t> family, const std::vector<uint16_t>& local_ports,
                  std::vector<TcpConnection>* out) {
  int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return absl::ErrnoToStatus(errno, "sock_diag: socket(NETLINK_SOCK_DIAG)");
  absl::Status s = DumpOn(fd, family, local_ports, out);
  close(fd);
  return s;
}

absl::StatusOr<std::vector<TcpConnection>> DumpPerFamily(const std::vector<uint16_t>& local_ports) {
  std::vector<TcpConnection> all;
  for (uint8_t family : {AF_INET, AF_INET6}) {
    absl::Status s = Dump(family, local_ports, &all);
    if (!s.ok()) return s;
  }
  return all;
}

absl::StatusOr<std::vector<TcpConnection>> DumpInOneWalk(const std::vector<uint16_t>& local_ports) {
  std::vector<TcpConnection> all;
  absl::Status s = Dump(std::nullopt, local_ports, &all);
  if (!s.ok()) return s;
  return all;
}

class SockDiagTcpStats : public TcpStats {
 public:
  explicit SockDiagTcpStats(SockDiagDump dump) : dump_(dump) {}

  absl::StatusOr<std::vector<TcpConnection>> Connections(
      const std::vector<uint16_t>& local_ports) override {
    switch (dump_) {
      case SockDiagDump::kOneWalk:
        return DumpInOneWalk(local_ports);
      case SockDiagDump::kPerFamily:
        return DumpPerFamily(local_ports);
      case SockDiagDump::kAuto:
        break;
    }
    if (!one_walk_refused_.load()) {
      auto one = DumpInOneWalk(local_ports);
      if (one.ok()) return one;
      // A kernel without the legacy request: the dumps per family, from now on if they work.
      auto per_family = DumpPerFamily(local_ports);
      if (per_family.ok()) one_walk_refused_.store(true);
      return per_family;
    }
    return DumpPerFamily(local_ports);
  }

 private:
  const SockDiagDump dump_;
  std::atomic<bool> one_walk_refused_{false};
};

}  // namespace

absl::StatusOr<SockDiagChunk> ParseSockDiagReply(absl::string_view bytes,
                                                 const std::vector<uint16_t>& local_ports) {
  SockDiagChunk chunk;
  size_t off = 0;
  while (off < bytes.size()) {
    size_t left = bytes.size() - off;
    if (left < sizeof(struct nlmsghdr)) {
      return absl::InvalidArgumentError(absl::StrCat("sock_diag reply: ", left, " bytes at byte ",
                                                     off, ", a netlink header needs ",
                                                     sizeof(struct nlmsghdr)));
    }
    auto header = Load<struct nlmsghdr>(bytes, off);
    if (header.nlmsg_len < sizeof(struct nlmsghdr) || header.nlmsg_len > left) {
      return absl::InvalidArgumentError(absl::StrCat("sock_diag message at byte ", off, ": length ",
                                                     header.nlmsg_len, ", ", left, " bytes left"));
    }
    absl::string_view payload =
        bytes.substr(off + sizeof(struct nlmsghdr), header.nlmsg_len - sizeof(struct nlmsghdr));
    if (header.nlmsg_type == NLMSG_DONE) {
      chunk.done = true;
      return chunk;
    }
    if (header.nlmsg_type == NLMSG_ERROR) {
      if (payload.size() < sizeof(int)) {
        return absl::InvalidArgumentError(
            absl::StrCat("sock_diag message at byte ", off, ": NLMSG_ERROR without an error code"));
      }
      int error = Load<int>(payload, 0);
      if (error != 0) {
        // The kernel sends -errno; a positive or absurd value is still an error, not an ack.
        int e = error < 0 && error > -4096 ? -error : EPROTO;
        return absl::ErrnoToStatus(e, "sock_diag: the kernel refused the dump");
      }
    } else if (header.nlmsg_type == SOCK_DIAG_BY_FAMILY || header.nlmsg_type == TCPDIAG_GETSOCK) {
      absl::Status s = ParseDiagMessage(payload, off, local_ports, &chunk.connections);
      if (!s.ok()) return s;
    }
    off += NLMSG_ALIGN(header.nlmsg_len);
  }
  return chunk;
}

std::unique_ptr<TcpStats> NewSockDiagTcpStats(SockDiagDump dump) {
  return std::make_unique<SockDiagTcpStats>(dump);
}

}  // namespace smbfleet::agent::posix

#include "loadgen/source_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "grpc/support/sync.h"

// gRPC 1.51 installs no header for socket mutators (src/core/lib/iomgr/socket_mutator.h); the
// library exports these symbols and ChannelArguments::SetSocketMutator takes the struct.
typedef enum {
  GRPC_FD_CLIENT_CONNECTION_USAGE,
  GRPC_FD_SERVER_LISTENER_USAGE,
  GRPC_FD_SERVER_CONNECTION_USAGE,
} grpc_fd_usage;

typedef struct {
  int fd;
  grpc_fd_usage usage;
} grpc_mutate_socket_info;

typedef struct {
  bool (*mutate_fd)(int fd, grpc_socket_mutator* mutator);
  int (*compare)(grpc_socket_mutator* a, grpc_socket_mutator* b);
  void (*destroy)(grpc_socket_mutator* mutator);
  bool (*mutate_fd_2)(const grpc_mutate_socket_info* info, grpc_socket_mutator* mutator);
} grpc_socket_mutator_vtable;

struct grpc_socket_mutator {
  const grpc_socket_mutator_vtable* vtable;
  gpr_refcount refcount;
};

void grpc_socket_mutator_init(grpc_socket_mutator* mutator,
                              const grpc_socket_mutator_vtable* vtable);

namespace smbfleet::loadgen {

namespace {

struct SourceMutator {
  grpc_socket_mutator base;  // first: gRPC hands back a pointer to it
  in_addr address;
};

SourceMutator* Self(grpc_socket_mutator* m) { return reinterpret_cast<SourceMutator*>(m); }

// Binds before connect(). gRPC opens an IPv6 socket with IPv4-mapped addresses where it can,
// so the bind follows the socket's family. IP_BIND_ADDRESS_NO_PORT leaves the port to connect().
bool Bind(int fd, const in_addr& address) {
  int domain = AF_INET;
  socklen_t len = sizeof(domain);
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) return false;
  const int one = 1;
  (void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
  if (domain == AF_INET6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr.s6_addr[10] = 0xff;
    a.sin6_addr.s6_addr[11] = 0xff;
    std::memcpy(&a.sin6_addr.s6_addr[12], &address, sizeof(address));
    return bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = address;
  return bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0;
}

bool MutateFd(int /*fd*/, grpc_socket_mutator* /*m*/) { return true; }

bool MutateFd2(const grpc_mutate_socket_info* info, grpc_socket_mutator* m) {
  if (info->usage != GRPC_FD_CLIENT_CONNECTION_USAGE) return true;
  return Bind(info->fd, Self(m)->address);
}

int Compare(grpc_socket_mutator* a, grpc_socket_mutator* b) {
  return std::memcmp(&Self(a)->address, &Self(b)->address, sizeof(in_addr));
}

void Destroy(grpc_socket_mutator* m) { delete Self(m); }

constexpr grpc_socket_mutator_vtable kVtable = {MutateFd, Compare, Destroy, MutateFd2};

}  // namespace

absl::StatusOr<std::string> SourceAddress(int64_t index) {
  // 254 usable host octets (1..254) per third octet, 256 third octets per second octet.
  constexpr int64_t kPerThird = 254;
  const int64_t host = index % kPerThird + 1;
  const int64_t third = (index / kPerThird) % 256;
  const int64_t second = 1 + index / (kPerThird * 256);
  if (index < 0 || second > 255) {
    return absl::OutOfRangeError(absl::StrCat("source address ", index, ": beyond 127.255.x.x"));
  }
  return absl::StrCat("127.", second, ".", third, ".", host);
}

absl::Status BindSourceAddress(const std::string& ipv4, grpc::ChannelArguments& args) {
  in_addr address{};
  if (inet_pton(AF_INET, ipv4.c_str(), &address) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("source address '", ipv4, "': not IPv4"));
  }
  auto* m = new SourceMutator;
  m->address = address;
  grpc_socket_mutator_init(&m->base, &kVtable);
  args.SetSocketMutator(&m->base);  // the arguments own it from here (Destroy frees it)
  return absl::OkStatus();
}

}  // namespace smbfleet::loadgen

#ifndef SMBFLEET_AGENT_CORE_COLLECTOR_TARGET_H_
#define SMBFLEET_AGENT_CORE_COLLECTOR_TARGET_H_

// Where an agent dials its collectors: `collector.address` entries (host:port) as the one gRPC
// target its channel uses. Several entries are several collectors of one fleet (replicas on one
// PostgreSQL); the channel's pick_first policy stays on the first that answers and moves to the
// next when it fails, so an agent holds one connection, not one per collector.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smbfleet::agent {

struct CollectorAddress {
  std::string host;  // a name or an IP address, IPv6 without its brackets
  uint32_t port = 0;
};

// "host:port", "10.0.0.5:7443" or "[fd00::5]:7443". The error names the entry.
absl::StatusOr<CollectorAddress> ParseCollectorAddress(absl::string_view entry);

// The gRPC target for `entries` (each host:port), tried from entries[first % size] on: one entry
// is itself (gRPC resolves its name); several must all be IPv4 or all IPv6 addresses, which gRPC
// dials as one target ("ipv4:a:p,b:p"), as its resolvers take no list of names (several
// collectors behind one name are one entry whose DNS records list them all). Errors name the
// entry, as `what`[i].
absl::StatusOr<std::string> CollectorTarget(const std::vector<std::string>& entries,
                                            absl::string_view what, size_t first = 0);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_COLLECTOR_TARGET_H_

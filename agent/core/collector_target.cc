#include "agent/core/collector_target.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/ip_address.h"

namespace smbfleet::agent {
namespace {

enum class Family { kName, kIpv4, kIpv6 };

Family FamilyOf(const std::string& host) {
  if (!ParseIpAddress(host).has_value()) return Family::kName;
  return absl::StrContains(host, ':') ? Family::kIpv6 : Family::kIpv4;
}

}  // namespace

absl::StatusOr<CollectorAddress> ParseCollectorAddress(absl::string_view entry) {
  auto invalid = [entry](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected host:port, got '", entry, "'", why.empty() ? "" : ": ", why));
  };
  const size_t colon = entry.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return invalid("");
  uint32_t port = 0;
  if (!absl::SimpleAtoi(entry.substr(colon + 1), &port) || port == 0 || port > 65535) {
    return invalid("the port is 1 to 65535");
  }
  absl::string_view host = entry.substr(0, colon);
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
    if (!ParseIpAddress(host).has_value() || !absl::StrContains(host, ':')) {
      return invalid("brackets hold an IPv6 address");
    }
  } else if (absl::StrContains(host, ':')) {
    return invalid("an IPv6 address goes in brackets, [fd00::5]:7443");
  }
  for (char ch : host) {
    if (ch == ',' || ch == '/' || ch == ' ' || ch == '[' || ch == ']') {
      return invalid("one address per entry, without a scheme");
    }
  }
  if (host.empty()) return invalid("");
  return CollectorAddress{std::string(host), port};
}

absl::StatusOr<std::string> CollectorTarget(const std::vector<std::string>& entries,
                                            absl::string_view what, size_t first) {
  if (entries.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": required"));
  std::vector<CollectorAddress> addresses;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto address = ParseCollectorAddress(entries[i]);
    if (!address.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, "[", i, "]: ", address.status().message()));
    }
    addresses.push_back(*std::move(address));
  }
  if (entries.size() == 1) return entries[0];
  const Family family = FamilyOf(addresses[0].host);
  for (size_t i = 0; i < addresses.size(); ++i) {
    const Family f = FamilyOf(addresses[i].host);
    if (f == Family::kName) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, "[", i, "]: '", entries[i],
          "': several collectors are listed by IP address; for a host name give one entry "
          "whose DNS records list every collector"));
    }
    if (f != family) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, "[", i, "]: '", entries[i],
                       "': the list mixes IPv4 and IPv6 addresses; use one family"));
    }
  }
  std::vector<std::string> parts;
  for (size_t k = 0; k < addresses.size(); ++k) {
    const CollectorAddress& a = addresses[(first + k) % addresses.size()];
    parts.push_back(family == Family::kIpv6 ? absl::StrCat("[", a.host, "]:", a.port)
                                            : absl::StrCat(a.host, ":", a.port));
  }
  return absl::StrCat(family == Family::kIpv6 ? "ipv6:" : "ipv4:", absl::StrJoin(parts, ","));
}

}  // namespace smbfleet::agent

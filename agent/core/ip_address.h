#ifndef SMBFLEET_AGENT_CORE_IP_ADDRESS_H_
#define SMBFLEET_AGENT_CORE_IP_ADDRESS_H_

// IP addresses as the agent compares them: 16 bytes (IPv4 as IPv4-mapped IPv6) and one text form,
// the same on every platform without the socket API, so that an address from smbstatus or a
// cmdlet and one from the kernel's TCP table compare equal.

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace smbfleet::agent {

using IpBytes = std::array<uint8_t, 16>;

// "10.0.0.5", "fe80::1", "fe80::1%12" (the zone is dropped), "::ffff:10.0.0.5"; IPv4 comes back
// IPv4-mapped. nullopt for anything else (a host name, "[::1]" with its brackets).
std::optional<IpBytes> ParseIpAddress(absl::string_view text);

// inet_ntop's form (RFC 5952: lowercase, the longest run of zero groups as "::"), IPv4-mapped
// addresses as plain IPv4.
std::string FormatIpAddress(const IpBytes& address);

// FormatIpAddress(ParseIpAddress(text)), or `text` unchanged when it is not an address.
std::string CanonicalIpAddress(absl::string_view text);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_IP_ADDRESS_H_

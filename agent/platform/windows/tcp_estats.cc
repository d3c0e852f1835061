#include "agent/platform/windows/tcp_estats.h"

#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/core/ip_address.h"

namespace smbfleet::agent::windows {
namespace {

// Win32 error codes (winerror.h) the reads return.
constexpr uint32_t kErrorAccessDenied = 5;
constexpr uint32_t kErrorNotEnoughMemory = 8;
constexpr uint32_t kErrorNotSupported = 50;
constexpr uint32_t kErrorInvalidParameter = 87;
constexpr uint32_t kErrorCallNotImplemented = 120;
constexpr uint32_t kErrorInsufficientBuffer = 122;
constexpr uint32_t kErrorNotFound = 1168;

std::string AddressText(const uint8_t* raw, bool ipv6) {
  IpBytes bytes{};
  if (ipv6) {
    std::memcpy(bytes.data(), raw, 16);
  } else {
    bytes[10] = 0xff;
    bytes[11] = 0xff;
    std::memcpy(bytes.data() + 12, raw, 4);
  }
  return FormatIpAddress(bytes);
}

// The tables' port DWORD holds the port in network byte order in its low 16 bits.
uint16_t PortOf(uint32_t raw) {
  return static_cast<uint16_t>(((raw & 0xff) << 8) | ((raw >> 8) & 0xff));
}

std::optional<uint32_t> Microseconds(uint32_t ms) {
  if (ms > std::numeric_limits<uint32_t>::max() / 1000) return std::nullopt;  // no sample
  return ms * 1000;
}

absl::Status ErrorStatus(uint32_t code, const std::string& message) {
  switch (code) {
    case kErrorAccessDenied:
      return absl::PermissionDeniedError(message);
    case kErrorNotSupported:
    case kErrorCallNotImplemented:
      return absl::UnimplementedError(message);
    default:
      return absl::InternalError(message);
  }
}

class EstatsTcpStats : public TcpStats {
 public:
  explicit EstatsTcpStats(shim::TcpEstatsRead (*read)(const std::vector<uint16_t>&))
      : read_(read) {}
  absl::StatusOr<std::vector<TcpConnection>> Connections(
      const std::vector<uint16_t>& local_ports) override {
    return ConnectionsFromEstats(read_(local_ports));
  }

 private:
  shim::TcpEstatsRead (*read_)(const std::vector<uint16_t>&);
};

}  // namespace

std::string DescribeWin32Error(uint32_t code) {
  const char* what = nullptr;
  switch (code) {
    case kErrorAccessDenied:
      what = "access denied: the agent must run as an administrator or LocalSystem";
      break;
    case kErrorNotEnoughMemory:
      what = "not enough memory";
      break;
    case kErrorNotSupported:
      what = "not supported";
      break;
    case kErrorInvalidParameter:
      what = "invalid parameter";
      break;
    case kErrorCallNotImplemented:
      what = "not implemented on this system";
      break;
    case kErrorInsufficientBuffer:
      what = "insufficient buffer";
      break;
    case kErrorNotFound:
      what = "not found";
      break;
    default:
      break;
  }
  return what == nullptr ? absl::StrCat(code) : absl::StrCat(code, " (", what, ")");
}

absl::StatusOr<std::vector<TcpConnection>> ConnectionsFromEstats(const shim::TcpEstatsRead& read) {
  if (read.error != 0) {
    return ErrorStatus(read.error,
                       absl::StrCat(kTcpEstatsProbe.name, ": ", read.error_call, ": Windows error ",
                                    DescribeWin32Error(read.error)));
  }
  std::vector<TcpConnection> out;
  for (const shim::TcpEstatsRow& row : read.rows) {
    if (row.error == kErrorNotFound) continue;  // closed since the table was read
    TcpConnection c;
    c.local_address = AddressText(row.local_address, row.ipv6);
    c.local_port = PortOf(row.local_port_raw);
    c.remote_address = AddressText(row.remote_address, row.ipv6);
    c.remote_port = PortOf(row.remote_port_raw);
    if (row.error != 0) {
      std::string peer = row.ipv6 ? absl::StrCat("[", c.remote_address, "]:", c.remote_port)
                                  : absl::StrCat(c.remote_address, ":", c.remote_port);
      c.status = ErrorStatus(row.error,
                             absl::StrCat(kTcpEstatsProbe.name, ": ", peer, ": ", row.error_call,
                                          ": Windows error ", DescribeWin32Error(row.error)));
    } else if (row.have_path) {
      // Counted since collection was switched on (by this agent, or before it).
      c.retransmits = row.pkts_retrans;
      if (row.count_rtt > 0) {
        c.rtt_us = Microseconds(row.smoothed_rtt_ms);
        c.rttvar_us = Microseconds(row.rtt_var_ms);
        c.min_rtt_us = Microseconds(row.min_rtt_ms);
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::unique_ptr<TcpStats> NewEstatsTcpStats(
    shim::TcpEstatsRead (*read)(const std::vector<uint16_t>& local_ports)) {
  return std::make_unique<EstatsTcpStats>(read);
}

}  // namespace smbfleet::agent::windows

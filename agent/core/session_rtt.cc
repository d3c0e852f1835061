#include "agent/core/session_rtt.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/core/ip_address.h"

namespace smbfleet::agent {
namespace {

// At most this many per-connection read failures are listed; the rest are counted.
constexpr size_t kMaxConnectionErrors = 10;

void CopyTimes(const TcpConnection& c, smbfleet::v1::Session* session) {
  if (c.rtt_us) session->set_rtt_us(*c.rtt_us);
  if (c.rttvar_us) session->set_rttvar_us(*c.rttvar_us);
  if (c.min_rtt_us) session->set_min_rtt_us(*c.min_rtt_us);
  if (c.retransmits) session->set_retransmits(*c.retransmits);
  if (c.delivery_rate_bytes_per_sec) {
    session->set_delivery_rate_bytes_per_sec(*c.delivery_rate_bytes_per_sec);
  }
}

}  // namespace

std::string TcpStatsProbeCode(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case absl::StatusCode::kUnimplemented:
      return "UNSUPPORTED";  // no TCP statistics on this kernel or build
    default:
      return ProbeCodeOf(status);
  }
}

void MatchSessionRoundTrips(const std::vector<TcpConnection>& connections, PeerMatch match,
                            const Probe& probe, smbfleet::v1::Posture* posture) {
  std::map<std::pair<std::string, uint32_t>, const TcpConnection*> by_peer;
  std::map<std::string, std::vector<const TcpConnection*>> by_address;
  for (const auto& c : connections) {
    std::string address = CanonicalIpAddress(c.remote_address);
    by_peer[{address, c.remote_port}] = &c;
    by_address[address].push_back(&c);
  }
  std::set<std::pair<std::string, std::string>> failures;  // (code, message), listed once
  for (auto& session : *posture->mutable_sessions()) {
    if (session.client_address().empty()) continue;
    std::string address = CanonicalIpAddress(session.client_address());
    const TcpConnection* c = nullptr;
    if (session.client_port() != 0) {
      auto it = by_peer.find({address, session.client_port()});
      if (it != by_peer.end()) c = it->second;
    } else if (match == PeerMatch::kAddressOrUniqueAddress) {
      auto it = by_address.find(address);
      if (it != by_address.end() && it->second.size() == 1) c = it->second.front();
    }
    if (c == nullptr) continue;  // closed since the session list, or not told apart
    if (!c->status.ok()) {
      failures.insert({TcpStatsProbeCode(c->status), std::string(c->status.message())});
      continue;
    }
    CopyTimes(*c, &session);
  }
  size_t listed = 0;
  for (const auto& [code, message] : failures) {
    if (listed++ == kMaxConnectionErrors) {
      AddProbeError(posture, probe, "ERROR",
                    absl::StrCat(failures.size() - kMaxConnectionErrors,
                                 " more connections whose statistics could not be read"));
      break;
    }
    AddProbeError(posture, probe, code, message);
  }
}

void FillSessionRoundTrips(TcpStats* tcp_stats, const std::vector<uint16_t>& local_ports,
                           PeerMatch match, const Probe& probe, smbfleet::v1::Posture* posture) {
  if (tcp_stats == nullptr || posture->sessions().empty()) return;
  absl::StatusOr<std::vector<TcpConnection>> connections = tcp_stats->Connections(local_ports);
  if (!connections.ok()) {
    AddProbeError(posture, probe, TcpStatsProbeCode(connections.status()),
                  connections.status().message());
    return;
  }
  MatchSessionRoundTrips(*connections, match, probe, posture);
}

}  // namespace smbfleet::agent

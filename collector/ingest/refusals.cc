#include "collector/ingest/refusals.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/string_view.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

// The kinds the agents give refusals (agent/platform/*/events, samba_logs).
constexpr absl::string_view kRefusalKinds[] = {
    "unencrypted_rejected",       // 1003
    "negotiate_rejected",         // 1005
    "smb1_access",                // 3000
    "smb1_rejected",              // 1001
    "client_no_signing",          // 3021 / 3022
    "client_no_encryption",       // 3021 / 3022, Samba "encryption is required"
    "client_capability_audit",    // 3021 / 3022 without a telling message
    "bad_signature_rejected",     // 1004
    "signing_validation_failed",  // 31013
    "guest_logon_rejected",       // 31017
};

constexpr uint32_t kRefusalIds[] = {1003, 1005, 3000, 3021, 3022, 31013, 31017};

}  // namespace

bool IsRefusalEvent(const smbfleet::v1::Event& event) {
  if (!event.kind().empty()) {
    return std::find(std::begin(kRefusalKinds), std::end(kRefusalKinds), event.kind()) !=
           std::end(kRefusalKinds);
  }
  return std::find(std::begin(kRefusalIds), std::end(kRefusalIds), event.event_id()) !=
         std::end(kRefusalIds);
}

std::vector<SeenRefusal> RefusalsIn(const smbfleet::v1::Posture& posture) {
  std::vector<SeenRefusal> out;
  for (const auto& e : posture.events()) {
    if (!IsRefusalEvent(e)) continue;
    SeenRefusal r;
    r.client = e.client_name().empty() ? e.client_address() : e.client_name();
    r.at = absl::FromUnixNanos(google::protobuf::util::TimeUtil::TimestampToNanoseconds(e.time()));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace smbfleet::collector

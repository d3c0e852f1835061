#ifndef SMBFLEET_COMMON_POSTURE_DIGEST_H_
#define SMBFLEET_COMMON_POSTURE_DIGEST_H_

// The digest that says whether a host's posture changed. The agent and the collector compute it
// alike: the agent sends only the digest of a posture the collector already holds.

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet {

// SHA-256 of the bytes, in hex.
std::string Sha256Hex(absl::string_view bytes);

// The message serialised deterministically (map entries in key order).
std::string DeterministicBytes(const google::protobuf::MessageLite& message);

// A stable digest (SHA-256, hex) of what a posture says, ignoring when it was collected and
// counters that move on their own (session ages, smoothed round-trip times, retransmits and
// delivery rates), so that an unchanged host is recognised. A session's lowest round-trip time
// counts in whole milliseconds: policy reads it, yet it falls by microseconds as a new
// connection's samples come in.
// Probe errors are part of it (a probe that starts or stops failing is a change), except those of
// the load counters (kLoadCountersProbe).
std::string PostureDigest(const smbfleet::v1::Posture& posture);

// The probe of the agent's unreadable load counters (docs/agent-changes.md), which the digest
// leaves out.
inline constexpr absl::string_view kLoadCountersProbe = "counters";

// Whether `text` has the form of a PostureDigest: 64 lower-case hex digits.
bool IsPostureDigest(absl::string_view text);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_POSTURE_DIGEST_H_

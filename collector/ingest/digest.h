#ifndef SMBFLEET_COLLECTOR_INGEST_DIGEST_H_
#define SMBFLEET_COLLECTOR_INGEST_DIGEST_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "smbfleet/v1/policy.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::collector {

// SHA-256 of the bytes, in hex.
std::string Sha256Hex(absl::string_view bytes);

// A stable digest (SHA-256, hex) of what a posture says, ignoring when it was collected and
// counters that move on their own (session ages, smoothed round-trip times, retransmits and
// delivery rates), so that an unchanged host is recognised. A session's lowest round-trip time
// counts: policy reads it.
std::string PostureDigest(const smbfleet::v1::Posture& posture);

// A digest of everything a host's evaluation depends on: its posture (by PostureDigest), the
// policy (name, version and the digest of its text) and the waivers in force (in any order).
// policy::EvaluateHost reads the clock only to decide which waivers are in force (no rule looks at
// event ages, session ages or collection time), so an equal key means equal results and evaluation
// can be skipped.
std::string EvaluationKey(absl::string_view posture_digest, absl::string_view policy_name,
                          absl::string_view policy_version, absl::string_view policy_source_digest,
                          absl::Span<const smbfleet::v1::Waiver> waivers_in_force);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_INGEST_DIGEST_H_

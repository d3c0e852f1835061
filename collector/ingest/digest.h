#ifndef SMBFLEET_COLLECTOR_INGEST_DIGEST_H_
#define SMBFLEET_COLLECTOR_INGEST_DIGEST_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/posture_digest.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet::collector {

// The agent computes posture digests too (common/posture_digest.h).
using ::smbfleet::PostureDigest;
using ::smbfleet::Sha256Hex;

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

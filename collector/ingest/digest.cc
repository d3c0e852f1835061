#include "collector/ingest/digest.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace smbfleet::collector {

std::string EvaluationKey(absl::string_view posture_digest, absl::string_view policy_name,
                          absl::string_view policy_version, absl::string_view policy_source_digest,
                          absl::Span<const smbfleet::v1::Waiver> waivers_in_force) {
  std::vector<const smbfleet::v1::Waiver*> waivers;
  for (const auto& w : waivers_in_force) waivers.push_back(&w);
  std::sort(waivers.begin(), waivers.end(),
            [](const auto* a, const auto* b) { return a->id() < b->id(); });
  // Length-prefixed parts, so that no two different inputs concatenate alike.
  std::string input;
  for (absl::string_view part :
       {posture_digest, policy_name, policy_version, policy_source_digest}) {
    absl::StrAppend(&input, part.size(), ":", part);
  }
  for (const auto* w : waivers) {
    const std::string bytes = DeterministicBytes(*w);
    absl::StrAppend(&input, bytes.size(), ":", bytes);
  }
  return Sha256Hex(input);
}

}  // namespace smbfleet::collector

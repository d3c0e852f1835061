#include "collector/ingest/digest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace smbfleet::collector {

std::string Sha256Hex(absl::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), len));
}

namespace {

std::string DeterministicBytes(const google::protobuf::MessageLite& message) {
  std::string bytes;
  message.ByteSizeLong();  // caches the sizes that SerializeWithCachedSizes uses
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    out.SetSerializationDeterministic(true);
    message.SerializeWithCachedSizes(&out);
  }
  return bytes;
}

}  // namespace

std::string PostureDigest(const smbfleet::v1::Posture& posture) {
  smbfleet::v1::Posture copy = posture;
  copy.clear_collected_at();
  // Benchmarks are a time series of their own (host_benchmarks), stored with every report.
  copy.clear_benchmarks();
  for (auto& s : *copy.mutable_sessions()) {
    s.clear_seconds_exists();
    s.clear_seconds_idle();
    // They move with every report of a busy session. min_rtt_us stays: a rule reads it, and it
    // only falls over a connection's life.
    s.clear_rtt_us();
    s.clear_rttvar_us();
    s.clear_retransmits();
    s.clear_delivery_rate_bytes_per_sec();
  }
  return Sha256Hex(DeterministicBytes(copy));
}

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

#include "common/posture_digest.h"

#include <openssl/evp.h>

#include <algorithm>

#include "absl/strings/escaping.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace smbfleet {

std::string Sha256Hex(absl::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), len));
}

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

std::string PostureDigest(const smbfleet::v1::Posture& posture) {
  smbfleet::v1::Posture copy = posture;
  copy.clear_collected_at();
  // Benchmarks are a time series of their own (host_benchmarks), stored with every full report.
  copy.clear_benchmarks();
  for (auto& s : *copy.mutable_sessions()) {
    s.clear_seconds_exists();
    s.clear_seconds_idle();
    // They move with every report of a busy session.
    s.clear_rtt_us();
    s.clear_rttvar_us();
    s.clear_retransmits();
    s.clear_delivery_rate_bytes_per_sec();
    // The lowest round-trip time stays, in whole milliseconds: a rule reads it (in
    // milliseconds), and it only falls over a connection's life, by microseconds each time a
    // new connection's echoes bring a lower sample (every few seconds for a while on a LAN).
    // A Windows host measures whole milliseconds anyway.
    if (s.has_min_rtt_us()) s.set_min_rtt_us(s.min_rtt_us() / 1000 * 1000);
  }
  // Load counters the agent could not read say nothing of the posture and come and go with the
  // host's load (docs/agent-changes.md); the next changed posture carries them.
  auto* errors = copy.mutable_probe_errors();
  errors->erase(std::remove_if(errors->begin(), errors->end(),
                               [](const smbfleet::v1::ProbeError& e) {
                                 return e.probe() == kLoadCountersProbe;
                               }),
                errors->end());
  return Sha256Hex(DeterministicBytes(copy));
}

bool IsPostureDigest(absl::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace smbfleet

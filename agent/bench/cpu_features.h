#ifndef SMBFLEET_AGENT_BENCH_CPU_FEATURES_H_
#define SMBFLEET_AGENT_BENCH_CPU_FEATURES_H_

#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::bench {

// The flags of a Linux /proc/cpuinfo text (first processor block): "aes", "pclmulqdq", "vaes",
// "vpclmulqdq", "sha_ni", "avx2", "avx512f", and "model name". Fields stay unset when the text
// has no x86 "flags" line (e.g. ARM, or an empty file).
smbfleet::v1::CpuFeatures CpuFeaturesFromCpuinfo(absl::string_view cpuinfo);

// On x86: CPUID (AVX2/AVX-512 only when the OS enabled their state, per XGETBV) and the brand
// string. Elsewhere: /proc/cpuinfo when readable; otherwise everything unset.
smbfleet::v1::CpuFeatures DetectCpuFeatures();

}  // namespace smbfleet::agent::bench

#endif  // SMBFLEET_AGENT_BENCH_CPU_FEATURES_H_

#include "agent/bench/cpu_features.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define SMBFLEET_HAVE_CPUID 1
#endif

namespace smbfleet::agent::bench {
namespace {

absl::string_view FieldValue(absl::string_view line) {
  size_t colon = line.find(':');
  if (colon == absl::string_view::npos) {
    return {};
  }
  return absl::StripAsciiWhitespace(line.substr(colon + 1));
}

absl::string_view FieldName(absl::string_view line) {
  size_t colon = line.find(':');
  return absl::StripAsciiWhitespace(line.substr(0, colon));
}

#ifdef SMBFLEET_HAVE_CPUID
uint64_t ReadXcr0() {
  uint32_t eax = 0;
  uint32_t edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

smbfleet::v1::CpuFeatures FromCpuid() {
  smbfleet::v1::CpuFeatures features;
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) {
    return features;
  }
  features.set_aes_ni((ecx & (1u << 25)) != 0);
  features.set_pclmulqdq((ecx & (1u << 1)) != 0);
  bool osxsave = (ecx & (1u << 27)) != 0;
  uint64_t xcr0 = osxsave ? ReadXcr0() : 0;
  bool os_avx = (xcr0 & 0x6) == 0x6;                 // XMM and YMM state
  bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  unsigned int max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf >= 7) {
    unsigned int b7 = 0, c7 = 0, d7 = 0, a7 = 0;
    __cpuid_count(7, 0, a7, b7, c7, d7);
    features.set_avx2(os_avx && (b7 & (1u << 5)) != 0);
    features.set_avx512f(os_avx512 && (b7 & (1u << 16)) != 0);
    features.set_sha_ni((b7 & (1u << 29)) != 0);
    features.set_vaes(os_avx && (c7 & (1u << 9)) != 0);
    features.set_vpclmulqdq(os_avx && (c7 & (1u << 10)) != 0);
  }
  // GCC's cpuid.h returns unsigned int here and clang's int: one type for both.
  const auto max_extended_leaf = static_cast<unsigned int>(__get_cpuid_max(0x80000000u, nullptr));
  if (max_extended_leaf >= 0x80000004u) {
    char brand[49] = {0};
    for (unsigned int i = 0; i < 3; ++i) {
      unsigned int r[4] = {0, 0, 0, 0};
      __get_cpuid(0x80000002u + i, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * i, r, 16);
    }
    features.set_model(std::string(absl::StripAsciiWhitespace(brand)));
  }
  return features;
}
#endif

}  // namespace

smbfleet::v1::CpuFeatures CpuFeaturesFromCpuinfo(absl::string_view cpuinfo) {
  smbfleet::v1::CpuFeatures features;
  bool have_flags = false;
  std::set<absl::string_view> flags;
  for (absl::string_view line : absl::StrSplit(cpuinfo, '\n')) {
    if (absl::StripAsciiWhitespace(line).empty() && (have_flags || !features.model().empty())) {
      break;  // end of the first processor block
    }
    absl::string_view name = FieldName(line);
    if (name == "model name" && features.model().empty()) {
      features.set_model(std::string(FieldValue(line)));
    } else if (name == "flags" && !have_flags) {
      have_flags = true;
      for (absl::string_view flag : absl::StrSplit(FieldValue(line), ' ', absl::SkipEmpty())) {
        flags.insert(flag);
      }
    }
  }
  if (!have_flags) {
    return features;
  }
  features.set_aes_ni(flags.count("aes") > 0);
  features.set_pclmulqdq(flags.count("pclmulqdq") > 0);
  features.set_vaes(flags.count("vaes") > 0);
  features.set_vpclmulqdq(flags.count("vpclmulqdq") > 0);
  features.set_sha_ni(flags.count("sha_ni") > 0);
  features.set_avx2(flags.count("avx2") > 0);
  features.set_avx512f(flags.count("avx512f") > 0);
  return features;
}

smbfleet::v1::CpuFeatures DetectCpuFeatures() {
#ifdef SMBFLEET_HAVE_CPUID
  return FromCpuid();
#else
  std::ifstream in("/proc/cpuinfo");
  if (!in) {
    return {};
  }
  std::stringstream text;
  text << in.rdbuf();
  return CpuFeaturesFromCpuinfo(text.str());
#endif
}

}  // namespace smbfleet::agent::bench

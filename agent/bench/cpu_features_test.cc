#include "agent/bench/cpu_features.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace smbfleet::agent::bench {
namespace {

TEST(CpuFeaturesTest, ParsesFirstProcessorBlock) {
  const std::string cpuinfo =
      "processor\t: 0\n"
      "vendor_id\t: AuthenticAMD\n"
      "model name\t: AMD EPYC 9R14 96-Core Processor\n"
      "flags\t\t: fpu sse2 pclmulqdq aes avx2 sha_ni vaes vpclmulqdq\n"
      "\n"
      "processor\t: 1\n"
      "model name\t: Something Else\n"
      "flags\t\t: fpu avx512f\n";
  smbfleet::v1::CpuFeatures f = CpuFeaturesFromCpuinfo(cpuinfo);
  EXPECT_EQ(f.model(), "AMD EPYC 9R14 96-Core Processor");
  ASSERT_TRUE(f.has_aes_ni());
  EXPECT_TRUE(f.aes_ni());
  EXPECT_TRUE(f.pclmulqdq());
  EXPECT_TRUE(f.vaes());
  EXPECT_TRUE(f.vpclmulqdq());
  EXPECT_TRUE(f.sha_ni());
  EXPECT_TRUE(f.avx2());
  ASSERT_TRUE(f.has_avx512f());
  EXPECT_FALSE(f.avx512f());  // only in the second block
}

TEST(CpuFeaturesTest, FlagsAreWholeWords) {
  // "vaes" must not make "aes" true, nor "vpclmulqdq" make "pclmulqdq" true.
  smbfleet::v1::CpuFeatures f =
      CpuFeaturesFromCpuinfo("model name : X\nflags : vaes vpclmulqdq avx512fp16\n");
  EXPECT_FALSE(f.aes_ni());
  EXPECT_FALSE(f.pclmulqdq());
  EXPECT_TRUE(f.vaes());
  EXPECT_FALSE(f.avx512f());
}

TEST(CpuFeaturesTest, NoFlagsLineLeavesFlagsUnknown) {
  for (const char* text : {"", "processor : 0\nFeatures : fp asimd aes pmull sha2\n",
                           "garbage without colons\n\n\n"}) {
    SCOPED_TRACE(text);
    smbfleet::v1::CpuFeatures f = CpuFeaturesFromCpuinfo(text);
    EXPECT_FALSE(f.has_aes_ni());
    EXPECT_FALSE(f.has_pclmulqdq());
    EXPECT_FALSE(f.has_sha_ni());
  }
}

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
// CPUID and the kernel's view of the same CPU must agree on the crypto flags.
TEST(CpuFeaturesTest, CpuidAgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) {
    GTEST_SKIP() << "no /proc/cpuinfo";
  }
  std::stringstream text;
  text << in.rdbuf();
  smbfleet::v1::CpuFeatures kernel = CpuFeaturesFromCpuinfo(text.str());
  smbfleet::v1::CpuFeatures cpuid = DetectCpuFeatures();
  ASSERT_TRUE(cpuid.has_aes_ni());
  EXPECT_EQ(cpuid.aes_ni(), kernel.aes_ni());
  EXPECT_EQ(cpuid.pclmulqdq(), kernel.pclmulqdq());
  EXPECT_EQ(cpuid.sha_ni(), kernel.sha_ni());
  EXPECT_EQ(cpuid.avx2(), kernel.avx2());
  EXPECT_EQ(cpuid.vaes(), kernel.vaes());
  EXPECT_EQ(cpuid.vpclmulqdq(), kernel.vpclmulqdq());
}
#endif

}  // namespace
}  // namespace smbfleet::agent::bench

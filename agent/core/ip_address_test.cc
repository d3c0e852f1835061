#include "agent/core/ip_address.h"

#include <arpa/inet.h>

#include <cstring>

#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

// The C library's text form of an address, IPv4-mapped as plain IPv4 (what sock_diag reports).
std::string LibcForm(const std::string& text) {
  unsigned char raw[16];
  char out[INET6_ADDRSTRLEN] = {};
  if (inet_pton(AF_INET, text.c_str(), raw) == 1) return inet_ntop(AF_INET, raw, out, sizeof(out));
  if (inet_pton(AF_INET6, text.c_str(), raw) != 1) return "<invalid>";
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(raw, kMapped, sizeof(kMapped)) == 0) {
    return inet_ntop(AF_INET, raw + 12, out, sizeof(out));
  }
  return inet_ntop(AF_INET6, raw, out, sizeof(out));
}

TEST(IpAddressTest, SameTextAsTheCLibrary) {
  for (const char* text : {"10.0.0.5",
                           "127.0.0.1",
                           "0.0.0.0",
                           "255.255.255.255",
                           "::",
                           "::1",
                           "fe80::1",
                           "FE80:0:0:0:C8C0:F65D:3BC6:7313",
                           "fd00:0:0::0009",
                           "::ffff:10.0.0.9",
                           "::FFFF:a00:9",
                           "2001:db8::1:0:0:1",
                           "2001:db8:0:0:1:0:0:1",
                           "2001:0:0:1:0:0:0:1",
                           "1:0:1:0:1:0:1:0",
                           "2001:db8:85a3:8d3:1319:8a2e:370:7348",
                           "1::",
                           "1:2:3:4:5:6:7::",
                           "::2:3:4:5:6:7:8",
                           "64:ff9b::192.0.2.33"}) {
    EXPECT_EQ(CanonicalIpAddress(text), LibcForm(text)) << text;
  }
}

TEST(IpAddressTest, ZoneDroppedMappedAsIpv4) {
  EXPECT_EQ(CanonicalIpAddress("fe80::c8c0:f65d:3bc6:7313%12"), "fe80::c8c0:f65d:3bc6:7313");
  auto mapped = ParseIpAddress("10.1.2.3");
  ASSERT_TRUE(mapped.has_value());
  EXPECT_EQ((*mapped)[10], 0xff);
  EXPECT_EQ((*mapped)[12], 10);
  EXPECT_EQ((*mapped)[15], 3);
}

TEST(IpAddressTest, NotAnAddressStaysAsItIs) {
  for (const char* text : {"", "LAPTOP-7", "[::1]", "10.0.0", "10.0.0.256", "10.0.0.1.2",
                           "1.2.3.-4", "1:2:3:4:5:6:7:8:9", "1::2::3", ":::", "12345::", "fe80::1%",
                           "::g", "1:2:3:4:5:6:7", ":1:2:3:4:5:6:7", "1.2.3.4:"}) {
    EXPECT_FALSE(ParseIpAddress(text).has_value()) << text;
    EXPECT_EQ(CanonicalIpAddress(text), text);
    EXPECT_EQ(LibcForm(text), "<invalid>") << text;  // the C library refuses them too
  }
}

}  // namespace
}  // namespace smbfleet::agent

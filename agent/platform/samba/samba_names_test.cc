#include "agent/platform/samba/samba_names.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::samba {
namespace {

using ::testing::HasSubstr;

TEST(SambaNamesTest, Dialects) {
  struct Case {
    const char* samba;
    v1::Dialect want;
  };
  const Case cases[] = {
      {"NT1", v1::DIALECT_SMB1},          {"LANMAN2", v1::DIALECT_SMB1},
      {"SMB2_02", v1::DIALECT_SMB_2_0_2}, {"SMB2_10", v1::DIALECT_SMB_2_1},
      {"SMB2", v1::DIALECT_SMB_2_1},      {"SMB3_00", v1::DIALECT_SMB_3_0},
      {"SMB3_02", v1::DIALECT_SMB_3_0_2}, {"smb3_11", v1::DIALECT_SMB_3_1_1},
      {"SMB3", v1::DIALECT_SMB_3_1_1},    {"SMB4", v1::DIALECT_UNSPECIFIED},
      {"", v1::DIALECT_UNSPECIFIED},
  };
  for (const Case& c : cases) EXPECT_EQ(DialectFromSamba(c.samba), c.want) << c.samba;
}

TEST(SambaNamesTest, ProtocolNamesRoundTrip) {
  for (v1::Dialect d : {v1::DIALECT_SMB1, v1::DIALECT_SMB_2_0_2, v1::DIALECT_SMB_2_1,
                        v1::DIALECT_SMB_3_0, v1::DIALECT_SMB_3_0_2, v1::DIALECT_SMB_3_1_1}) {
    EXPECT_EQ(DialectFromSamba(SambaProtocolName(d)), d) << SambaProtocolName(d);
  }
  EXPECT_EQ(SambaProtocolName(v1::DIALECT_UNSPECIFIED), "");
}

TEST(SambaNamesTest, Crypto) {
  EXPECT_EQ(CryptoFromSamba("AES-128-GMAC"), v1::AES_128_GMAC);
  EXPECT_EQ(CryptoFromSamba("aes-256-gcm"), v1::AES_256_GCM);
  EXPECT_EQ(CryptoFromSamba("HMAC-SHA256"), v1::HMAC_SHA256);
  EXPECT_EQ(CryptoFromSamba("HMAC-MD5"), v1::HMAC_MD5);
  EXPECT_EQ(CryptoFromSamba("AES-128-CCM"), v1::AES_128_CCM);
  EXPECT_EQ(CryptoFromSamba("???"), std::nullopt);
  EXPECT_EQ(CryptoFromSamba("-"), std::nullopt);
  EXPECT_EQ(CryptoFromSamba("AES-999-XYZ"), std::nullopt);
}

TEST(SambaNamesTest, Degrees) {
  EXPECT_EQ(ProtectionFromDegree("none"), v1::PROTECTION_NONE);
  EXPECT_EQ(ProtectionFromDegree("partial"), v1::PROTECTION_PARTIAL);
  EXPECT_EQ(ProtectionFromDegree("full"), v1::PROTECTION_FULL);
  EXPECT_EQ(ProtectionFromDegree("fully"), v1::PROTECTION_UNSPECIFIED);
}

TEST(SambaNamesTest, ShareNames) {
  for (const char* ok : {"demo", "finance", "IPC$", "Team Share", "a.b-c_d"}) {
    EXPECT_TRUE(ValidateShareName(ok).ok()) << ok;
  }
  struct Bad {
    std::string name;
    const char* why;
  };
  const Bad bad[] = {
      {"", "empty"},
      {"demo]\n[evil", "']'"},
      {"evil\n[global]", "0x0a"},
      {"demo]", "']'"},
      {"[global", "'['"},
      {"x\ninclude = /tmp/evil.conf", "0x0a"},
      {"include = /etc/passwd", "'='"},
      {"../../etc", "'/'"},
      {"..", "not allowed"},
      {"%S", "'%'"},
      {" demo", "leading or trailing space"},
      {std::string(81, 'a'), "81 bytes, limit 80"},
      {std::string("de\0mo", 5), "0x00"},
  };
  for (const Bad& b : bad) {
    absl::Status s = ValidateShareName(b.name);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.name;
    EXPECT_THAT(s.message(), HasSubstr(b.why)) << b.name;
  }
}

}  // namespace
}  // namespace smbfleet::agent::samba

#include "common/json.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(JsonTest, ContractNamesAndRoundTrip) {
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname("fs01");
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_WINDOWS);
  p.mutable_server()->set_require_signing(false);  // known false
  p.mutable_server()->set_name_hardening_level(1);
  auto* s = p.add_sessions();
  s->set_session_id("8813272891441");
  s->set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
  s->set_signing(smbfleet::v1::PROTECTION_FULL);
  auto* b = p.add_benchmarks();
  b->set_algorithm(smbfleet::v1::AES_128_GCM);
  b->set_buffer_bytes(65536);
  auto json = ToJson(p);
  ASSERT_TRUE(json.ok());
  // lowerCamelCase names and enums by name, as DESIGN.md's contract says.
  EXPECT_THAT(*json, HasSubstr("\"requireSigning\": false"));
  EXPECT_THAT(*json, HasSubstr("\"nameHardeningLevel\": 1"));
  EXPECT_THAT(*json, HasSubstr("\"platform\": \"PLATFORM_WINDOWS\""));
  EXPECT_THAT(*json, HasSubstr("\"dialect\": \"DIALECT_SMB_3_1_1\""));
  EXPECT_THAT(*json, HasSubstr("\"algorithm\": \"AES_128_GCM\""));
  EXPECT_THAT(*json, HasSubstr("\"bufferBytes\": \"65536\""));
  // Unknown stays absent, not false.
  EXPECT_THAT(*json, Not(HasSubstr("encryptData")));

  smbfleet::v1::Posture back;
  ASSERT_TRUE(FromJson(*json, "posture.json", &back).ok());
  EXPECT_TRUE(back.server().has_require_signing());
  EXPECT_FALSE(back.server().require_signing());
  EXPECT_FALSE(back.server().has_encrypt_data());
  EXPECT_EQ(back.SerializeAsString(), p.SerializeAsString());
}

TEST(JsonTest, MalformedJsonNamesTheInput) {
  smbfleet::v1::Posture p;
  auto s = FromJson("{\"host\": {\"hostname\": 3", "fs01.json", &p);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("fs01.json"));
}

TEST(JsonTest, UnknownFieldsAreAnErrorUnlessAllowed) {
  smbfleet::v1::Posture p;
  EXPECT_FALSE(FromJson("{\"colour\": 1}", "x.json", &p).ok());
  EXPECT_TRUE(FromJson("{\"colour\": 1}", "x.json", &p, /*ignore_unknown=*/true).ok());
}

}  // namespace
}  // namespace smbfleet

// What IdentityFromPem reads from a real certificate made by the openssl tool.

#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/testing/temp_dir.h"
#include "common/tls.h"
#include "gtest/gtest.h"

namespace smbfleet {
namespace {

class PeerIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = smbfleet::testing::MakeTestDir("smbfleet-identity"); }
  void TearDown() override { (void)std::system(("rm -rf " + dir_).c_str()); }

  // A self-signed EC certificate with this subject and optional extension ("" for none).
  std::string MakeCert(const std::string& subject, const std::string& ext,
                       const std::string& serial = "0x00ab12") {
    std::string cmd = absl::StrCat(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 -subj '",
        subject, "' -set_serial ", serial, " -keyout ", dir_, "/k.pem -out ", dir_, "/c.pem ",
        ext.empty() ? "" : absl::StrCat("-addext '", ext, "' "), ">/dev/null 2>&1");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto pem = ReadFile(dir_ + "/c.pem");
    EXPECT_TRUE(pem.ok()) << pem.status();
    return pem.ok() ? *pem : "";
  }

  std::string Fingerprint() {
    std::string cmd = absl::StrCat("openssl x509 -in ", dir_, "/c.pem -noout -fingerprint -sha256",
                                   " | sed 's/.*=//; s/://g' > ", dir_, "/fp");
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    auto fp = ReadFile(dir_ + "/fp");
    return fp.ok() ? absl::AsciiStrToLower(absl::StripAsciiWhitespace(*fp)) : "";
  }

  std::string dir_;
};

TEST_F(PeerIdentityTest, TheFirstDnsNameWinsOverTheCommonNameInLowerCase) {
  auto id = IdentityFromPem(MakeCert("/CN=wrong-name/OU=agent",
                                     "subjectAltName=IP:10.0.0.1,DNS:FS01.Corp.Example,DNS:fs02"));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->name, "fs01.corp.example");
  EXPECT_EQ(id->common_name, "wrong-name");
  EXPECT_EQ(id->kind, "agent");
}

TEST_F(PeerIdentityTest, WithoutADnsNameTheCommonNameInLowerCase) {
  auto id = IdentityFromPem(MakeCert("/CN=FS01/OU=agent", "subjectAltName=IP:10.0.0.1"));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->name, "fs01");
}

TEST_F(PeerIdentityTest, SerialFingerprintAndValidityAreRead) {
  auto id = IdentityFromPem(MakeCert("/CN=fs01/OU=agent", "", "0x00ab12"));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->serial, "ab12");
  EXPECT_EQ(id->fingerprint, Fingerprint());
  EXPECT_EQ(id->fingerprint.size(), 64U);
  EXPECT_GT(id->not_before_unix, 1'600'000'000);
  EXPECT_EQ(id->not_after_unix - id->not_before_unix, 7 * 86'400);
}

TEST_F(PeerIdentityTest, OperatorsCarryEveryRoleAfterTheKind) {
  auto id = IdentityFromPem(MakeCert("/CN=Alice/OU=operator/OU=proposer/OU=approver", ""));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->name, "alice");
  EXPECT_EQ(id->kind, "operator");
  EXPECT_EQ(id->roles, (std::vector<std::string>{"proposer", "approver"}));
}

TEST_F(PeerIdentityTest, GarbageIsUnauthenticated) {
  auto id = IdentityFromPem("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  EXPECT_TRUE(absl::IsUnauthenticated(id.status())) << id.status();
}

}  // namespace
}  // namespace smbfleet

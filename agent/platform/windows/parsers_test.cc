#include "agent/platform/windows/parsers.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(ParseDialectTest, EveryWayWindowsWritesADialect) {
  struct Case {
    const char* text;
    v1::Dialect want;
  };
  std::vector<Case> cases = {
      {"2.0.2", v1::DIALECT_SMB_2_0_2},   {"2.02", v1::DIALECT_SMB_2_0_2},
      {"2.1", v1::DIALECT_SMB_2_1},       {"2.10", v1::DIALECT_SMB_2_1},
      {"3.0", v1::DIALECT_SMB_3_0},       {"3.00", v1::DIALECT_SMB_3_0},
      {"3.02", v1::DIALECT_SMB_3_0_2},    {"3.0.2", v1::DIALECT_SMB_3_0_2},
      {"3.1.1", v1::DIALECT_SMB_3_1_1},   {"3.11", v1::DIALECT_SMB_3_1_1},
      {" 3.1.1 ", v1::DIALECT_SMB_3_1_1}, {"1.5", v1::DIALECT_SMB1},
      {"SMB202", v1::DIALECT_SMB_2_0_2},  {"SMB210", v1::DIALECT_SMB_2_1},
      {"SMB300", v1::DIALECT_SMB_3_0},    {"SMB302", v1::DIALECT_SMB_3_0_2},
      {"SMB311", v1::DIALECT_SMB_3_1_1},  {"SMB3_11", v1::DIALECT_SMB_3_1_1},
      {"514", v1::DIALECT_SMB_2_0_2},     {"528", v1::DIALECT_SMB_2_1},
      {"768", v1::DIALECT_SMB_3_0},       {"770", v1::DIALECT_SMB_3_0_2},
      {"785", v1::DIALECT_SMB_3_1_1},     {"0x0311", v1::DIALECT_SMB_3_1_1},
      {"", v1::DIALECT_UNSPECIFIED},      {"4.0", v1::DIALECT_UNSPECIFIED},
      {"767", v1::DIALECT_UNSPECIFIED},   {"banana", v1::DIALECT_UNSPECIFIED},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ParseDialect(c.text), c.want) << "'" << c.text << "'";
  }
}

TEST(ParseCipherTest, Names) {
  EXPECT_EQ(ParseCipher("AES_128_GCM"), v1::AES_128_GCM);
  EXPECT_EQ(ParseCipher("AES-256-CCM"), v1::AES_256_CCM);
  EXPECT_EQ(ParseCipher(" aes_256_gcm "), v1::AES_256_GCM);
  EXPECT_EQ(ParseCipher("AES_128_CCM"), v1::AES_128_CCM);
  EXPECT_EQ(ParseCipher("CHACHA20"), v1::CRYPTO_ALGORITHM_UNSPECIFIED);
}

TEST(ParseServerConfigurationTest, MissingPropertiesStayUnknown) {
  // A pre-2019 build: no EncryptionCiphers, compression, QUIC, dialect bounds or audit switches.
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseServerConfiguration(R"({"EnableSMB1Protocol": false,
      "RequireSecuritySignature": true, "EncryptData": false, "AutoDisconnectTimeout": 15})",
                                       "s.json", &p, &problems)
                  .ok());
  EXPECT_THAT(problems, IsEmpty());
  const v1::ServerConfig& s = p.server();
  EXPECT_TRUE(s.has_smb1_enabled());
  EXPECT_FALSE(s.smb1_enabled());
  EXPECT_TRUE(s.require_signing());
  EXPECT_TRUE(s.has_encrypt_data());
  EXPECT_FALSE(s.has_compression_disabled());
  EXPECT_FALSE(s.has_request_compression());
  EXPECT_FALSE(s.has_quic_enabled());
  EXPECT_FALSE(s.has_min_dialect());
  EXPECT_FALSE(s.has_max_dialect());
  EXPECT_FALSE(s.has_audit_client_does_not_support_signing());
  EXPECT_FALSE(s.has_null_session_shares_known());
  EXPECT_THAT(s.encryption_ciphers(), IsEmpty());
  EXPECT_EQ(s.raw().at("AutoDisconnectTimeout"), "15");
}

TEST(ParseServerConfigurationTest, DialectBoundsAsNumbersNamesAndNone) {
  struct Case {
    const char* json;
    v1::Dialect min, max;
  };
  std::vector<Case> cases = {
      {R"({"Smb2DialectMin": 785, "Smb2DialectMax": 65535})", v1::DIALECT_SMB_3_1_1,
       v1::DIALECT_SMB_3_1_1},
      {R"({"Smb2DialectMin": 0, "Smb2DialectMax": 770})", v1::DIALECT_SMB_2_0_2,
       v1::DIALECT_SMB_3_0_2},
      {R"({"Smb2DialectMin": "768", "Smb2DialectMax": "65536"})", v1::DIALECT_SMB_3_0,
       v1::DIALECT_SMB_3_1_1},
      {R"({"Smb2DialectMin": "SMB300", "Smb2DialectMax": "None"})", v1::DIALECT_SMB_3_0,
       v1::DIALECT_SMB_3_1_1},
  };
  for (const auto& c : cases) {
    v1::Posture p;
    std::vector<std::string> problems;
    ASSERT_TRUE(ParseServerConfiguration(c.json, "s.json", &p, &problems).ok()) << c.json;
    EXPECT_THAT(problems, IsEmpty()) << c.json;
    EXPECT_EQ(p.server().min_dialect(), c.min) << c.json;
    EXPECT_EQ(p.server().max_dialect(), c.max) << c.json;
    EXPECT_EQ(p.server().raw().count("Smb2DialectMin"), 1u) << "raw keeps the host's value";
  }
}

TEST(ParseServerConfigurationTest, BadValuesAreProblemsNotFailures) {
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseServerConfiguration(
                  R"({"RequireSecuritySignature": "sometimes", "EncryptData": true,
                      "Smb2DialectMin": 999, "SmbServerNameHardeningLevel": "high"})",
                  "Get-SmbServerConfiguration.json", &p, &problems)
                  .ok());
  EXPECT_FALSE(p.server().has_require_signing());
  EXPECT_TRUE(p.server().encrypt_data());
  EXPECT_FALSE(p.server().has_min_dialect());
  EXPECT_FALSE(p.server().has_name_hardening_level());
  ASSERT_THAT(problems, SizeIs(3));
  EXPECT_THAT(
      problems[0],
      HasSubstr("Get-SmbServerConfiguration.json.RequireSecuritySignature: expected a boolean"));
}

TEST(ParseServerConfigurationTest, EmptyOrSeveralObjectsIsAnError) {
  v1::Posture p;
  std::vector<std::string> problems;
  EXPECT_FALSE(ParseServerConfiguration("", "s.json", &p, &problems).ok());
  auto st = ParseServerConfiguration("[{}, {}]", "s.json", &p, &problems);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("s.json: expected one configuration object, got 2"));
}

TEST(ParseSharesTest, EnumsAsNumbersOrNames) {
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseShares(R"([
      {"Name": "IPC$", "Path": "", "ShareType": 3, "Special": true, "ShareState": 1,
       "FolderEnumerationMode": 1, "CachingMode": 0, "EncryptData": false},
      {"Name": "Data", "Path": "D:\\Data", "ShareType": "FileSystemDirectory",
       "ShareState": "Online", "EncryptData": true, "CompressData": true, "CurrentUsers": 4},
      {"Name": "Q", "ShareType": "Interprocess Communication"},
      {"Path": "no name"}])",
                          "Get-SmbShare.json", &p, &problems)
                  .ok());
  ASSERT_THAT(p.shares(), SizeIs(3));
  EXPECT_EQ(p.shares(0).share_type(), "InterprocessCommunication");
  EXPECT_TRUE(p.shares(0).special());
  EXPECT_EQ(p.shares(0).raw().at("ShareState"), "Online");
  EXPECT_EQ(p.shares(0).raw().at("FolderEnumerationMode"), "Unrestricted");
  EXPECT_EQ(p.shares(0).raw().at("CachingMode"), "None");
  EXPECT_FALSE(p.shares(0).has_compress_data()) << "absent on the build: unknown";
  EXPECT_EQ(p.shares(1).share_type(), "FileSystemDirectory");
  EXPECT_TRUE(p.shares(1).encrypt_data());
  EXPECT_TRUE(p.shares(1).compress_data());
  EXPECT_EQ(p.shares(1).current_users(), 4u);
  EXPECT_EQ(p.shares(2).share_type(), "InterprocessCommunication");
  ASSERT_THAT(problems, SizeIs(1));
  EXPECT_THAT(problems[0], HasSubstr("Get-SmbShare.json[3].Name"));
}

TEST(FinishPostureTest, SessionProtectionComesFromOpenFiles) {
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseShares(R"([{"Name": "HR", "Path": "F:\\HR"},
                              {"Name": "HRArchive", "Path": "F:\\HRArchive"},
                              {"Name": "Root", "Path": "F:\\"}])",
                          "sh", &p, &problems)
                  .ok());
  ASSERT_TRUE(ParseSessions(R"([{"SessionId": 1, "Dialect": "3.1.1"},
                                {"SessionId": 2, "Dialect": "3.1.1"},
                                {"SessionId": 3, "Dialect": "2.1"},
                                {"SessionId": 4, "Dialect": "3.0"},
                                {"SessionId": 5, "Dialect": "3.02"}])",
                            "se", &p, &problems)
                  .ok());
  ASSERT_TRUE(ParseOpenFiles(R"([
      {"SessionId": 1, "Path": "F:\\HR\\a.xlsx", "ShareRelativePath": "a.xlsx", "Encrypted": true},
      {"SessionId": 1, "Path": "F:\\HRArchive\\b.xlsx", "ShareRelativePath": "b.xlsx", "Encrypted": true},
      {"SessionId": 2, "Path": "F:\\HR\\c.xlsx", "ShareRelativePath": "c.xlsx", "Encrypted": true},
      {"SessionId": 2, "Path": "F:\\x.txt", "ShareRelativePath": "x.txt", "Encrypted": false, "Signed": false},
      {"SessionId": 3, "Path": "F:\\y.txt", "ShareRelativePath": "y.txt", "Encrypted": false, "Signed": true},
      {"SessionId": 5, "Path": "F:\\z.txt", "ShareRelativePath": "z.txt", "Encrypted": false}])",
                             "of", &p, &problems)
                  .ok());
  EXPECT_THAT(problems, IsEmpty());
  FinishPosture(&p);
  ASSERT_THAT(p.sessions(), SizeIs(5));
  // 1: every open encrypted (and so integrity-protected).
  EXPECT_EQ(p.sessions(0).encryption(), v1::PROTECTION_FULL);
  EXPECT_EQ(p.sessions(0).signing(), v1::PROTECTION_FULL);
  ASSERT_THAT(p.sessions(0).shares(), SizeIs(2));
  EXPECT_EQ(p.sessions(0).shares(0).name(), "HR");  // longest matching path, not "HRArchive"
  EXPECT_EQ(p.sessions(0).shares(1).name(), "HRArchive");
  // 2: one encrypted, one neither.
  EXPECT_EQ(p.sessions(1).encryption(), v1::PROTECTION_PARTIAL);
  EXPECT_EQ(p.sessions(1).signing(), v1::PROTECTION_PARTIAL);
  // 3: signed, not encrypted.
  EXPECT_EQ(p.sessions(2).encryption(), v1::PROTECTION_NONE);
  EXPECT_EQ(p.sessions(2).signing(), v1::PROTECTION_FULL);
  // 4: no open files: unknown, never "none".
  EXPECT_EQ(p.sessions(3).encryption(), v1::PROTECTION_UNSPECIFIED);
  EXPECT_EQ(p.sessions(3).signing(), v1::PROTECTION_UNSPECIFIED);
  // 5: the build does not report Signed on open files: signing unknown, encryption known.
  EXPECT_EQ(p.sessions(4).encryption(), v1::PROTECTION_NONE);
  EXPECT_EQ(p.sessions(4).signing(), v1::PROTECTION_UNSPECIFIED);
  EXPECT_EQ(p.open_files(3).share_name(), "Root");
}

TEST(ParseSessionsTest, ClientAddressOrName) {
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseSessions(R"([
      {"SessionId": 1, "ClientComputerName": "192.168.101.13"},
      {"SessionId": 2, "ClientComputerName": "[fe80::c8c0:f65d:3bc6:7313]"},
      {"SessionId": 3, "ClientComputerName": "LAPTOP-7"},
      {"SessionId": 4, "ClientUserName": "NT AUTHORITY\\ANONYMOUS LOGON"}])",
                            "se", &p, &problems)
                  .ok());
  EXPECT_EQ(p.sessions(0).client_address(), "192.168.101.13");
  EXPECT_EQ(p.sessions(1).client_address(), "fe80::c8c0:f65d:3bc6:7313");
  EXPECT_EQ(p.sessions(2).client_address(), "");
  EXPECT_EQ(p.sessions(2).client_name(), "LAPTOP-7");
  EXPECT_TRUE(p.sessions(3).anonymous());
  EXPECT_FALSE(p.sessions(0).anonymous());
}

TEST(ParseConnectionsTest, SignedAndEncryptedKeptAsReported) {
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseConnections(R"({"ServerName": "files", "ShareName": "s", "Dialect": "3.1.1",
                                   "Encrypted": true, "Signed": false, "NumOpens": 1})",
                               "c", &p, &problems)
                  .ok());
  ASSERT_THAT(p.connections(), SizeIs(1));
  EXPECT_TRUE(p.connections(0).encrypted());
  EXPECT_TRUE(p.connections(0).has_signed_());
  EXPECT_FALSE(p.connections(0).signed_());
  EXPECT_EQ(p.connections(0).dialect(), v1::DIALECT_SMB_3_1_1);
  // A Windows 8-era connection without Signed: unknown.
  v1::Posture q;
  ASSERT_TRUE(ParseConnections(R"([{"ServerName": "old", "Dialect": "3.00", "Encrypted": false}])",
                               "c", &q, &problems)
                  .ok());
  EXPECT_FALSE(q.connections(0).has_signed_());
}

TEST(ParseNetworkInterfacesTest, OneNicPerInterface) {
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseNetworkInterfaces(R"([
      {"FriendlyName": "Ethernet 2", "IpAddress": "10.0.0.5", "LinkSpeed": 25000000000, "RssCapable": true, "RdmaCapable": false},
      {"FriendlyName": "Ethernet 2", "IpAddress": "fe80::1", "LinkSpeed": 25000000000, "RssCapable": true, "RdmaCapable": false},
      {"FriendlyName": "RDMA1", "LinkSpeed": "100000000000", "RssCapable": false, "RdmaCapable": true}])",
                                     "n", &p, &problems)
                  .ok());
  ASSERT_THAT(p.nics(), SizeIs(2));
  EXPECT_EQ(p.nics(0).link_speed_bps(), 25000000000u);
  EXPECT_TRUE(p.nics(1).rdma_capable());
  EXPECT_EQ(p.nics(1).link_speed_bps(), 100000000000u);
}

}  // namespace
}  // namespace smbfleet::agent::windows

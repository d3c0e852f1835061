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
  EXPECT_EQ(s.auto_disconnect_timeout_minutes(), 15u);
  EXPECT_FALSE(s.has_enable_forced_logoff());
  EXPECT_FALSE(s.has_null_session_pipes_known());
  EXPECT_EQ(s.raw().count("AutoDisconnectTimeout"), 0u) << "typed, not raw";
}

TEST(ParseServerConfigurationTest, IdleTimeoutOfEveryBuild) {
  struct Case {
    const char* json;
    bool known;
    uint32_t minutes;
  };
  std::vector<Case> cases = {
      {R"({"AutoDisconnectTimeout": 15})", true, 15},  // WS2016-2022
      {R"({"AutoDisconnectTimeoutInMinutesV1": 10,
           "AutoDisconnectTimeoutInSecondsV2": 600})",
       true, 10},  // WS2025
      {R"({"AutoDisconnectTimeout": 15, "AutoDisconnectTimeoutInMinutesV1": 5})", true, 5},
      {R"({"AutoDisconnectTimeoutInSecondsV2": 901})", true, 16},  // rounded up
      {R"({"AutoDisconnectTimeout": "4294967295"})", true, 4294967295u},
      {R"({"EnableSMB1Protocol": false})", false, 0},
  };
  for (const auto& c : cases) {
    v1::Posture p;
    std::vector<std::string> problems;
    ASSERT_TRUE(ParseServerConfiguration(c.json, "s.json", &p, &problems).ok()) << c.json;
    EXPECT_THAT(problems, IsEmpty()) << c.json;
    EXPECT_EQ(p.server().has_auto_disconnect_timeout_minutes(), c.known) << c.json;
    EXPECT_EQ(p.server().auto_disconnect_timeout_minutes(), c.minutes) << c.json;
  }
  // The wrong shape is a problem, not a fallback to another property.
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseServerConfiguration(
                  R"({"AutoDisconnectTimeoutInMinutesV1": "soon", "AutoDisconnectTimeout": 15})",
                  "s.json", &p, &problems)
                  .ok());
  EXPECT_FALSE(p.server().has_auto_disconnect_timeout_minutes());
  ASSERT_THAT(problems, SizeIs(1));
  EXPECT_THAT(problems[0], HasSubstr("s.json.AutoDisconnectTimeoutInMinutesV1"));
}

TEST(ParseServerConfigurationTest, NullSessionPipesAsStringArrayOrEmpty) {
  struct Case {
    const char* json;
    std::vector<std::string> pipes;
  };
  std::vector<Case> cases = {
      {R"({"NullSessionPipes": "netlogon, samr, lsarpc"})", {"netlogon", "samr", "lsarpc"}},
      {R"({"NullSessionPipes": ["HydraLSPipe", "TermServLicensing"]})",
       {"HydraLSPipe", "TermServLicensing"}},
      {R"({"NullSessionPipes": ""})", {}},
      {R"({"NullSessionPipes": []})", {}},
  };
  for (const auto& c : cases) {
    v1::Posture p;
    std::vector<std::string> problems;
    ASSERT_TRUE(ParseServerConfiguration(c.json, "s.json", &p, &problems).ok()) << c.json;
    EXPECT_TRUE(p.server().null_session_pipes_known()) << c.json;
    EXPECT_EQ(std::vector<std::string>(p.server().null_session_pipes().begin(),
                                       p.server().null_session_pipes().end()),
              c.pipes)
        << c.json;
  }
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(
      ParseServerConfiguration(R"({"NullSessionPipes": null, "EnableForcedLogoff": "True"})",
                               "s.json", &p, &problems)
          .ok());
  EXPECT_FALSE(p.server().has_null_session_pipes_known()) << "null: unknown, not none";
  EXPECT_TRUE(p.server().enable_forced_logoff());
}

TEST(ParseClientConfigurationTest, CompressionSwitchesOnlyWhereTheBuildHasThem) {
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseClientConfiguration(
                  R"({"DisableCompression": false, "RequestCompression": true,
                      "EnableCompressibilitySampling": true,
                      "CompressibilitySamplingSize": 524288000,
                      "CompressibleThreshold": "104857600"})",
                  "c.json", &p, &problems)
                  .ok());
  EXPECT_THAT(problems, IsEmpty());
  const v1::ClientConfig& c = p.client();
  EXPECT_TRUE(c.has_compression_disabled());
  EXPECT_FALSE(c.compression_disabled());
  EXPECT_TRUE(c.request_compression());
  EXPECT_TRUE(c.enable_compressibility_sampling());
  EXPECT_EQ(c.compressibility_sampling_size(), 524288000u);
  EXPECT_EQ(c.compressible_threshold(), 104857600u);
  EXPECT_EQ(c.raw().count("CompressibleThreshold"), 0u);
  // A WS2016/2019 client: none of them.
  v1::Posture old;
  ASSERT_TRUE(
      ParseClientConfiguration(R"({"RequireSecuritySignature": false})", "c.json", &old, &problems)
          .ok());
  EXPECT_FALSE(old.client().has_compression_disabled());
  EXPECT_FALSE(old.client().has_request_compression());
  EXPECT_FALSE(old.client().has_enable_compressibility_sampling());
  EXPECT_FALSE(old.client().has_compressibility_sampling_size());
  EXPECT_FALSE(old.client().has_compressible_threshold());
}

// ------------------------------------------------------------------------- registry

TEST(ParseRegistryTest, RestrictNullSessAccessValueOrTheWindowsDefault) {
  struct Case {
    const char* bytes;
    bool known;
    bool restricted;
  };
  std::vector<Case> cases = {
      {R"([{"restrictnullsessaccess": 1, "NullSessionPipes": []}])", true, true},
      {R"([{"RestrictNullSessAccess": 0}])", true, false},
      {R"([{"RestrictNullSessAccess": "2"}])", true, true},
      {R"([{"AutoDisconnect": 15}])", true, true},  // value absent: the default, restricted
      {"[]", true, true},                           // key absent: the default
      {"", false, false},                           // no output: unknown
      {R"([{"RestrictNullSessAccess": "yes"}])", false, false},
  };
  for (const auto& c : cases) {
    v1::Posture p;
    std::vector<std::string> problems;
    ASSERT_TRUE(
        ParseLanmanServerRegistry(c.bytes, "Registry-LanmanServer.json", &p, &problems).ok())
        << c.bytes;
    EXPECT_EQ(p.server().has_restrict_null_session_access(), c.known) << c.bytes;
    EXPECT_EQ(p.server().restrict_null_session_access(), c.restricted) << c.bytes;
    EXPECT_EQ(problems.empty(), c.known) << c.bytes;
  }
  v1::Posture p;
  std::vector<std::string> problems;
  auto st = ParseLanmanServerRegistry("[{}, {}]", "Registry-LanmanServer.json", &p, &problems);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("Registry-LanmanServer.json"));
}

TEST(ParseRegistryTest, EnablePlainTextPasswordValueOrTheWindowsDefault) {
  struct Case {
    const char* bytes;
    bool known;
    bool enabled;
  };
  std::vector<Case> cases = {
      {R"([{"EnablePlainTextPassword": 1}])", true, true},
      {R"({"enableplaintextpassword": 0})", true, false},  // a bare object
      {R"([{"ServiceDll": "wkssvc.dll"}])", true, false},  // value absent: disabled
      {"[]", true, false},
      {"  \r\n", false, false},
      {R"([{"EnablePlainTextPassword": -1}])", true, true},  // 0xFFFFFFFF as an Int32
  };
  for (const auto& c : cases) {
    v1::Posture p;
    std::vector<std::string> problems;
    ASSERT_TRUE(ParseLanmanWorkstationRegistry(c.bytes, "w.json", &p, &problems).ok()) << c.bytes;
    EXPECT_EQ(p.client().has_enable_plain_text_password(), c.known) << c.bytes;
    EXPECT_EQ(p.client().enable_plain_text_password(), c.enabled) << c.bytes;
  }
}

TEST(ParseRegistryTest, HardenedPathsToleratesSpacingAndCaseAndKeepsTheValue) {
  v1::Posture p;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseHardenedPaths(R"json([{
      "\\\\*\\NETLOGON": "RequireMutualAuthentication=1, RequireIntegrity=1",
      "\\\\*\\SYSVOL": " requiremutualauthentication = 1 ,REQUIREINTEGRITY=1, RequirePrivacy=1 ",
      "\\\\fs01\\*": "RequireIntegrity=0, FutureFlag=1",
      "\\\\fs02\\x": "RequirePrivacy=yes",
      "\\\\fs03\\y": 1,
      "(default)": "",
      "PSPath": "Microsoft.PowerShell.Core\\Registry::HKEY_LOCAL_MACHINE\\SOFTWARE"}])json",
                                 "h.json", &p, &problems)
                  .ok());
  const v1::ClientConfig& c = p.client();
  EXPECT_TRUE(c.hardened_paths_known());
  ASSERT_THAT(c.hardened_paths(), SizeIs(4));
  const v1::HardenedPath& netlogon = c.hardened_paths(0);
  EXPECT_EQ(netlogon.path(), "\\\\*\\NETLOGON");
  EXPECT_EQ(netlogon.value(), "RequireMutualAuthentication=1, RequireIntegrity=1");
  EXPECT_TRUE(netlogon.require_mutual_authentication());
  EXPECT_TRUE(netlogon.require_integrity());
  EXPECT_TRUE(netlogon.has_require_privacy());
  EXPECT_FALSE(netlogon.require_privacy()) << "not named: not required";
  const v1::HardenedPath& sysvol = c.hardened_paths(1);
  EXPECT_EQ(sysvol.path(), "\\\\*\\SYSVOL");
  EXPECT_TRUE(sysvol.require_mutual_authentication());
  EXPECT_TRUE(sysvol.require_integrity());
  EXPECT_TRUE(sysvol.require_privacy());
  EXPECT_EQ(c.hardened_paths(2).path(), "\\\\fs01\\*");
  EXPECT_FALSE(c.hardened_paths(2).require_integrity());
  EXPECT_EQ(c.hardened_paths(2).value(), "RequireIntegrity=0, FutureFlag=1");
  EXPECT_FALSE(c.hardened_paths(3).has_require_privacy()) << "'yes': unknown, not guessed";
  ASSERT_THAT(problems, SizeIs(3));
  EXPECT_THAT(problems[0], HasSubstr("h.json.(default): not a UNC path pattern"));
  EXPECT_THAT(problems[1], HasSubstr("h.json.\\\\fs02\\x: RequirePrivacy = 'yes'"));
  EXPECT_THAT(problems[2], HasSubstr("h.json.\\\\fs03\\y: expected a REG_SZ string"));
}

TEST(ParseRegistryTest, HardenedPathsKeyAbsentIsKnownAndEmptyNoOutputIsUnknown) {
  v1::Posture absent;
  std::vector<std::string> problems;
  ASSERT_TRUE(ParseHardenedPaths("[]", "h.json", &absent, &problems).ok());
  EXPECT_TRUE(absent.client().hardened_paths_known());
  EXPECT_THAT(absent.client().hardened_paths(), IsEmpty());
  EXPECT_THAT(problems, IsEmpty());
  v1::Posture nothing;
  ASSERT_TRUE(ParseHardenedPaths("", "h.json", &nothing, &problems).ok());
  EXPECT_FALSE(nothing.client().has_hardened_paths_known());
  ASSERT_THAT(problems, SizeIs(1));
  EXPECT_THAT(problems[0], HasSubstr("h.json: no output"));
  EXPECT_FALSE(ParseHardenedPaths("[{", "h.json", &nothing, &problems).ok());
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

// Get-NetAdapter, Get-NetAdapterRss and Get-SmbServerNetworkInterface join into one Nic per
// adapter (by ifIndex = InterfaceIndex, else by Name = FriendlyName), in any order.
TEST(ParseNetAdaptersTest, TheThreeCmdletsJoinIntoOneNicPerAdapter) {
  const char* adapters = R"([
      {"Name": "Ethernet 2", "InterfaceDescription": "Mellanox ConnectX-4 Lx", "ifIndex": 6,
       "Status": "Up", "MacAddress": "00-15-5D-0A-02-05", "LinkSpeed": "25 Gbps",
       "ReceiveLinkSpeed": 25000000000, "TransmitLinkSpeed": 25000000000, "MtuSize": 9000,
       "InterfaceOperationalStatus": 1, "HardwareInterface": true},
      {"Name": "Ethernet", "InterfaceDescription": "Microsoft Hyper-V Network Adapter",
       "ifIndex": 4, "Status": "Disconnected", "LinkSpeed": "0 bps", "ReceiveLinkSpeed": 0,
       "TransmitLinkSpeed": 0, "Speed": 9223372036854775807, "MtuSize": 1500,
       "InterfaceOperationalStatus": 2, "HardwareInterface": false}])";
  const char* rss = R"([
      {"Name": "Ethernet 2", "InterfaceDescription": "Mellanox ConnectX-4 Lx", "Enabled": true,
       "NumberOfReceiveQueues": 8, "Profile": 4},
      {"Name": "Ethernet", "Enabled": "False", "NumberOfReceiveQueues": "1"}])";
  const char* smb = R"([
      {"FriendlyName": "Ethernet 2", "InterfaceIndex": 6, "IpAddress": "10.2.0.5",
       "LinkSpeed": 25000000000, "RssCapable": true, "RdmaCapable": false},
      {"FriendlyName": "Ethernet 2", "InterfaceIndex": 6, "IpAddress": "fe80::1",
       "LinkSpeed": 25000000000, "RssCapable": true, "RdmaCapable": false}])";
  using Parser = absl::Status (*)(absl::string_view, absl::string_view, v1::Posture*,
                                  std::vector<std::string>*);
  struct Step {
    Parser parse;
    const char* bytes;
  };
  std::vector<std::vector<Step>> orders = {
      {{&ParseNetAdapters, adapters}, {&ParseNetAdapterRss, rss}, {&ParseNetworkInterfaces, smb}},
      {{&ParseNetworkInterfaces, smb}, {&ParseNetAdapterRss, rss}, {&ParseNetAdapters, adapters}},
  };
  for (const auto& order : orders) {
    v1::Posture p;
    std::vector<std::string> problems;
    for (const Step& step : order) ASSERT_TRUE(step.parse(step.bytes, "f", &p, &problems).ok());
    EXPECT_THAT(problems, IsEmpty());
    ASSERT_THAT(p.nics(), SizeIs(2));
    const v1::Nic& fast = p.nics(0).name() == "Ethernet 2" ? p.nics(0) : p.nics(1);
    const v1::Nic& idle = p.nics(0).name() == "Ethernet 2" ? p.nics(1) : p.nics(0);
    EXPECT_EQ(fast.name(), "Ethernet 2");
    EXPECT_EQ(fast.description(), "Mellanox ConnectX-4 Lx");
    EXPECT_EQ(fast.interface_index(), 6u);
    EXPECT_EQ(fast.link_speed_bps(), 25000000000u);
    EXPECT_TRUE(fast.up());
    EXPECT_EQ(fast.mtu(), 9000u);
    EXPECT_EQ(fast.mac(), "00-15-5D-0A-02-05");
    EXPECT_TRUE(fast.rss_enabled());
    EXPECT_EQ(fast.rss_queues(), 8u);
    EXPECT_TRUE(fast.rss_capable());
    EXPECT_FALSE(fast.rdma_capable());
    EXPECT_TRUE(fast.physical());
    // Disconnected: speed 0 / 2^63-1 is no speed; SMB does not list it: RSS/RDMA capability
    // unknown.
    EXPECT_EQ(idle.name(), "Ethernet");
    EXPECT_FALSE(idle.has_link_speed_bps());
    EXPECT_TRUE(idle.has_up());
    EXPECT_FALSE(idle.up());
    EXPECT_FALSE(idle.rss_enabled());
    EXPECT_EQ(idle.rss_queues(), 1u);
    EXPECT_FALSE(idle.has_rss_capable());
    EXPECT_FALSE(idle.has_rdma_capable());
    EXPECT_FALSE(idle.physical());
  }
}

TEST(ParseNetAdaptersTest, OneAdapterAsABareObjectAndStatusText) {
  v1::Posture p;
  std::vector<std::string> problems;
  // PS 5.1 writes one result as a bare object; no numeric operational status, Status text only.
  ASSERT_TRUE(ParseNetAdapters(R"js({"Name": "vEthernet (LAN)", "Status": "Up",
      "ifIndex": "12", "LinkSpeed": "10 Gbps", "TransmitLinkSpeed": 10000000000})js",
                               "Get-NetAdapter.json", &p, &problems)
                  .ok());
  EXPECT_THAT(problems, IsEmpty());
  ASSERT_THAT(p.nics(), SizeIs(1));
  EXPECT_EQ(p.nics(0).interface_index(), 12u);
  EXPECT_TRUE(p.nics(0).up());
  EXPECT_EQ(p.nics(0).link_speed_bps(), 10000000000u);
  EXPECT_FALSE(p.nics(0).has_mtu());
  EXPECT_FALSE(p.nics(0).has_physical());
  // "OK" is CIM health, not the link: unknown.
  v1::Posture q;
  ASSERT_TRUE(ParseNetAdapters(R"([{"Name": "x", "Status": "OK"}])", "f", &q, &problems).ok());
  EXPECT_FALSE(q.nics(0).has_up());
}

TEST(ParseNetAdaptersTest, MalformedInputIsAnErrorNamingTheFile) {
  v1::Posture p;
  std::vector<std::string> problems;
  absl::Status s = ParseNetAdapters("[{\"Name\": ", "Get-NetAdapter.json", &p, &problems);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("Get-NetAdapter.json"));
  s = ParseNetAdapterRss("{oops", "Get-NetAdapterRss.json", &p, &problems);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("Get-NetAdapterRss.json"));
  EXPECT_THAT(p.nics(), IsEmpty());
  // A property of the wrong shape is one problem; the rest of the adapter is still read.
  ASSERT_TRUE(
      ParseNetAdapterRss(R"([{"Name": "e", "Enabled": true, "NumberOfReceiveQueues": "many"}])",
                         "Get-NetAdapterRss.json", &p, &problems)
          .ok());
  EXPECT_THAT(problems, ElementsAre(HasSubstr("NumberOfReceiveQueues")));
  ASSERT_THAT(p.nics(), SizeIs(1));
  EXPECT_TRUE(p.nics(0).rss_enabled());
  EXPECT_FALSE(p.nics(0).has_rss_queues());
}

}  // namespace
}  // namespace smbfleet::agent::windows

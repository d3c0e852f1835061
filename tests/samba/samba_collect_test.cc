// Posture from a real smbd with real smbclient sessions, one lab per scenario.

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/platform/samba/samba_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/samba/samba_lab.h"

namespace smbfleet::testing {
namespace {

using ::testing::ElementsAre;

struct Scenario {
  const char* name;
  SambaLab::Setup setup;
  std::vector<std::string> client;  // smbclient options of the held session
  v1::Dialect dialect;
  v1::Protection signing;     // the tree connect's
  v1::Protection encryption;  // the tree connect's
  v1::CryptoAlgorithm signing_algorithm;
  v1::CryptoAlgorithm cipher;
};

void PrintTo(const Scenario& s, std::ostream* os) { *os << s.name; }

class CollectTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(CollectTest, SessionIsReportedAsSmbstatusSeesIt) {
  const Scenario& sc = GetParam();
  auto lab = SambaLab::Start(sc.setup);
  ASSERT_TRUE(lab.ok()) << lab.status();
  ASSERT_TRUE((*lab)->Hold("c1", "demo", sc.client).ok());
  ASSERT_TRUE((*lab)->Send("c1", "open readme.txt").ok());

  auto source = agent::NewSambaSource((*lab)->Options(), (*lab)->runner());
  auto posture = source->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  EXPECT_EQ(posture->probe_errors_size(), 0) << posture->DebugString();
  EXPECT_EQ(posture->host().platform(), v1::PLATFORM_SAMBA);
  EXPECT_FALSE(posture->host().samba_version().empty());

  ASSERT_EQ(posture->sessions_size(), 1) << posture->DebugString();
  const v1::Session& s = posture->sessions(0);
  EXPECT_EQ(s.user(), "smbfleet");  // nss_wrapper env reached smbstatus
  EXPECT_EQ(s.client_address(), "127.0.0.1");
  EXPECT_EQ(s.dialect(), sc.dialect);
  ASSERT_EQ(s.shares_size(), 1);
  EXPECT_EQ(s.shares(0).name(), "demo");
  EXPECT_EQ(s.shares(0).signing(), sc.signing);
  EXPECT_EQ(s.shares(0).encryption(), sc.encryption);
  EXPECT_EQ(s.shares(0).cipher(), sc.cipher);
  if (sc.signing != v1::PROTECTION_NONE) {
    EXPECT_EQ(s.shares(0).signing_algorithm(), sc.signing_algorithm);
  }
  ASSERT_EQ(posture->open_files_size(), 1);
  EXPECT_EQ(posture->open_files(0).session_id(), s.session_id());
  EXPECT_EQ(posture->open_files(0).share_name(), "demo");
  EXPECT_EQ(posture->open_files(0).share_relative_path(), "readme.txt");
  EXPECT_EQ(posture->open_files(0).encrypted(), sc.encryption == v1::PROTECTION_FULL);
  for (const auto& share : posture->shares()) {
    EXPECT_EQ(share.current_users(), share.name() == "demo" ? 1u : 0u) << share.name();
  }
}

INSTANTIATE_TEST_SUITE_P(
    RealSmbd, CollectTest,
    ::testing::Values(
        Scenario{"smb3_11_signed",
                 {"server signing = mandatory\n", {}},
                 {},
                 v1::DIALECT_SMB_3_1_1,
                 v1::PROTECTION_FULL,
                 v1::PROTECTION_NONE,
                 v1::AES_128_GMAC,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        Scenario{"smb3_11_unsigned",
                 {},
                 {},
                 v1::DIALECT_SMB_3_1_1,
                 v1::PROTECTION_NONE,
                 v1::PROTECTION_NONE,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        Scenario{"smb3_11_encrypted_server_required",
                 {"server smb encrypt = required\n", {}},
                 {},
                 v1::DIALECT_SMB_3_1_1,
                 v1::PROTECTION_FULL,
                 v1::PROTECTION_FULL,
                 v1::AES_128_GMAC,
                 v1::AES_128_GCM},
        Scenario{"smb3_11_encrypted_client_requested",
                 {},
                 {"--client-protection=encrypt"},
                 v1::DIALECT_SMB_3_1_1,
                 v1::PROTECTION_FULL,
                 v1::PROTECTION_FULL,
                 v1::AES_128_GMAC,
                 v1::AES_128_GCM},
        Scenario{
            "aes_256_gcm",
            {"server smb3 encryption algorithms = AES-256-GCM\nserver smb encrypt = desired\n", {}},
            {},
            v1::DIALECT_SMB_3_1_1,
            v1::PROTECTION_FULL,
            v1::PROTECTION_FULL,
            v1::AES_128_GMAC,
            v1::AES_256_GCM},
        Scenario{"smb3_00_signed",
                 {"server signing = mandatory\n", {}},
                 {"-mSMB3_00"},
                 v1::DIALECT_SMB_3_0,
                 v1::PROTECTION_FULL,
                 v1::PROTECTION_NONE,
                 v1::AES_128_CMAC,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        Scenario{"smb3_00_encrypted",
                 {"server smb encrypt = required\n", {}},
                 {"-mSMB3_00"},
                 v1::DIALECT_SMB_3_0,
                 v1::PROTECTION_FULL,
                 v1::PROTECTION_FULL,
                 v1::AES_128_CMAC,
                 v1::AES_128_CCM},
        Scenario{"smb2_10",
                 {},
                 {"-mSMB2_10"},
                 v1::DIALECT_SMB_2_1,
                 v1::PROTECTION_NONE,
                 v1::PROTECTION_NONE,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        Scenario{"smb2_02_signed",
                 {"server signing = mandatory\n", {}},
                 {"-mSMB2_02"},
                 v1::DIALECT_SMB_2_0_2,
                 v1::PROTECTION_FULL,
                 v1::PROTECTION_NONE,
                 v1::HMAC_SHA256,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        Scenario{"smb1",
                 {"server min protocol = NT1\n", {}},
                 Smb1ClientOptions(),
                 v1::DIALECT_SMB1,
                 v1::PROTECTION_NONE,
                 v1::PROTECTION_NONE,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        Scenario{"smb1_signed",
                 {"server min protocol = NT1\nserver signing = mandatory\n", {}},
                 Smb1ClientOptions(),
                 v1::DIALECT_SMB1,
                 v1::PROTECTION_FULL,
                 v1::PROTECTION_NONE,
                 v1::HMAC_MD5,
                 v1::CRYPTO_ALGORITHM_UNSPECIFIED}),
    [](const ::testing::TestParamInfo<Scenario>& info) { return std::string(info.param.name); });

TEST(CollectConfigTest, ConfigurationAndSharesFromTestparm) {
  SambaLab::Setup setup;
  setup.global = "server min protocol = SMB3_00\nserver smb encrypt = desired\n";
  setup.shares["finance"] = "smb encrypt = required\n";
  auto lab = SambaLab::Start(setup);
  ASSERT_TRUE(lab.ok()) << lab.status();
  auto posture = agent::NewSambaSource((*lab)->Options(), (*lab)->runner())->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  EXPECT_EQ(posture->probe_errors_size(), 0);
  const v1::ServerConfig& server = posture->server();
  EXPECT_EQ(server.min_dialect(), v1::DIALECT_SMB_3_0);
  EXPECT_FALSE(server.smb1_enabled());
  EXPECT_TRUE(server.encrypt_data());
  EXPECT_FALSE(server.reject_unencrypted_access());
  EXPECT_FALSE(server.require_signing());
  EXPECT_FALSE(server.guest_access_allowed());
  EXPECT_EQ(server.raw().at("server smb encrypt"), "desired");
  ASSERT_EQ(posture->shares_size(), 2);
  EXPECT_EQ(posture->shares(0).name(), "demo");
  EXPECT_EQ(posture->shares(0).path(), (*lab)->dir() + "/shares/demo");
  EXPECT_TRUE(posture->shares(0).encrypt_data());  // inherits the global "desired"
  EXPECT_EQ(posture->shares(1).name(), "finance");
  EXPECT_EQ(posture->shares(1).raw().at("server smb encrypt"), "required");
  EXPECT_TRUE(posture->sessions().empty());
}

TEST(CollectConfigTest, CisEquivalentsFromTheRunningLab) {
  SambaLab::Setup setup;
  setup.global =
      "restrict anonymous = 2\ndeadtime = 15\nclient min protocol = SMB3_11\n"
      "client signing = required\nclient smb encrypt = required\n";
  auto lab = SambaLab::Start(setup);
  ASSERT_TRUE(lab.ok()) << lab.status();
  auto posture = agent::NewSambaSource((*lab)->Options(), (*lab)->runner())->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  EXPECT_EQ(posture->probe_errors_size(), 0);
  EXPECT_TRUE(posture->server().restrict_null_session_access());
  EXPECT_EQ(posture->server().auto_disconnect_timeout_minutes(), 15u);
  EXPECT_FALSE(posture->server().has_enable_forced_logoff()) << "no Samba equivalent";
  const v1::ClientConfig& client = posture->client();
  ASSERT_TRUE(client.has_enable_plain_text_password());
  EXPECT_FALSE(client.enable_plain_text_password());
  EXPECT_TRUE(client.require_signing());
  EXPECT_TRUE(client.require_encryption());
  EXPECT_EQ(client.min_dialect(), v1::DIALECT_SMB_3_1_1);
  EXPECT_FALSE(client.has_hardened_paths_known());
  EXPECT_FALSE(client.has_compression_disabled()) << "Samba has no SMB compression";
}

TEST(CollectConfigTest, SeveralSessionsAndSharesAtOnce) {
  auto lab = SambaLab::Start({"server min protocol = NT1\n", {}});
  ASSERT_TRUE(lab.ok()) << lab.status();
  ASSERT_TRUE((*lab)->Hold("a", "demo").ok());
  ASSERT_TRUE((*lab)->Hold("b", "finance", {"-mSMB2_10"}).ok());
  ASSERT_TRUE((*lab)->Hold("c", "finance", {"--client-protection=encrypt"}).ok());
  ASSERT_TRUE((*lab)->Hold("d", "demo", Smb1ClientOptions()).ok());
  auto posture = agent::NewSambaSource((*lab)->Options(), (*lab)->runner())->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  ASSERT_EQ(posture->sessions_size(), 4);
  std::multiset<std::string> seen;
  for (const auto& s : posture->sessions()) {
    ASSERT_EQ(s.shares_size(), 1);
    seen.insert(absl::StrCat(s.dialect_raw(), "/", s.shares(0).name(), "/",
                             v1::Protection_Name(s.shares(0).encryption())));
  }
  EXPECT_THAT(seen, ElementsAre("NT1/demo/PROTECTION_NONE", "SMB2_10/finance/PROTECTION_NONE",
                                "SMB3_11/demo/PROTECTION_NONE", "SMB3_11/finance/PROTECTION_FULL"));
  ASSERT_EQ(posture->shares_size(), 2);
  EXPECT_EQ(posture->shares(0).current_users(), 2u);
  EXPECT_EQ(posture->shares(1).current_users(), 2u);

  // Released sessions disappear from the next report.
  ASSERT_TRUE((*lab)->Release("a").ok());
  ASSERT_TRUE((*lab)->Release("c").ok());
  posture = agent::NewSambaSource((*lab)->Options(), (*lab)->runner())->Collect();
  ASSERT_TRUE(posture.ok());
  EXPECT_EQ(posture->sessions_size(), 2);
}

TEST(CollectConfigTest, WithoutNssWrapperTheUserIsAUidAndReportedAnyway) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  ASSERT_TRUE((*lab)->Hold("a", "demo").ok());
  agent::SambaOptions options = (*lab)->Options();
  options.env.clear();
  auto posture = agent::NewSambaSource(options, (*lab)->runner())->Collect();
  ASSERT_TRUE(posture.ok());
  ASSERT_EQ(posture->sessions_size(), 1);
  EXPECT_EQ(posture->sessions(0).user(), "20001");
}

}  // namespace
}  // namespace smbfleet::testing

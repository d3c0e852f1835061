#include "agent/platform/samba/testparm_parser.h"

#include "agent/platform/samba/fixtures_for_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::samba {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Posture FillFrom(const std::string& fixture) {
  auto config = TestparmConfig::Parse(SambaFixture(fixture + ".testparm.txt"));
  EXPECT_TRUE(config.ok()) << config.status();
  v1::Posture posture;
  if (config.ok()) FillConfig(*config, &posture);
  return posture;
}

const v1::Share* ShareNamed(const v1::Posture& p, const std::string& name) {
  for (const auto& s : p.shares()) {
    if (s.name() == name) return &s;
  }
  return nullptr;
}

TEST(TestparmParserTest, DefaultsOfAStandaloneServer) {
  v1::Posture p = FillFrom("idle");
  const v1::ServerConfig& s = p.server();
  EXPECT_EQ(s.raw().at("server signing"), "default");
  ASSERT_TRUE(s.has_require_signing());
  EXPECT_FALSE(s.require_signing());
  EXPECT_TRUE(s.enable_signing());
  EXPECT_FALSE(s.encrypt_data());
  EXPECT_FALSE(s.reject_unencrypted_access());
  EXPECT_EQ(s.min_dialect(), v1::DIALECT_SMB_2_0_2);
  EXPECT_EQ(s.max_dialect(), v1::DIALECT_SMB_3_1_1);
  EXPECT_FALSE(s.smb1_enabled());
  EXPECT_TRUE(s.smb2_enabled());
  EXPECT_THAT(s.encryption_ciphers(),
              ElementsAre(v1::AES_128_GCM, v1::AES_128_CCM, v1::AES_256_GCM, v1::AES_256_CCM));
  EXPECT_THAT(s.signing_algorithms(),
              ElementsAre(v1::AES_128_GMAC, v1::AES_128_CMAC, v1::HMAC_SHA256));
  EXPECT_TRUE(s.multichannel_enabled());
  ASSERT_TRUE(s.has_guest_access_allowed());
  EXPECT_FALSE(s.guest_access_allowed());
  EXPECT_FALSE(s.has_compression_disabled());  // Samba has no SMB compression: unknown
  EXPECT_EQ(p.client().min_dialect(), v1::DIALECT_SMB_2_0_2);
  EXPECT_FALSE(p.client().require_signing());
  EXPECT_EQ(p.probe_errors_size(), 0);

  ASSERT_EQ(p.shares_size(), 2);
  const v1::Share* demo = ShareNamed(p, "demo");
  ASSERT_NE(demo, nullptr);
  EXPECT_EQ(demo->path(), "/srv/samba-lab/shares/demo");
  EXPECT_EQ(demo->description(), "smbfleet lab share demo");
  EXPECT_FALSE(demo->encrypt_data());
  EXPECT_FALSE(demo->read_only());
  EXPECT_FALSE(demo->guest_ok());
  EXPECT_FALSE(demo->special());
  EXPECT_EQ(demo->share_type(), "FileSystemDirectory");
  EXPECT_EQ(demo->raw().at("valid users"), "smbfleet");
  EXPECT_EQ(demo->raw().at("server smb encrypt"), "default");
}

TEST(TestparmParserTest, ServerSettingsFromCapturedScenarios) {
  struct Case {
    const char* fixture;
    bool require_signing;
    bool encrypt_data;
    bool reject_unencrypted;
    v1::Dialect min;
  };
  const Case cases[] = {
      {"signed-smb311", true, false, false, v1::DIALECT_SMB_2_0_2},
      {"encrypted-smb311", false, true, true, v1::DIALECT_SMB_2_0_2},
      {"encrypted-aes256gcm", false, true, false, v1::DIALECT_SMB_2_0_2},
      {"smb1-unsigned", false, false, false, v1::DIALECT_SMB1},
  };
  for (const Case& c : cases) {
    v1::Posture p = FillFrom(c.fixture);
    EXPECT_EQ(p.server().require_signing(), c.require_signing) << c.fixture;
    EXPECT_EQ(p.server().encrypt_data(), c.encrypt_data) << c.fixture;
    EXPECT_EQ(p.server().reject_unencrypted_access(), c.reject_unencrypted) << c.fixture;
    EXPECT_EQ(p.server().min_dialect(), c.min) << c.fixture;
    EXPECT_EQ(p.server().smb1_enabled(), c.min == v1::DIALECT_SMB1) << c.fixture;
    // Global encryption is every share's default.
    for (const auto& share : p.shares()) {
      EXPECT_EQ(share.encrypt_data(), c.encrypt_data) << c.fixture << " " << share.name();
    }
  }
  EXPECT_THAT(FillFrom("encrypted-aes256gcm").server().encryption_ciphers(),
              ElementsAre(v1::AES_256_GCM));
}

TEST(TestparmParserTest, ShareSettingsOverrideGlobal) {
  v1::Posture p = FillFrom("share-encrypted");
  EXPECT_FALSE(p.server().encrypt_data());
  EXPECT_FALSE(ShareNamed(p, "demo")->encrypt_data());
  EXPECT_TRUE(ShareNamed(p, "finance")->encrypt_data());
  EXPECT_EQ(ShareNamed(p, "finance")->raw().at("server smb encrypt"), "required");

  v1::Posture mixed = FillFrom("mixed");
  EXPECT_TRUE(mixed.server().guest_access_allowed());
  EXPECT_TRUE(ShareNamed(mixed, "finance")->guest_ok());
  EXPECT_FALSE(ShareNamed(mixed, "demo")->guest_ok());
}

TEST(TestparmParserTest, CisEquivalentsFromCapturedScenarios) {
  struct Case {
    const char* fixture;
    bool restrict_anonymous;
    uint32_t deadtime_minutes;
    bool plaintext;
    bool client_require_signing;
    bool client_enable_signing;
    bool client_require_encryption;
    v1::Dialect client_min;
  };
  const Case cases[] = {
      // Samba 4.17's defaults: restrict anonymous = 0, deadtime = 10080 (a week).
      {"idle", false, 10080, false, false, true, false, v1::DIALECT_SMB_2_0_2},
      {"cis-hardened", true, 15, false, true, true, true, v1::DIALECT_SMB_3_1_1},  // "SMB3"
      // deadtime = 0 (never) as the largest value; restrict anonymous = 1 is not enough.
      {"cis-legacy", false, UINT32_MAX, true, false, false, false, v1::DIALECT_SMB1},
  };
  for (const Case& c : cases) {
    v1::Posture p = FillFrom(c.fixture);
    const v1::ServerConfig& s = p.server();
    ASSERT_TRUE(s.has_restrict_null_session_access()) << c.fixture;
    EXPECT_EQ(s.restrict_null_session_access(), c.restrict_anonymous) << c.fixture;
    EXPECT_EQ(s.auto_disconnect_timeout_minutes(), c.deadtime_minutes) << c.fixture;
    const v1::ClientConfig& cl = p.client();
    ASSERT_TRUE(cl.has_enable_plain_text_password()) << c.fixture;
    EXPECT_EQ(cl.enable_plain_text_password(), c.plaintext) << c.fixture;
    EXPECT_EQ(cl.require_signing(), c.client_require_signing) << c.fixture;
    EXPECT_EQ(cl.enable_signing(), c.client_enable_signing) << c.fixture;
    EXPECT_EQ(cl.require_encryption(), c.client_require_encryption) << c.fixture;
    EXPECT_EQ(cl.min_dialect(), c.client_min) << c.fixture;
    // Samba has none of these: unknown, never false.
    EXPECT_FALSE(s.has_enable_forced_logoff()) << c.fixture;
    EXPECT_FALSE(s.has_null_session_pipes_known()) << c.fixture;
    EXPECT_FALSE(cl.has_hardened_paths_known()) << c.fixture;
    EXPECT_FALSE(cl.has_compression_disabled()) << c.fixture;
    EXPECT_FALSE(cl.has_request_compression()) << c.fixture;
    EXPECT_FALSE(cl.has_enable_compressibility_sampling()) << c.fixture;
    EXPECT_FALSE(s.has_request_compression()) << c.fixture;
    for (const auto& share : p.shares()) EXPECT_FALSE(share.has_compress_data()) << c.fixture;
    EXPECT_EQ(p.probe_errors_size(), 0) << c.fixture;
  }
  EXPECT_EQ(FillFrom("cis-legacy").server().raw().at("deadtime"), "0");
  EXPECT_EQ(FillFrom("cis-legacy").client().raw().at("client plaintext auth"), "Yes");
}

TEST(TestparmParserTest, CisEquivalentsWithUnexpectedWordsAreUnknown) {
  auto config = TestparmConfig::Parse(
      "[global]\n\trestrict anonymous = some\n\tdeadtime = -5\n\tclient plaintext auth = maybe\n");
  ASSERT_TRUE(config.ok());
  v1::Posture p;
  FillConfig(*config, &p);
  EXPECT_FALSE(p.server().has_restrict_null_session_access());
  EXPECT_FALSE(p.server().has_auto_disconnect_timeout_minutes());
  EXPECT_FALSE(p.client().has_enable_plain_text_password());
  ASSERT_EQ(p.probe_errors_size(), 3);
  EXPECT_EQ(p.probe_errors(0).code(), "UNKNOWN_VALUE");
  EXPECT_THAT(p.probe_errors(0).message(), HasSubstr("restrict anonymous = 'some'"));
  EXPECT_THAT(p.probe_errors(1).message(), HasSubstr("deadtime = '-5'"));
  EXPECT_THAT(p.probe_errors(2).message(), HasSubstr("client plaintext auth = 'maybe'"));
  // Not printed at all (an older testparm without -v): unknown, no error.
  auto bare = TestparmConfig::Parse("[global]\n\tserver signing = required\n");
  ASSERT_TRUE(bare.ok());
  v1::Posture q;
  FillConfig(*bare, &q);
  EXPECT_FALSE(q.server().has_restrict_null_session_access());
  EXPECT_FALSE(q.server().has_auto_disconnect_timeout_minutes());
  EXPECT_FALSE(q.client().has_enable_plain_text_password());
  EXPECT_EQ(q.probe_errors_size(), 0);
}

TEST(TestparmParserTest, GuestOkAloneAllowsGuests) {
  auto config = TestparmConfig::Parse(
      "[global]\n\tmap to guest = Never\n\tguest ok = No\n[pub]\n\tguest ok = Yes\n\tpath = /p\n"
      "[IPC$]\n\tpath = /tmp\n");
  ASSERT_TRUE(config.ok());
  v1::Posture p;
  FillConfig(*config, &p);
  EXPECT_TRUE(p.server().guest_access_allowed());
  EXPECT_TRUE(p.shares(1).special());
}

TEST(TestparmParserTest, UnknownValuesAreReportedNotGuessed) {
  auto config = TestparmConfig::Parse(
      "[global]\n\tserver smb3 encryption algorithms = AES-999-XYZ, AES-128-GCM\n"
      "\tserver min protocol = SMB9\n");
  ASSERT_TRUE(config.ok()) << config.status();
  v1::Posture p;
  FillConfig(*config, &p);
  EXPECT_THAT(p.server().encryption_ciphers(), ElementsAre(v1::AES_128_GCM));
  EXPECT_FALSE(p.server().has_min_dialect());
  EXPECT_FALSE(p.server().has_smb1_enabled());
  ASSERT_EQ(p.probe_errors_size(), 2);
  EXPECT_EQ(p.probe_errors(0).code(), "UNKNOWN_VALUE");
  EXPECT_THAT(p.probe_errors(0).message(), HasSubstr("server min protocol = 'SMB9'"));
  EXPECT_THAT(p.probe_errors(1).message(), HasSubstr("AES-999-XYZ"));
}

TEST(TestparmParserTest, DomainControllerDefaultRequiresSigning) {
  auto config = TestparmConfig::Parse(
      "[global]\n\tserver role = active directory domain controller\n\tserver signing = default\n");
  ASSERT_TRUE(config.ok());
  v1::Posture p;
  FillConfig(*config, &p);
  EXPECT_TRUE(p.server().require_signing());
}

TEST(TestparmParserTest, MalformedOutputNamesTheLine) {
  struct Case {
    std::string text;
    const char* want;
  };
  const Case cases[] = {
      {"[global]\n\tserver signing\n", "line 2: expected 'name = value'"},
      {"\tserver signing = default\n", "line 1: parameter before any section"},
      {"[global\n", "line 1: malformed section header"},
      {"[]\n", "line 1: malformed section header"},
  };
  for (const Case& c : cases) {
    auto config = TestparmConfig::Parse(c.text);
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_THAT(config.status().message(), HasSubstr(c.want)) << c.text;
  }
}

TEST(TestparmParserTest, ShareLookupIsCaseInsensitive) {
  auto config = TestparmConfig::Parse("[global]\n\tguest ok = No\n[Finance]\n\tpath = /f\n");
  ASSERT_TRUE(config.ok());
  ASSERT_NE(config->FindShare("finance"), nullptr);
  EXPECT_EQ(config->FindShare("finance")->name, "Finance");
  EXPECT_EQ(config->ShareValue(*config->FindShare("FINANCE"), "guest ok"), "No");
  EXPECT_EQ(config->FindShare("demo"), nullptr);
}

TEST(TestparmParserTest, CorruptedCapturesNeverCrash) {
  const std::string original = SambaFixture("mixed.testparm.txt");
  ASSERT_FALSE(original.empty());
  for (size_t at = 0; at < original.size(); at += 5) {
    for (char c : {'[', ']', '=', '\n', '\0', '#'}) {
      std::string mutated = original;
      mutated[at] = c;
      auto config = TestparmConfig::Parse(mutated);
      if (!config.ok()) {
        EXPECT_THAT(config.status().message(), HasSubstr("testparm output line"));
        continue;
      }
      v1::Posture p;
      FillConfig(*config, &p);
    }
  }
  auto huge = TestparmConfig::Parse(std::string(17 << 20, 'a'));
  EXPECT_THAT(huge.status().message(), HasSubstr("limit"));
}

}  // namespace
}  // namespace smbfleet::agent::samba

#include "agent/platform/samba/smbstatus_parser.h"

#include "absl/strings/str_cat.h"
#include "agent/platform/samba/fixtures_for_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::samba {
namespace {

using ::testing::HasSubstr;
using v1::CryptoAlgorithm;
using v1::Dialect;
using v1::Protection;

// One held smbclient session per fixture: what smbstatus said about it.
struct SingleSessionCase {
  const char* fixture;
  Dialect dialect;
  const char* dialect_raw;
  Protection tcon_signing;
  Protection tcon_encryption;
  CryptoAlgorithm signing_algorithm;  // tcon's (session's when the tcon has none)
  CryptoAlgorithm cipher;             // tcon's; CRYPTO_ALGORITHM_UNSPECIFIED when not encrypted
};

void PrintTo(const SingleSessionCase& c, std::ostream* os) { *os << c.fixture; }

class SingleSessionTest : public ::testing::TestWithParam<SingleSessionCase> {};

TEST_P(SingleSessionTest, TconIsJoinedAndJudged) {
  const SingleSessionCase& c = GetParam();
  auto status = ParseSmbStatusJson(SambaFixture(std::string(c.fixture) + ".smbstatus.json"));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->version, "4.17.12-Debian");
  ASSERT_EQ(status->sessions.size(), 1u);
  const v1::Session& s = status->sessions[0];
  EXPECT_EQ(s.user(), "smbfleet");
  EXPECT_EQ(s.client_address(), "127.0.0.1");
  EXPECT_EQ(s.dialect(), c.dialect);
  EXPECT_EQ(s.dialect_raw(), c.dialect_raw);
  ASSERT_EQ(s.shares_size(), 1);
  const v1::ShareConnection& tcon = s.shares(0);
  EXPECT_EQ(tcon.name(), "demo");
  EXPECT_EQ(tcon.signing(), c.tcon_signing);
  EXPECT_EQ(tcon.encryption(), c.tcon_encryption);
  EXPECT_EQ(tcon.cipher(), c.cipher);
  EXPECT_EQ(tcon.signing_algorithm(), c.tcon_signing == v1::PROTECTION_NONE
                                          ? v1::CRYPTO_ALGORITHM_UNSPECIFIED
                                          : c.signing_algorithm);
  EXPECT_GT(tcon.connected_at().seconds(), 1700000000);
  // With one tree connect, the session summary is that tree connect's degree.
  EXPECT_EQ(s.signing(), c.tcon_signing);
  EXPECT_EQ(s.encryption(), c.tcon_encryption);
}

INSTANTIATE_TEST_SUITE_P(
    Captured, SingleSessionTest,
    ::testing::Values(
        SingleSessionCase{"unsigned-smb311", v1::DIALECT_SMB_3_1_1, "SMB3_11", v1::PROTECTION_NONE,
                          v1::PROTECTION_NONE, v1::AES_128_GMAC, v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        SingleSessionCase{"signed-smb311", v1::DIALECT_SMB_3_1_1, "SMB3_11", v1::PROTECTION_FULL,
                          v1::PROTECTION_NONE, v1::AES_128_GMAC, v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        SingleSessionCase{"client-signed-smb311", v1::DIALECT_SMB_3_1_1, "SMB3_11",
                          v1::PROTECTION_FULL, v1::PROTECTION_NONE, v1::AES_128_GMAC,
                          v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        SingleSessionCase{"encrypted-smb311", v1::DIALECT_SMB_3_1_1, "SMB3_11", v1::PROTECTION_FULL,
                          v1::PROTECTION_FULL, v1::AES_128_GMAC, v1::AES_128_GCM},
        SingleSessionCase{"encrypted-client-requested", v1::DIALECT_SMB_3_1_1, "SMB3_11",
                          v1::PROTECTION_FULL, v1::PROTECTION_FULL, v1::AES_128_GMAC,
                          v1::AES_128_GCM},
        // The tcon says "???": the cipher comes from the session entry.
        SingleSessionCase{"encrypted-aes256gcm", v1::DIALECT_SMB_3_1_1, "SMB3_11",
                          v1::PROTECTION_FULL, v1::PROTECTION_FULL, v1::AES_128_GMAC,
                          v1::AES_256_GCM},
        SingleSessionCase{"smb3_00-signed", v1::DIALECT_SMB_3_0, "SMB3_00", v1::PROTECTION_FULL,
                          v1::PROTECTION_NONE, v1::AES_128_CMAC, v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        SingleSessionCase{"smb2_10-dialect", v1::DIALECT_SMB_2_1, "SMB2_10", v1::PROTECTION_NONE,
                          v1::PROTECTION_NONE, v1::HMAC_SHA256, v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        SingleSessionCase{"smb2_02-signed", v1::DIALECT_SMB_2_0_2, "SMB2_02", v1::PROTECTION_FULL,
                          v1::PROTECTION_NONE, v1::HMAC_SHA256, v1::CRYPTO_ALGORITHM_UNSPECIFIED},
        SingleSessionCase{"smb1-unsigned", v1::DIALECT_SMB1, "NT1", v1::PROTECTION_NONE,
                          v1::PROTECTION_NONE, v1::CRYPTO_ALGORITHM_UNSPECIFIED,
                          v1::CRYPTO_ALGORITHM_UNSPECIFIED}),
    [](const ::testing::TestParamInfo<SingleSessionCase>& info) {
      std::string name = info.param.fixture;
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

TEST(SmbStatusParserTest, SessionDegreeIsKeptWhenThereIsNoTreeConnect) {
  auto status = ParseSmbStatusJson(R"({"version": "4.17.12-Debian", "sessions": {"7": {
      "session_id": "7", "username": "u", "hostname": "ipv6:::1:40000", "remote_machine": "ws1",
      "session_dialect": "SMB3_11", "signing": {"cipher": "AES-128-GMAC", "degree": "partial"},
      "encryption": {"cipher": "-", "degree": "none"}}}, "tcons": {}, "open_files": {}})");
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->sessions.size(), 1u);
  EXPECT_EQ(status->sessions[0].signing(), v1::PROTECTION_PARTIAL);
  EXPECT_EQ(status->sessions[0].signing_algorithm(), v1::AES_128_GMAC);
  EXPECT_EQ(status->sessions[0].client_address(), "::1");
  EXPECT_EQ(status->sessions[0].client_name(), "ws1");
  EXPECT_EQ(status->sessions[0].client_port(), 40000u);
}

TEST(SmbStatusParserTest, ClientPortFromHostname) {
  struct Case {
    const char* hostname;
    const char* address;
    uint32_t port;
  };
  for (const Case& c :
       {Case{"ipv4:10.0.0.9:49812", "10.0.0.9", 49812}, Case{"ipv6:fe80::1:445", "fe80::1", 445},
        Case{"ipv4:10.0.0.9", "10.0.0.9", 0}, Case{"ipv4:10.0.0.9:70000", "10.0.0.9", 0},
        Case{"ws1.example.org", "ws1.example.org", 0}}) {
    auto status = ParseSmbStatusJson(absl::StrCat(
        R"({"sessions": {"7": {"session_id": "7", "hostname": ")", c.hostname, R"("}}})"));
    ASSERT_TRUE(status.ok()) << status.status();
    ASSERT_EQ(status->sessions.size(), 1u);
    EXPECT_EQ(status->sessions[0].client_address(), c.address) << c.hostname;
    EXPECT_EQ(status->sessions[0].client_port(), c.port) << c.hostname;
  }
}

TEST(SmbStatusParserTest, MixedSessionsJoinByIdAndSummariseWeakest) {
  auto status = ParseSmbStatusJson(SambaFixture("mixed.smbstatus.json"));
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->sessions.size(), 4u);
  std::map<std::string, const v1::Session*> by_dialect_and_share;
  for (const auto& s : status->sessions) {
    ASSERT_EQ(s.shares_size(), 1) << s.session_id();
    by_dialect_and_share[s.dialect_raw() + "/" + s.shares(0).name()] = &s;
  }
  ASSERT_EQ(by_dialect_and_share.size(), 4u);
  const v1::Session* smb1 = by_dialect_and_share.at("NT1/demo");
  EXPECT_EQ(smb1->dialect(), v1::DIALECT_SMB1);
  const v1::Session* encrypted = by_dialect_and_share.at("SMB3_11/finance");
  // Session-level encryption degree is "partial" for a client-requested encrypted session;
  // its tree connect is fully encrypted, and that is what the session reports.
  EXPECT_EQ(encrypted->encryption(), v1::PROTECTION_FULL);
  EXPECT_EQ(encrypted->shares(0).cipher(), v1::AES_128_GCM);
  const v1::Session* smb210 = by_dialect_and_share.at("SMB2_10/finance");
  EXPECT_EQ(smb210->signing(), v1::PROTECTION_NONE);
  EXPECT_EQ(smb210->signing_algorithm(), v1::HMAC_SHA256);
}

TEST(SmbStatusParserTest, OpenFilesAttributedToSessionAndShare) {
  std::map<std::string, std::string> paths = {{"demo", "/srv/samba-lab/shares/demo"},
                                              {"finance", "/srv/samba-lab/shares/finance"}};
  auto status = ParseSmbStatusJson(SambaFixture("share-encrypted.smbstatus.json"), paths);
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->open_files.size(), 1u);
  const v1::OpenFile& f = status->open_files[0];
  EXPECT_EQ(f.path(), "/srv/samba-lab/shares/finance/readme.txt");
  EXPECT_EQ(f.share_relative_path(), "readme.txt");
  EXPECT_EQ(f.share_name(), "finance");
  EXPECT_EQ(f.user(), "smbfleet");
  EXPECT_EQ(f.client_address(), "127.0.0.1");
  EXPECT_TRUE(f.has_encrypted());
  EXPECT_TRUE(f.encrypted());  // finance has smb encrypt = required
  const v1::Session* owner = nullptr;
  for (const auto& s : status->sessions) {
    if (s.session_id() == f.session_id()) owner = &s;
  }
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(owner->shares(0).name(), "finance");
  EXPECT_EQ(owner->num_opens(), 1u);
}

TEST(SmbStatusParserTest, IdleServerHasNoSessions) {
  auto status = ParseSmbStatusJson(SambaFixture("idle.smbstatus.json"));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->sessions.empty());
  EXPECT_TRUE(status->open_files.empty());
}

TEST(SmbStatusParserTest, TconOfVanishedSessionIsDropped) {
  auto status = ParseSmbStatusJson(R"({"sessions": {}, "tcons": {"1": {"service": "demo",
      "session_id": "99", "signing": {"cipher": "-", "degree": "none"}}}})");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->sessions.empty());
}

TEST(SmbStatusParserTest, MalformedInputIsAClearError) {
  struct Case {
    std::string json;
    const char* want;
  };
  const Case cases[] = {
      {"", "not valid JSON"},
      {"{\"sessions\": {", "not valid JSON"},
      {"[1, 2]", "top level is not an object"},
      {R"({"sessions": [1]})", "sessions: not an object"},
      {R"({"sessions": {"5": "x"}})", "sessions.5: not an object"},
      {R"({"tcons": {"9": 3}})", "tcons.9: not an object"},
      {R"({"open_files": {"/a": {"opens": {"1/2": []}}}})", "open_files./a.opens.1/2"},
      {std::string(1000, '['), "not valid JSON"},
  };
  for (const Case& c : cases) {
    auto status = ParseSmbStatusJson(c.json);
    ASSERT_FALSE(status.ok()) << c.json;
    EXPECT_EQ(status.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.status().message(), HasSubstr("smbstatus --json"));
    EXPECT_THAT(status.status().message(), HasSubstr(c.want)) << c.json;
  }
}

TEST(SmbStatusParserTest, WrongTypesInsideEntriesAreTolerated) {
  // Newer or older smbstatus builds change details; a missing or odd field leaves it unset.
  auto status = ParseSmbStatusJson(R"({"sessions": {"1": {"session_id": 1, "username": ["x"],
      "signing": "full", "session_dialect": "SMB3_11"}}})");
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->sessions.size(), 1u);
  EXPECT_EQ(status->sessions[0].session_id(), "1");
  EXPECT_EQ(status->sessions[0].user(), "");
  EXPECT_EQ(status->sessions[0].signing(), v1::PROTECTION_UNSPECIFIED);
  EXPECT_EQ(status->sessions[0].dialect(), v1::DIALECT_SMB_3_1_1);
}

// Every prefix and a sweep of single-byte corruptions of real output: the parser returns a
// result or a clear error, never crashes (run under ASan in the sanitizer pass).
TEST(SmbStatusParserTest, CorruptedCapturesNeverCrash) {
  const std::string original = SambaFixture("mixed.smbstatus.json");
  ASSERT_FALSE(original.empty());
  int errors = 0;
  for (size_t cut = 0; cut < original.size(); cut += 7) {
    auto r = ParseSmbStatusJson(original.substr(0, cut));
    if (!r.ok()) ++errors;
  }
  EXPECT_GT(errors, 0);
  for (size_t at = 0; at < original.size(); at += 3) {
    for (char c : {'"', '{', '}', '[', ':', ',', '\0', 'x', '7'}) {
      std::string mutated = original;
      mutated[at] = c;
      auto r = ParseSmbStatusJson(mutated);
      if (!r.ok()) {
        EXPECT_THAT(r.status().message(), HasSubstr("smbstatus --json"));
      }
    }
  }
}

}  // namespace
}  // namespace smbfleet::agent::samba

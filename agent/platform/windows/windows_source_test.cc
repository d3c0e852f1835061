#include "agent/platform/windows/windows_source.h"

#ifndef _WIN32
#include <sys/stat.h>
#endif

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/platform/windows/parsers.h"
#include "agent/platform/windows/ps_json.h"
#include "agent/platform/windows/testing/fake_powershell_runner.h"
#include "common/files.h"
#include "common/json.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;
using ::testing::Contains;
using ::testing::ElementsAre;
using testing::FakePowerShellRunner;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

std::string Fixture(const std::string& name) {
  return absl::StrCat(SMBFLEET_SOURCE_DIR, "/tests/fixtures/windows/", name);
}

v1::Posture CollectCapture(const std::string& name, WindowsOptions options = {}) {
  auto source = NewWindowsCaptureSource(Fixture(name), options);
  auto posture = source->Collect();
  EXPECT_TRUE(posture.ok()) << posture.status();
  return posture.ok() ? *posture : v1::Posture();
}

const v1::ProbeError* FindError(const v1::Posture& p, const std::string& probe) {
  for (const auto& e : p.probe_errors()) {
    if (e.probe() == probe) return &e;
  }
  return nullptr;
}

TEST(CaptureSourceTest, Ws2016Utf16WithBomAndCimEnvelope) {
  v1::Posture p = CollectCapture("ws2016");
  EXPECT_EQ(p.host().platform(), v1::PLATFORM_WINDOWS);
  EXPECT_EQ(p.host().hostname(), "FS2016");
  EXPECT_EQ(p.host().os_version(), "10.0.14393");
  EXPECT_EQ(p.host().os_build(), "14393.7515");
  EXPECT_FALSE(p.host().domain_joined());
  EXPECT_TRUE(p.host().has_domain_joined());
  EXPECT_EQ(p.host().logical_cores(), 4u);
  EXPECT_EQ(p.collected_at().seconds(), 1764663000);
  const v1::ServerConfig& s = p.server();
  EXPECT_TRUE(s.smb1_enabled());
  EXPECT_FALSE(s.require_signing());
  EXPECT_TRUE(s.has_require_signing());
  // WS2016 has none of these properties: unknown, not false.
  EXPECT_FALSE(s.has_compression_disabled());
  EXPECT_FALSE(s.has_quic_enabled());
  EXPECT_FALSE(s.has_min_dialect());
  EXPECT_FALSE(s.has_audit_insecure_guest_logon());
  EXPECT_THAT(s.encryption_ciphers(), IsEmpty());
  EXPECT_EQ(s.raw().count("CimClass"), 0u);
  EXPECT_EQ(s.raw().at("Smb2CreditsMax"), "2048");
  EXPECT_EQ(s.auto_disconnect_timeout_minutes(), 15u);
  EXPECT_TRUE(s.enable_forced_logoff());
  EXPECT_TRUE(s.null_session_pipes_known());
  EXPECT_THAT(s.null_session_pipes(), IsEmpty());
  // No registry files in this capture: unknown, not the Windows defaults.
  EXPECT_FALSE(s.has_restrict_null_session_access());
  EXPECT_FALSE(p.client().has_enable_plain_text_password());
  EXPECT_FALSE(p.client().has_hardened_paths_known());
  EXPECT_FALSE(p.client().has_compression_disabled());
  EXPECT_FALSE(p.client().has_enable_compressibility_sampling());
  EXPECT_FALSE(p.client().has_compressibility_sampling_size());
  EXPECT_TRUE(p.client().enable_insecure_guest_logons());
  EXPECT_FALSE(p.client().has_require_encryption());
  ASSERT_THAT(p.shares(), SizeIs(1));  // a bare object
  EXPECT_EQ(p.shares(0).name(), "Data");
  EXPECT_FALSE(p.shares(0).has_compress_data());
  EXPECT_THAT(p.sessions(), IsEmpty());  // an empty file: no sessions
  ASSERT_THAT(p.connections(), SizeIs(1));
  EXPECT_TRUE(p.connections(0).signed_());
  ASSERT_THAT(p.events(), SizeIs(1));
  EXPECT_EQ(p.events(0).kind(), "smb1_access");
  EXPECT_EQ(p.events(0).client_address(), "10.0.0.31");
  EXPECT_EQ(p.events(0).time().seconds(), 1764662400);
  const v1::ProbeError* e = FindError(p, "Get-SmbOpenFile");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code(), "CAPTURE");
  EXPECT_EQ(e->message(), "Access is denied.");
  EXPECT_THAT(p.probe_errors(), SizeIs(1));
  // Older capture folders have no Get-NetAdapter*.json: no NICs, and that is no error.
  EXPECT_THAT(p.nics(), IsEmpty());
}

TEST(CaptureSourceTest, MalformedNicFileIsAProbeErrorNamingIt) {
  std::string dir = absl::StrCat(::testing::TempDir(), "/capture_nic_error");
  ASSERT_TRUE(MakeDirs(dir).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/Get-NetAdapter.json", "[{\"Name\": \"Ethernet\",").ok());
  ASSERT_TRUE(
      WriteFileAtomic(dir + "/Get-NetAdapterRss.json",
                      R"([{"Name": "Ethernet", "Enabled": true, "NumberOfReceiveQueues": 4}])")
          .ok());
  auto p = NewWindowsCaptureSource(dir)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  const v1::ProbeError* e = FindError(*p, "Get-NetAdapter");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code(), "PARSE");
  EXPECT_THAT(e->message(), HasSubstr("Get-NetAdapter.json"));
  EXPECT_THAT(e->sections(), ElementsAre(v1::POSTURE_SECTION_NETWORK));
  EXPECT_THAT(p->probe_errors(), SizeIs(1));
  // The RSS file still counts; what only Get-NetAdapter knows stays unknown.
  ASSERT_THAT(p->nics(), SizeIs(1));
  EXPECT_EQ(p->nics(0).rss_queues(), 4u);
  EXPECT_FALSE(p->nics(0).has_link_speed_bps());
  EXPECT_FALSE(p->nics(0).has_up());
}

TEST(CaptureSourceTest, Ws2019Utf8BomNumericStringsAndSmb1Session) {
  v1::Posture p = CollectCapture("ws2019");
  EXPECT_THAT(p.probe_errors(), IsEmpty());
  EXPECT_TRUE(p.host().domain_joined());
  EXPECT_EQ(p.host().fqdn(), "fs2019.corp.contoso.com");
  EXPECT_EQ(p.host().logical_cores(), 8u);           // "8"
  EXPECT_EQ(p.server().name_hardening_level(), 2u);  // "2"
  EXPECT_TRUE(p.server().audit_smb1_access());
  EXPECT_TRUE(p.server().null_session_shares_known());
  EXPECT_THAT(p.server().null_session_shares(), IsEmpty());
  EXPECT_EQ(p.server().auto_disconnect_timeout_minutes(), 30u);
  EXPECT_TRUE(p.server().has_enable_forced_logoff());
  EXPECT_FALSE(p.server().enable_forced_logoff());
  EXPECT_THAT(p.server().null_session_pipes(), ElementsAre("netlogon", "samr", "lsarpc"));
  EXPECT_FALSE(p.server().has_compression_disabled()) << "WS2019 has no SMB compression";
  EXPECT_FALSE(p.server().has_request_compression());
  EXPECT_FALSE(p.client().has_request_compression());
  EXPECT_FALSE(p.shares(3).has_compress_data());
  EXPECT_FALSE(p.server().has_restrict_null_session_access());
  EXPECT_FALSE(p.client().has_hardened_paths_known());
  ASSERT_THAT(p.shares(), SizeIs(5));
  EXPECT_EQ(p.shares(2).share_type(), "InterprocessCommunication");
  ASSERT_THAT(p.sessions(), SizeIs(4));
  EXPECT_EQ(p.sessions(3).dialect(), v1::DIALECT_SMB_2_0_2);
  const v1::Session& alice = p.sessions(0);
  EXPECT_EQ(alice.session_id(), "1374389535013");
  EXPECT_EQ(alice.dialect(), v1::DIALECT_SMB_3_1_1);
  EXPECT_EQ(alice.encryption(), v1::PROTECTION_PARTIAL);  // Finance encrypted, Public not
  ASSERT_THAT(alice.shares(), SizeIs(2));
  EXPECT_EQ(alice.shares(0).name(), "Finance");
  EXPECT_EQ(alice.shares(0).encryption(), v1::PROTECTION_FULL);
  EXPECT_EQ(alice.shares(1).name(), "Public");
  EXPECT_EQ(alice.shares(1).encryption(), v1::PROTECTION_NONE);
  const v1::Session& scanner = p.sessions(1);
  EXPECT_EQ(scanner.dialect(), v1::DIALECT_SMB1);
  EXPECT_EQ(scanner.dialect_raw(), "1.5");
  EXPECT_EQ(scanner.num_opens(), 1u);
  EXPECT_EQ(scanner.seconds_exists(), 86000u);
  EXPECT_EQ(scanner.encryption(), v1::PROTECTION_NONE);
  EXPECT_EQ(scanner.signing(), v1::PROTECTION_UNSPECIFIED);  // this build has no Signed
  const v1::Session& peer = p.sessions(2);
  EXPECT_EQ(peer.client_address(), "fe80::6484:f325:adff:39eb");
  EXPECT_EQ(peer.dialect(), v1::DIALECT_SMB_3_0_2);
  EXPECT_EQ(peer.encryption(), v1::PROTECTION_UNSPECIFIED);  // no open files
  ASSERT_THAT(p.events(), SizeIs(3));
  EXPECT_EQ(p.events(0).kind(), "smb1_access");
  EXPECT_EQ(p.events(1).kind(), "unencrypted_rejected");
  EXPECT_EQ(p.events(1).client_address(), "10.1.9.7");
  EXPECT_EQ(p.events(1).share_name(), "Finance");
  EXPECT_EQ(p.events(2).kind(), "auth_failure");
  EXPECT_EQ(p.events(2).client_address(), "fe80::1c2:3ff:fe44:5566");
  EXPECT_EQ(p.events(2).status(), "0xC000006D");
  EXPECT_EQ(p.events(2).user(), "CORP\\mallory");
}

TEST(CaptureSourceTest, Ws2022LargeIdsCiphersAndClientConnections) {
  v1::Posture p = CollectCapture("ws2022");
  EXPECT_THAT(p.probe_errors(), IsEmpty());
  EXPECT_THAT(p.server().encryption_ciphers(),
              ElementsAre(v1::AES_128_GCM, v1::AES_128_CCM, v1::AES_256_GCM, v1::AES_256_CCM));
  EXPECT_THAT(p.client().encryption_ciphers(), ElementsAre(v1::AES_256_GCM, v1::AES_128_GCM));
  EXPECT_FALSE(p.server().compression_disabled());
  EXPECT_TRUE(p.server().has_request_compression());
  EXPECT_TRUE(p.server().quic_enabled());
  EXPECT_FALSE(p.server().has_min_dialect()) << "WS2022 has no Smb2DialectMin";
  ASSERT_THAT(p.sessions(), SizeIs(3));
  EXPECT_EQ(p.sessions(0).session_id(), "9007199254740993");
  EXPECT_EQ(p.sessions(1).session_id(), "18446744073709551557");
  EXPECT_EQ(p.sessions(0).encryption(), v1::PROTECTION_PARTIAL);
  EXPECT_EQ(p.sessions(2).dialect(), v1::DIALECT_SMB_2_1);
  EXPECT_EQ(p.sessions(2).encryption(), v1::PROTECTION_NONE);
  ASSERT_THAT(p.open_files(), SizeIs(4));
  EXPECT_EQ(p.open_files(0).file_id(), "9007199254750001");
  EXPECT_EQ(p.open_files(0).share_name(), "HR");
  ASSERT_THAT(p.connections(), SizeIs(2));
  EXPECT_TRUE(p.connections(0).encrypted());
  EXPECT_FALSE(p.connections(0).signed_());
  EXPECT_TRUE(p.connections(1).signed_());
  ASSERT_THAT(p.multichannel_connections(), SizeIs(1));
  EXPECT_EQ(p.multichannel_connections(0).client_link_speed_bps(), 25000000000u);
  // Get-NetAdapter's two adapters, joined with RSS and the SMB interface by ifIndex / name.
  ASSERT_THAT(p.nics(), SizeIs(2));
  EXPECT_EQ(p.nics(0).name(), "Ethernet 2");
  EXPECT_EQ(p.nics(0).link_speed_bps(), 25000000000u);
  EXPECT_EQ(p.nics(0).rss_queues(), 8u);
  EXPECT_TRUE(p.nics(0).rss_capable());
  EXPECT_TRUE(p.nics(0).up());
  EXPECT_EQ(p.nics(1).name(), "Ethernet");
  EXPECT_FALSE(p.nics(1).up());
  EXPECT_FALSE(p.nics(1).has_link_speed_bps());
  EXPECT_EQ(p.shares(4).name(), "Reports'; Remove-Item C:\\ -Recurse; '");
  EXPECT_TRUE(p.shares(2).compress_data());
  EXPECT_TRUE(p.shares(3).has_compress_data());
  EXPECT_FALSE(p.shares(3).compress_data());
  EXPECT_THAT(p.events(), IsEmpty());
  // CIS fields from the cmdlets.
  EXPECT_EQ(p.server().auto_disconnect_timeout_minutes(), 15u);
  EXPECT_TRUE(p.server().enable_forced_logoff());
  EXPECT_TRUE(p.server().null_session_pipes_known());
  EXPECT_THAT(p.server().null_session_pipes(), IsEmpty());
  EXPECT_TRUE(p.client().has_compression_disabled());
  EXPECT_FALSE(p.client().request_compression());
  EXPECT_FALSE(p.client().enable_compressibility_sampling());
  EXPECT_TRUE(p.client().has_enable_compressibility_sampling());
  EXPECT_EQ(p.client().compressibility_sampling_size(), 524288000u);
  EXPECT_EQ(p.client().compressible_threshold(), 104857600u);
  // ... and from the registry files.
  EXPECT_TRUE(p.server().has_restrict_null_session_access());
  EXPECT_FALSE(p.server().restrict_null_session_access());  // restrictnullsessaccess = 0
  EXPECT_TRUE(p.client().enable_plain_text_password());     // EnablePlainTextPassword = 1
  EXPECT_TRUE(p.client().hardened_paths_known());
  ASSERT_THAT(p.client().hardened_paths(), SizeIs(2));
  for (const auto& h : p.client().hardened_paths()) {
    EXPECT_TRUE(h.require_mutual_authentication()) << h.path();
    EXPECT_TRUE(h.require_integrity()) << h.path();
    EXPECT_FALSE(h.require_privacy()) << h.path();
  }
  EXPECT_EQ(p.client().hardened_paths(0).path(), "\\\\*\\NETLOGON");
  EXPECT_EQ(p.client().hardened_paths(1).path(), "\\\\*\\SYSVOL");
}

TEST(CaptureSourceTest, Ws2025Utf16NoBomDialectNumbersAndAuditEvents) {
  v1::Posture p = CollectCapture("ws2025");
  EXPECT_THAT(p.probe_errors(), IsEmpty());
  const v1::ServerConfig& s = p.server();
  EXPECT_EQ(s.min_dialect(), v1::DIALECT_SMB_3_1_1);
  EXPECT_EQ(s.max_dialect(), v1::DIALECT_SMB_3_1_1);  // 65535 = no maximum
  EXPECT_TRUE(s.audit_client_does_not_support_signing());
  EXPECT_TRUE(s.audit_client_does_not_support_encryption());
  EXPECT_TRUE(s.audit_insecure_guest_logon());
  EXPECT_TRUE(s.enable_auth_rate_limiter());
  EXPECT_EQ(s.invalid_authentication_delay_ms(), 2000u);
  EXPECT_FALSE(s.enable_mailslots());
  EXPECT_TRUE(s.encrypt_data());
  EXPECT_EQ(s.raw().at("FutureSmbProperty"), "introduced by a later build");
  EXPECT_EQ(s.raw().at("AutoDisconnectTimeoutInSecondsV2"), "900");
  EXPECT_EQ(s.auto_disconnect_timeout_minutes(), 15u);  // AutoDisconnectTimeoutInMinutesV1
  EXPECT_TRUE(s.enable_forced_logoff());
  EXPECT_TRUE(s.null_session_pipes_known());
  EXPECT_TRUE(s.restrict_null_session_access()) << "value absent: the Windows default";
  EXPECT_TRUE(p.client().has_enable_plain_text_password());
  EXPECT_FALSE(p.client().enable_plain_text_password());
  EXPECT_FALSE(p.client().enable_compressibility_sampling());
  EXPECT_EQ(p.client().compressibility_sampling_size(), 524288000u);
  EXPECT_EQ(p.client().compressible_threshold(), 104857600u);
  EXPECT_FALSE(p.client().compression_disabled());
  EXPECT_TRUE(p.client().has_request_compression());
  EXPECT_TRUE(p.shares(1).has_compress_data());
  ASSERT_THAT(p.client().hardened_paths(), SizeIs(2));
  for (const auto& h : p.client().hardened_paths()) {
    EXPECT_TRUE(h.require_mutual_authentication()) << h.path();
    EXPECT_TRUE(h.require_integrity()) << h.path();
    EXPECT_TRUE(h.require_privacy()) << h.path();
  }
  EXPECT_EQ(p.client().hardened_paths(1).value(),
            "requiremutualauthentication=1,RequireIntegrity = 1, RequirePrivacy=1");
  EXPECT_TRUE(p.client().require_signing());
  EXPECT_EQ(p.client().min_dialect(), v1::DIALECT_SMB_3_0);  // "768"
  EXPECT_TRUE(p.client().audit_server_does_not_support_signing());
  EXPECT_FALSE(p.client().block_ntlm());
  EXPECT_FALSE(p.client().require_encryption());
  ASSERT_THAT(p.shares(), SizeIs(5));
  EXPECT_EQ(p.shares(2).name(), "$(calc)");
  EXPECT_EQ(p.shares(3).name(), "\xE2\x80\x98x\xE2\x80\x99");
  EXPECT_EQ(p.shares(4).name(), "a`\"b");
  ASSERT_THAT(p.open_files(), SizeIs(1));  // a bare object
  ASSERT_THAT(p.sessions(), SizeIs(2));
  EXPECT_EQ(p.sessions(0).dialect(), v1::DIALECT_SMB_3_0);  // "3.00"
  EXPECT_EQ(p.sessions(0).signing(), v1::PROTECTION_FULL);
  EXPECT_EQ(p.sessions(0).encryption(), v1::PROTECTION_NONE);
  ASSERT_THAT(p.sessions(0).shares(), SizeIs(1));
  EXPECT_EQ(p.sessions(0).shares(0).name(), "VMS1");
  ASSERT_THAT(p.events(), SizeIs(6));
  std::vector<std::string> kinds;
  for (const auto& e : p.events()) kinds.push_back(e.kind());
  EXPECT_THAT(kinds, ElementsAre("client_no_signing", "client_no_encryption",
                                 "guest_logon_rejected", "insecure_guest_enabled", "", ""));
  EXPECT_EQ(p.events(0).client_address(), "192.168.101.50");
  EXPECT_EQ(p.events(1).share_name(), "VMS1");
  EXPECT_EQ(p.events(2).client_name(), "\\\\OLDNAS");
  EXPECT_EQ(p.events_dropped(), 0u);
}

TEST(CaptureSourceTest, EventBoundKeepsNewestAndCountsTheRest) {
  WindowsOptions options;
  options.max_events_per_report = 2;
  v1::Posture p = CollectCapture("ws2025", options);
  ASSERT_THAT(p.events(), SizeIs(2));
  EXPECT_EQ(p.events(0).event_id(), 31019u);
  EXPECT_EQ(p.events(1).event_id(), 30803u);
  EXPECT_EQ(p.events_dropped(), 4u);
}

TEST(CaptureSourceTest, PrintsAsProtobufJson) {
  v1::Posture p = CollectCapture("ws2022");
  auto json = ToJson(p);
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, HasSubstr("\"platform\": \"PLATFORM_WINDOWS\""));
  EXPECT_THAT(*json, HasSubstr("\"sessionId\": \"9007199254740993\""));
  EXPECT_THAT(*json, HasSubstr("\"encryptionCiphers\": ["));
}

class TempCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/capture_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(MakeDirs(dir_).ok());
  }
  void Put(const std::string& name, const std::string& bytes) {
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/" + name, bytes).ok());
  }
  std::string dir_;
};

TEST_F(TempCapture, MalformedFileIsOneProbeErrorNamingFileAndPosition) {
  Put("Get-SmbServerConfiguration.json", R"({"RequireSecuritySignature": true})");
  Put("Get-SmbShare.json", "[\n  {\"Name\": \"a\"},\n  {\"Name\": \"b\" \"Path\": 1}\n]");
  Put("Get-SmbSession.json", R"([{"SessionId": "x1"}, {"SessionId": 5}])");
  auto p = NewWindowsCaptureSource(dir_)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->server().require_signing());
  const v1::ProbeError* e = FindError(*p, "Get-SmbShare");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code(), "PARSE");
  EXPECT_THAT(e->message(), HasSubstr("Get-SmbShare.json"));
  EXPECT_THAT(e->message(), HasSubstr("line 3"));
  const v1::ProbeError* s = FindError(*p, "Get-SmbSession");
  ASSERT_NE(s, nullptr);
  EXPECT_THAT(s->message(), HasSubstr("Get-SmbSession.json[0].SessionId"));
  ASSERT_THAT(p->sessions(), SizeIs(1));
  EXPECT_EQ(p->sessions(0).session_id(), "5");
  // Not collected at all: no errors, no values.
  EXPECT_FALSE(p->has_client());
  EXPECT_EQ(FindError(*p, "Get-SmbClientConfiguration"), nullptr);
}

TEST_F(TempCapture, HostileBytesNeverCrash) {
  std::vector<std::string> inputs = {
      std::string("\xFF\xFE\x00", 3),
      std::string(1 << 16, '['),
      "{\"a\":\"\\ud800\"}",
      std::string("\x00\x00\x00", 3),
      "\xEF\xBB\xBF",
      "[{}]{}",
      "{\"SessionId\": 1e400}",
  };
  for (const auto& in : inputs) {
    for (const char* f :
         {"Get-SmbServerConfiguration.json", "Get-SmbSession.json", "events.json", "host.json",
          "Registry-LanmanServer.json", "Registry-HardenedPaths.json"}) {
      Put(f, in);
    }
    auto p = NewWindowsCaptureSource(dir_)->Collect();
    ASSERT_TRUE(p.ok()) << p.status();
  }
}

TEST(CaptureSourceTest, MissingDirectoryIsAnError) {
  auto p = NewWindowsCaptureSource("no/such/capture")->Collect();
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("windows-capture:no/such/capture"));
  EXPECT_EQ(NewWindowsCaptureSource("x/")->Describe(), "windows-capture:x");
}

// ------------------------------------------------------------------------- live

TEST(LiveSourceTest, SameParsersSamePosture) {
  FakePowerShellRunner runner(Fixture("ws2022"));
  WindowsOptions options;
  options.now = [] { return absl::FromUnixSeconds(1764660000); };
  options.detect_cpu = [] {
    v1::CpuFeatures cpu;
    cpu.set_aes_ni(true);
    return cpu;
  };
  auto live = NewWindowsLiveSource(options, &runner)->Collect();
  ASSERT_TRUE(live.ok()) << live.status();
  v1::Posture capture = CollectCapture("ws2022");
  using google::protobuf::util::MessageDifferencer;
  EXPECT_TRUE(MessageDifferencer::Equals(live->server(), capture.server()));
  EXPECT_TRUE(MessageDifferencer::Equals(live->client(), capture.client()));
  ASSERT_EQ(live->sessions_size(), capture.sessions_size());
  for (int i = 0; i < live->sessions_size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(live->sessions(i), capture.sessions(i))) << i;
  }
  ASSERT_EQ(live->shares_size(), capture.shares_size());
  for (int i = 0; i < live->shares_size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(live->shares(i), capture.shares(i))) << i;
  }
  EXPECT_EQ(live->collected_at().seconds(), 1764660000);
  EXPECT_TRUE(live->host().cpu().aes_ni());
  EXPECT_EQ(live->host().cpu().model(), "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz");
  EXPECT_THAT(live->probe_errors(), IsEmpty());
}

TEST(LiveSourceTest, ScriptsAreConstantsWithProjectionsArraysAndCaps) {
  FakePowerShellRunner runner(Fixture("ws2022"));
  WindowsOptions options;
  options.cmdlet_timeout = std::chrono::milliseconds(1234);
  options.max_output_bytes = 4321;
  ASSERT_TRUE(NewWindowsLiveSource(options, &runner)->Collect().ok());
  std::vector<std::string> probes;
  for (const auto& call : runner.calls()) {
    probes.push_back(call.probe);
    EXPECT_EQ(call.text, ProbeScript(call.probe));
    EXPECT_EQ(call.timeout, std::chrono::milliseconds(1234));
    EXPECT_EQ(call.max_output_bytes, 4321u);
    if (absl::StartsWith(call.probe, "Get-Smb")) {
      EXPECT_THAT(call.text, HasSubstr("-ExcludeProperty Cim*,PSComputerName"));
      EXPECT_THAT(call.text, HasSubstr(call.probe));
    }
  }
  EXPECT_THAT(probes, Contains("events"));
  EXPECT_THAT(probes, Contains("host"));
  EXPECT_THAT(ProbeScript("Get-SmbSession"), HasSubstr("-InputObject @(Get-SmbSession"));
  EXPECT_THAT(ProbeScript("Get-SmbShare"), HasSubstr("PresetPathAcl"));
  EXPECT_THAT(ScriptPrelude(), HasSubstr("$ErrorActionPreference = 'Stop'"));
  EXPECT_THAT(ScriptPrelude(), HasSubstr("UTF8Encoding $false"));
}

TEST(LiveSourceTest, RegistryScriptsAreConstantsNamingTheirKey) {
  for (const char* probe :
       {"Registry-LanmanServer", "Registry-LanmanWorkstation", "Registry-HardenedPaths"}) {
    const std::string& script = ProbeScript(probe);
    std::string key(RegistryKeyOf(probe));
    ASSERT_FALSE(key.empty()) << probe;
    EXPECT_THAT(key, ::testing::StartsWith("HKLM:\\")) << probe;
    EXPECT_THAT(script, HasSubstr("$key = '" + key + "'")) << probe;
    // A missing key is [] (the defaults), any other failure an error naming the key.
    EXPECT_THAT(script, HasSubstr("PathNotFound")) << probe;
    EXPECT_THAT(script, HasSubstr("throw ($key + ': '")) << probe;
    EXPECT_THAT(script, HasSubstr("-InputObject $values")) << probe;
    EXPECT_THAT(script, Not(HasSubstr("$SmbfleetData"))) << probe << " takes no input";
  }
  EXPECT_EQ(RegistryKeyOf("Get-SmbShare"), "");
}

TEST(LiveSourceTest, RegistryReadErrorLeavesItsFieldsUnknownNamingTheKey) {
  FakePowerShellRunner runner(Fixture("ws2025"));
  runner.SetError("Registry-HardenedPaths",
                  absl::UnknownError("Registry-HardenedPaths: exit code 1: "
                                     "HKLM:\\SOFTWARE\\Policies\\Microsoft\\Windows\\"
                                     "NetworkProvider\\HardenedPaths: Requested registry access "
                                     "is not allowed."));
  runner.SetOutput("Registry-LanmanServer", "[]");  // the key does not exist: the default
  auto p = NewWindowsLiveSource({}, &runner)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  const v1::ProbeError* e = FindError(*p, "Registry-HardenedPaths");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code(), "EXIT_STATUS");
  EXPECT_THAT(e->message(), HasSubstr("NetworkProvider\\HardenedPaths"));
  EXPECT_THAT(e->sections(), ElementsAre(v1::POSTURE_SECTION_CLIENT));
  EXPECT_FALSE(p->client().has_hardened_paths_known());
  EXPECT_THAT(p->client().hardened_paths(), IsEmpty());
  EXPECT_TRUE(p->server().restrict_null_session_access());
  EXPECT_FALSE(p->client().enable_plain_text_password());
  EXPECT_THAT(p->probe_errors(), SizeIs(1));
}

TEST(CaptureSourceTest, RegistryCaptureErrorKeepsItsSections) {
  std::string dir = absl::StrCat(::testing::TempDir(), "/capture_registry_error");
  ASSERT_TRUE(MakeDirs(dir).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/capture.json",
                              R"({"CapturedAt": "/Date(1764663000000)/", "Errors": [
                                   {"Probe": "Registry-LanmanServer",
                                    "Message": "HKLM:\\SYSTEM\\CurrentControlSet\\Services\\LanmanServer\\Parameters: Requested registry access is not allowed."}]})")
                  .ok());
  auto p = NewWindowsCaptureSource(dir)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  const v1::ProbeError* e = FindError(*p, "Registry-LanmanServer");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code(), "CAPTURE");
  EXPECT_THAT(e->message(), HasSubstr("LanmanServer\\Parameters: Requested registry access"));
  EXPECT_THAT(e->sections(), ElementsAre(v1::POSTURE_SECTION_SERVER));
  EXPECT_FALSE(p->server().has_restrict_null_session_access());
}

TEST(LiveSourceTest, FailedAndTimedOutCmdletsAreProbeErrors) {
  FakePowerShellRunner runner(Fixture("ws2019"));
  runner.SetError("Get-SmbSession",
                  absl::DeadlineExceededError("Get-SmbSession: timed out after 60000 ms"));
  runner.SetError("Get-SmbClientConfiguration",
                  absl::UnknownError("Get-SmbClientConfiguration: exit code 1: Access denied"));
  runner.SetOutput("Get-SmbShare", "[{\"Name\": ");
  auto p = NewWindowsLiveSource({}, &runner)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  const v1::ProbeError* t = FindError(*p, "Get-SmbSession");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->code(), "TIMEOUT");
  const v1::ProbeError* x = FindError(*p, "Get-SmbClientConfiguration");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->code(), "EXIT_STATUS");
  EXPECT_THAT(x->message(), HasSubstr("Access denied"));
  const v1::ProbeError* m = FindError(*p, "Get-SmbShare");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->code(), "PARSE");
  // The rest of the report still goes out.
  EXPECT_TRUE(p->server().smb1_enabled());
  EXPECT_THAT(p->sessions(), IsEmpty());
  EXPECT_THAT(p->open_files(), SizeIs(3));
  EXPECT_THAT(p->events(), SizeIs(3));
}

TEST(ProbeErrorSectionsTest, EachFailedProbeNamesWhatItLeavesUnknown) {
  FakePowerShellRunner runner(Fixture("ws2019"));
  runner.SetError("Get-SmbSession", absl::DeadlineExceededError("timed out"));
  runner.SetError("Get-SmbServerConfiguration", absl::UnknownError("exit code 1"));
  runner.SetError("events", absl::DeadlineExceededError("timed out"));
  auto p = NewWindowsLiveSource({}, &runner)->Collect();
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_NE(FindError(*p, "Get-SmbSession"), nullptr);
  EXPECT_THAT(FindError(*p, "Get-SmbSession")->sections(),
              ElementsAre(v1::POSTURE_SECTION_SESSIONS));
  ASSERT_NE(FindError(*p, "Get-SmbServerConfiguration"), nullptr);
  EXPECT_THAT(FindError(*p, "Get-SmbServerConfiguration")->sections(),
              ElementsAre(v1::POSTURE_SECTION_SERVER));
  ASSERT_NE(FindError(*p, "events"), nullptr);
  EXPECT_THAT(FindError(*p, "events")->sections(), ElementsAre(v1::POSTURE_SECTION_EVENTS));

  // A cmdlet that failed while the capture script ran keeps its sections.
  v1::Posture capture = CollectCapture("ws2016");
  ASSERT_NE(FindError(capture, "Get-SmbOpenFile"), nullptr);
  EXPECT_THAT(FindError(capture, "Get-SmbOpenFile")->sections(),
              ElementsAre(v1::POSTURE_SECTION_OPEN_FILES));
}

std::string LiveEvents(uint64_t from, uint64_t to, uint64_t latest) {
  nlohmann::json events = nlohmann::json::array();
  for (uint64_t r = from; r <= to; ++r) {
    events.push_back({{"Id", 3000},
                      {"LogName", "Microsoft-Windows-SMBServer/Audit"},
                      {"RecordId", r},
                      {"TimeCreated", absl::StrCat("/Date(", 1764600000000 + r * 1000, ")/")},
                      {"Level", 4},
                      {"EventData", {{"ClientName", absl::StrCat("10.0.0.", r)}}}});
  }
  nlohmann::json out = {{"events", events},
                        {"latest", {{"Microsoft-Windows-SMBServer/Audit", latest}}},
                        {"errors", nlohmann::json::array()}};
  return out.dump();
}

TEST(LiveSourceTest, EventBookmarkAcrossRestarts) {
  std::string state = absl::StrCat(::testing::TempDir(), "/live_bookmark_state");
  std::remove((state + "/events-bookmark.json").c_str());
  WindowsOptions options;
  options.state_dir = state;
  options.max_events_per_report = 10;
  FakePowerShellRunner runner;
  runner.SetOutput("events", LiveEvents(1, 3, 3));
  {
    auto source = NewWindowsLiveSource(options, &runner);
    auto p = source->Collect();
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(source->CommitCollected().ok());  // the report holding them is spooled
    ASSERT_THAT(p->events(), SizeIs(3));
    EXPECT_EQ(p->events(0).client_address(), "10.0.0.1");
  }
  // A restart: a new source over the same state directory. The reader returns an overlapping
  // window; only the new event is reported, and the script was told where to start.
  runner.SetOutput("events", LiveEvents(2, 5, 5));
  runner.ClearCalls();
  {
    auto source = NewWindowsLiveSource(options, &runner);
    auto p = source->Collect();
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(source->CommitCollected().ok());  // the report holding them is spooled
    ASSERT_THAT(p->events(), SizeIs(2));
    EXPECT_EQ(p->events(0).record_id(), 4u);
    EXPECT_EQ(p->events(1).record_id(), 5u);
    auto calls = runner.CallsOf("events");
    ASSERT_THAT(calls, SizeIs(1));
    nlohmann::json data = nlohmann::json::parse(calls[0].data_json);
    EXPECT_EQ(data["max"], 10);
    bool found = false;
    for (const auto& c : data["channels"]) {
      if (c["name"] == "Microsoft-Windows-SMBServer/Audit") {
        EXPECT_EQ(c["after"], 3);
        found = true;
      } else {
        EXPECT_EQ(c["after"], 0);
      }
    }
    EXPECT_TRUE(found);
    EXPECT_THAT(calls[0].text, Not(HasSubstr("Microsoft-Windows-SMBServer/Audit")))
        << "channel names travel as data";
  }
  // The events call fails: nothing reported, the bookmark stays, nothing is lost.
  runner.SetError("events", absl::DeadlineExceededError("events: timed out"));
  {
    auto source = NewWindowsLiveSource(options, &runner);
    auto p = source->Collect();
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(source->CommitCollected().ok());  // the report holding them is spooled
    EXPECT_THAT(p->events(), IsEmpty());
  }
  runner.ClearError("events");
  runner.SetOutput("events", LiveEvents(6, 7, 40));  // 35 new, the newest fetched are 6..7
  {
    auto source = NewWindowsLiveSource(options, &runner);
    auto p = source->Collect();
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(source->CommitCollected().ok());  // the report holding them is spooled
    EXPECT_THAT(p->events(), SizeIs(2));
    EXPECT_EQ(p->events_dropped(), 33u);
  }
}

TEST(LiveSourceTest, EventBookmarkAdvancesOnlyWhenTheReportIsCommitted) {
  std::string state = absl::StrCat(::testing::TempDir(), "/live_bookmark_commit");
  std::remove((state + "/events-bookmark.json").c_str());
  WindowsOptions options;
  options.state_dir = state;
  FakePowerShellRunner runner;
  runner.SetOutput("events", LiveEvents(1, 3, 3));
  {
    // Collected, then the agent is killed (or the spool write fails) before the commit.
    auto p = NewWindowsLiveSource(options, &runner)->Collect();
    ASSERT_TRUE(p.ok());
    EXPECT_THAT(p->events(), SizeIs(3));
  }
  EXPECT_FALSE(FileExists(state + "/events-bookmark.json"));
  auto source = NewWindowsLiveSource(options, &runner);
  // The same events again, in a collect that is not committed either, then in one that is.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto p = source->Collect();
    ASSERT_TRUE(p.ok());
    ASSERT_THAT(p->events(), SizeIs(3)) << attempt;
    EXPECT_EQ(p->events(0).record_id(), 1u) << attempt;
  }
  ASSERT_TRUE(source->CommitCollected().ok());
  ASSERT_TRUE(source->CommitCollected().ok());  // a second commit changes nothing
  runner.SetOutput("events", LiveEvents(1, 5, 5));
  auto p = source->Collect();
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(p->events(), SizeIs(2));
  EXPECT_EQ(p->events(0).record_id(), 4u);
  // The events call fails: the commit of that collect keeps the bookmark where it was.
  runner.SetError("events", absl::DeadlineExceededError("events: timed out"));
  ASSERT_TRUE(source->Collect().ok());
  ASSERT_TRUE(source->CommitCollected().ok());
  runner.ClearError("events");
  p = source->Collect();
  ASSERT_TRUE(p.ok());
  ASSERT_THAT(p->events(), SizeIs(2));
  EXPECT_EQ(p->events(0).record_id(), 4u);
}

// ------------------------------------------------------------------------- runner
// POSIX only: a shell script stands in for powershell.exe.
#ifndef _WIN32

// A stand-in for powershell.exe run by the real CommandRunner: proves the argv, the
// environment, the timeout and the output cap end to end.
class FakePowerShellExe : public ::testing::Test {
 protected:
  std::string Script(const std::string& name, const std::string& body) {
    std::string path = absl::StrCat(::testing::TempDir(), "/", name);
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  std::unique_ptr<CommandRunner> commands_ = NewPosixCommandRunner();
};

TEST_F(FakePowerShellExe, EncodedCommandAndDataAsEnvironment) {
  // Prints its last argument (the -EncodedCommand value) and the data variable.
  std::string exe = Script("ps_echo",
                           "for a in \"$@\"; do last=\"$a\"; done\n"
                           "printf '%s\\n%s' \"$last\" \"$SMBFLEET_DATA\"");
  auto runner = NewPowerShellRunner(commands_.get(), exe);
  PowerShellScript s;
  s.probe = "apply";
  s.text = "Write-Output 1\n";
  s.data_json = R"({"share":"Reports'; Remove-Item C:\\ -Recurse; '"})";
  auto out = runner->Run(s);
  ASSERT_TRUE(out.ok()) << out.status();
  std::string encoded = out->substr(0, out->find('\n'));
  std::string data = out->substr(out->find('\n') + 1);
  std::string utf16;
  ASSERT_TRUE(absl::Base64Unescape(encoded, &utf16));
  auto text = DecodeText("\xFF\xFE" + utf16, "encoded");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, ScriptPrelude() + s.text);
  std::string decoded;
  ASSERT_TRUE(absl::Base64Unescape(data, &decoded));
  EXPECT_EQ(decoded, s.data_json);
  Command c = BuildPowerShellCommand(s, "powershell.exe");
  EXPECT_THAT(c.argv, Contains("-NonInteractive"));
  EXPECT_THAT(c.argv, Contains("-NoProfile"));
  for (const auto& a : c.argv) EXPECT_THAT(a, Not(HasSubstr("Remove-Item")));
}

TEST_F(FakePowerShellExe, TimeoutCapAndExitStatus) {
  auto slow = NewPowerShellRunner(commands_.get(), Script("ps_slow", "sleep 10"));
  PowerShellScript s;
  s.probe = "Get-SmbSession";
  s.text = ProbeScript("Get-SmbSession");
  s.timeout = std::chrono::milliseconds(200);
  auto t = slow->Run(s);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(t.status().message(), HasSubstr("Get-SmbSession"));

  auto loud = NewPowerShellRunner(commands_.get(), Script("ps_loud", "head -c 100000 /dev/zero"));
  s.timeout = std::chrono::milliseconds(5000);
  s.max_output_bytes = 1000;
  auto l = loud->Run(s);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), absl::StatusCode::kResourceExhausted);

  auto failing = NewPowerShellRunner(
      commands_.get(),
      Script("ps_fail", "echo 'The term Get-SmbSession is not recognized' >&2; exit 1"));
  s.max_output_bytes = 1 << 20;
  auto f = failing->Run(s);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(f.status().message(), HasSubstr("exit code 1: The term Get-SmbSession"));
}

#endif  // _WIN32

}  // namespace
}  // namespace smbfleet::agent::windows

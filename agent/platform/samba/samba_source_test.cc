#include "agent/platform/samba/samba_source.h"

#include <filesystem>

#include "agent/core/testing/fake_tcp_stats.h"
#include "agent/platform/samba/fake_runner_for_test.h"
#include "agent/platform/samba/fixtures_for_test.h"
#include "common/files.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::samba {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The fixtures' smbd logs to /srv/samba-lab/log; keep the unit tests off the real disk.
class NoLogs : public LogFiles {
 public:
  absl::StatusOr<std::vector<std::string>> List(const std::string& dir,
                                                const std::string& prefix) override {
    return std::vector<std::string>{};
  }
  absl::StatusOr<std::string> ReadTail(const std::string& path, size_t max_bytes) override {
    return absl::NotFoundError(path);
  }
};

using ::smbfleet::agent::testing::FakeTcpStats;

TcpConnection Peer(const std::string& address, uint16_t port) {
  TcpConnection c;
  c.local_address = "127.0.0.1";
  c.local_port = 445;
  c.remote_address = address;
  c.remote_port = port;
  return c;
}

class SambaSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A folder of its own: the tests of this suite run side by side under ctest -j.
    dir_ = smbfleet::testing::MakeTestDir("smbfleet-samba-source");
    conf_ = dir_ + "/smb.conf";
    ASSERT_TRUE(WriteFileAtomic(conf_, "[global]\n").ok());
    options_.smb_conf = conf_;
    options_.env = {{"NSS_WRAPPER_PASSWD", "/lab/passwd"}};
    options_.sysfs_root = "";  // this machine's NICs are no fixture; sysfs_nics_test fakes them
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Testparm() const { return "testparm -s -v " + conf_; }
  std::string SmbStatus() const { return "smbstatus -s " + conf_ + " --json"; }

  void Replay(const std::string& fixture) {
    runner_.Set(Testparm(), FakeRunner::Ok(SambaFixture(fixture + ".testparm.txt")));
    runner_.Set(SmbStatus(), FakeRunner::Ok(SambaFixture(fixture + ".smbstatus.json")));
  }

  std::string dir_;
  std::string conf_;
  SambaOptions options_;
  FakeRunner runner_;
  NoLogs logs_;
};

TEST_F(SambaSourceTest, FullPostureFromCapturedOutput) {
  Replay("share-encrypted");
  auto source = NewSambaSource(options_, &runner_, &logs_);
  EXPECT_EQ(source->Describe(), "samba:" + conf_);
  auto posture = source->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  EXPECT_EQ(posture->host().platform(), v1::PLATFORM_SAMBA);
  EXPECT_EQ(posture->host().samba_version(), "4.17.12-Debian");
  EXPECT_EQ(posture->probe_errors_size(), 0);
  EXPECT_EQ(posture->sessions_size(), 3);
  ASSERT_EQ(posture->shares_size(), 2);
  EXPECT_EQ(posture->shares(0).name(), "demo");
  EXPECT_EQ(posture->shares(0).current_users(), 2u);
  EXPECT_EQ(posture->shares(1).name(), "finance");
  EXPECT_EQ(posture->shares(1).current_users(), 1u);
  EXPECT_TRUE(posture->shares(1).encrypt_data());
  ASSERT_EQ(posture->open_files_size(), 1);
  EXPECT_EQ(posture->open_files(0).share_name(), "finance");
  // The tools see the caller's environment additions (nss_wrapper for a lab server).
  for (const Command& c : runner_.commands()) {
    EXPECT_EQ(c.env.at("NSS_WRAPPER_PASSWD"), "/lab/passwd");
    EXPECT_EQ(c.timeout, options_.timeout);
  }
  EXPECT_THAT(runner_.argvs(), ElementsAre(Testparm(), SmbStatus()));
}

TEST_F(SambaSourceTest, GuestAccountSessionsAreGuests) {
  runner_.Set(Testparm(), FakeRunner::Ok(SambaFixture("mixed.testparm.txt")));
  runner_.Set(SmbStatus(), FakeRunner::Ok(R"({"version": "4.17.12-Debian", "sessions": {"1": {
      "session_id": "1", "username": "nobody", "session_dialect": "SMB3_11"}}})"));
  auto posture = NewSambaSource(options_, &runner_, &logs_)->Collect();
  ASSERT_TRUE(posture.ok());
  ASSERT_EQ(posture->sessions_size(), 1);
  EXPECT_TRUE(posture->sessions(0).guest());
}

TEST_F(SambaSourceTest, FailedProbesAreData) {
  struct Case {
    const char* name;
    absl::StatusOr<CommandResult> smbstatus;
    const char* code;
    const char* message;
  };
  const Case cases[] = {
      {"not root", FakeRunner::Exit(255, "smbstatus only works as root!\n"), "EXIT_STATUS",
       "smbstatus only works as root!"},
      {"timeout", absl::DeadlineExceededError("timed out after 30000 ms"), "TIMEOUT", "timed out"},
      {"huge", absl::ResourceExhaustedError("stdout over 16777216 bytes"), "OUTPUT_TOO_LARGE",
       "16777216"},
      {"missing", absl::NotFoundError("smbstatus: no such program"), "NOT_FOUND",
       "no such program"},
      {"garbage", FakeRunner::Ok("Can't load /etc/samba/smb.conf - run testparm to debug it\n"),
       "PARSE", "not valid JSON"},
  };
  for (const Case& c : cases) {
    FakeRunner runner;
    runner.Set(Testparm(), FakeRunner::Ok(SambaFixture("idle.testparm.txt")));
    runner.Set(SmbStatus(), c.smbstatus);
    runner.Set("testparm --version", FakeRunner::Ok("Version 4.17.12-Debian\n"));
    auto posture = NewSambaSource(options_, &runner, &logs_)->Collect();
    ASSERT_TRUE(posture.ok()) << c.name << ": " << posture.status();
    ASSERT_EQ(posture->probe_errors_size(), 1) << c.name;
    EXPECT_EQ(posture->probe_errors(0).probe(), "smbstatus") << c.name;
    EXPECT_EQ(posture->probe_errors(0).code(), c.code) << c.name;
    EXPECT_THAT(posture->probe_errors(0).message(), HasSubstr(c.message)) << c.name;
    // The configuration half still arrived, and the version came from testparm.
    EXPECT_EQ(posture->shares_size(), 2) << c.name;
    EXPECT_TRUE(posture->server().has_require_signing()) << c.name;
    EXPECT_EQ(posture->host().samba_version(), "4.17.12-Debian") << c.name;
  }
}

TEST_F(SambaSourceTest, ProbeErrorsNameTheSectionsTheyLeaveUnknown) {
  runner_.Set(Testparm(), FakeRunner::Exit(1, "Can't load smb.conf\n"));
  runner_.Set(SmbStatus(), FakeRunner::Exit(255, "smbstatus only works as root!\n"));
  runner_.Set("testparm --version", FakeRunner::Ok("Version 4.17.12-Debian\n"));
  auto posture = NewSambaSource(options_, &runner_, &logs_)->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  ASSERT_EQ(posture->probe_errors_size(), 2);
  EXPECT_EQ(posture->probe_errors(0).probe(), "testparm");
  EXPECT_THAT(posture->probe_errors(0).sections(),
              ElementsAre(v1::POSTURE_SECTION_SERVER, v1::POSTURE_SECTION_CLIENT,
                          v1::POSTURE_SECTION_SHARES));
  EXPECT_EQ(posture->probe_errors(1).probe(), "smbstatus");
  EXPECT_THAT(posture->probe_errors(1).sections(),
              ElementsAre(v1::POSTURE_SECTION_SESSIONS, v1::POSTURE_SECTION_OPEN_FILES));
}

TEST_F(SambaSourceTest, TestparmRejectingAValueStillReportsTheRest) {
  CommandResult bad = FakeRunner::Ok(SambaFixture("idle.testparm.txt"));
  bad.exit_code = 1;
  bad.stderr_data = "WARNING: Ignoring invalid value 'bogus' for parameter 'server signing'\n";
  runner_.Set(Testparm(), bad);
  runner_.Set(SmbStatus(), FakeRunner::Ok(SambaFixture("idle.smbstatus.json")));
  auto posture = NewSambaSource(options_, &runner_, &logs_)->Collect();
  ASSERT_TRUE(posture.ok());
  ASSERT_EQ(posture->probe_errors_size(), 1);
  EXPECT_EQ(posture->probe_errors(0).probe(), "testparm");
  EXPECT_THAT(posture->probe_errors(0).message(), HasSubstr("Ignoring invalid value 'bogus'"));
  EXPECT_EQ(posture->shares_size(), 2);
}

TEST_F(SambaSourceTest, MissingConfigIsAnError) {
  options_.smb_conf = ::testing::TempDir() + "/no/such/smb.conf";
  auto posture = NewSambaSource(options_, &runner_, &logs_)->Collect();
  ASSERT_FALSE(posture.ok());
  EXPECT_EQ(posture.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(posture.status().message(), HasSubstr("/no/such/smb.conf"));
  EXPECT_TRUE(runner_.commands().empty());
}

}  // namespace
}  // namespace smbfleet::agent::samba

namespace smbfleet::agent::samba {
namespace {

std::map<std::string, const v1::Session*> BySessionId(const v1::Posture& posture) {
  std::map<std::string, const v1::Session*> out;
  for (const auto& s : posture.sessions()) out[s.session_id()] = &s;
  return out;
}

TEST_F(SambaSourceTest, RoundTripTimesJoinSessionsByClientAddressAndPort) {
  Replay("share-encrypted");  // sessions from 127.0.0.1 ports 41418, 41432 and 41446
  TcpConnection full = Peer("127.0.0.1", 41418);
  full.rtt_us = 8900;
  full.rttvar_us = 4400;
  full.min_rtt_us = 12;
  full.retransmits = 3;
  full.delivery_rate_bytes_per_sec = 125000000;
  TcpConnection old_kernel = Peer("127.0.0.1", 41432);  // tcp_info without min_rtt
  old_kernel.rtt_us = 700;
  old_kernel.rttvar_us = 350;
  old_kernel.retransmits = 0;
  // 41446 has no socket any more (closed between smbstatus and sock_diag); another client has.
  FakeTcpStats tcp(std::vector<TcpConnection>{full, old_kernel, Peer("127.0.0.1", 50000)});
  auto posture = NewSambaSource(options_, &runner_, &logs_, &tcp)->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  EXPECT_EQ(posture->probe_errors_size(), 0);
  EXPECT_EQ(tcp.calls(), 1);
  EXPECT_THAT(tcp.ports(), ElementsAre(44590));  // the lab server's `smb ports`
  auto sessions = BySessionId(*posture);
  ASSERT_EQ(sessions.size(), 3u);

  const v1::Session& a = *sessions.at("2338094607");
  EXPECT_EQ(a.client_port(), 41418u);
  EXPECT_EQ(a.rtt_us(), 8900u);
  EXPECT_EQ(a.rttvar_us(), 4400u);
  EXPECT_EQ(a.min_rtt_us(), 12u);
  EXPECT_EQ(a.retransmits(), 3u);
  EXPECT_EQ(a.delivery_rate_bytes_per_sec(), 125000000u);

  const v1::Session& b = *sessions.at("211018917");
  EXPECT_EQ(b.client_port(), 41432u);
  EXPECT_EQ(b.rtt_us(), 700u);
  EXPECT_TRUE(b.has_retransmits());
  EXPECT_EQ(b.retransmits(), 0u);
  EXPECT_FALSE(b.has_min_rtt_us());
  EXPECT_FALSE(b.has_delivery_rate_bytes_per_sec());

  const v1::Session& gone = *sessions.at("1086455197");
  EXPECT_EQ(gone.client_port(), 41446u);
  EXPECT_FALSE(gone.has_rtt_us());
  EXPECT_FALSE(gone.has_rttvar_us());
  EXPECT_FALSE(gone.has_min_rtt_us());
  EXPECT_FALSE(gone.has_retransmits());
  EXPECT_FALSE(gone.has_delivery_rate_bytes_per_sec());
}

TEST_F(SambaSourceTest, IPv6ClientsMatchInCanonicalForm) {
  runner_.Set(Testparm(), FakeRunner::Ok(SambaFixture("mixed.testparm.txt")));
  TcpConnection c = Peer("fd00::9", 51000);
  c.min_rtt_us = 23000;
  TcpConnection mapped = Peer("10.0.0.9", 51001);  // sock_diag's form of ::ffff:10.0.0.9
  mapped.min_rtt_us = 31000;
  runner_.Set(SmbStatus(), FakeRunner::Ok(R"({"sessions": {"1": {"session_id": "1",
      "username": "u", "hostname": "ipv6:fd00:0:0::0009:51000"}, "2": {"session_id": "2",
      "username": "u", "hostname": "ipv6:::ffff:10.0.0.9:51001"}}})"));
  FakeTcpStats tcp(std::vector<TcpConnection>{c, mapped});
  auto posture = NewSambaSource(options_, &runner_, &logs_, &tcp)->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  ASSERT_EQ(posture->sessions_size(), 2);
  auto sessions = BySessionId(*posture);
  EXPECT_EQ(sessions.at("1")->min_rtt_us(), 23000u);
  EXPECT_EQ(sessions.at("2")->min_rtt_us(), 31000u);
}

TEST_F(SambaSourceTest, FailedSockDiagReadIsAProbeErrorAndLeavesTimesUnknown) {
  struct Case {
    absl::Status status;
    const char* code;
  };
  for (const Case& c :
       {Case{absl::PermissionDeniedError("sock_diag: Operation not permitted"),
             "PERMISSION_DENIED"},
        Case{absl::UnimplementedError("sock_diag: Protocol not supported"), "UNSUPPORTED"},
        Case{absl::DeadlineExceededError("sock_diag: no reply"), "TIMEOUT"},
        Case{absl::InternalError("sock_diag: truncated"), "ERROR"}}) {
    Replay("share-encrypted");
    FakeTcpStats tcp(c.status);
    auto posture = NewSambaSource(options_, &runner_, &logs_, &tcp)->Collect();
    ASSERT_TRUE(posture.ok()) << posture.status();
    ASSERT_EQ(posture->probe_errors_size(), 1) << c.code;
    const v1::ProbeError& e = posture->probe_errors(0);
    EXPECT_EQ(e.probe(), "sock_diag");
    EXPECT_EQ(e.code(), c.code);
    EXPECT_EQ(e.message(), c.status.message());
    // The sessions themselves are known: the probe leaves no section unknown.
    EXPECT_EQ(e.sections_size(), 0);
    ASSERT_EQ(posture->sessions_size(), 3);
    for (const auto& s : posture->sessions()) {
      EXPECT_NE(s.client_port(), 0u);
      EXPECT_FALSE(s.has_rtt_us()) << s.session_id();
      EXPECT_FALSE(s.has_min_rtt_us()) << s.session_id();
      EXPECT_FALSE(s.has_retransmits()) << s.session_id();
    }
  }
}

TEST_F(SambaSourceTest, NoSessionsNoSockDiagRead) {
  Replay("idle");
  FakeTcpStats tcp(absl::PermissionDeniedError("must not be asked"));
  auto posture = NewSambaSource(options_, &runner_, &logs_, &tcp)->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  EXPECT_EQ(posture->sessions_size(), 0);
  EXPECT_EQ(tcp.calls(), 0);
  EXPECT_EQ(posture->probe_errors_size(), 0);
}

}  // namespace
}  // namespace smbfleet::agent::samba

namespace smbfleet::agent::samba {
namespace {

TEST_F(SambaSourceTest, DefaultSmbPortsWhenTestparmFails) {
  runner_.Set(Testparm(), FakeRunner::Exit(1, "testparm: not allowed"));
  runner_.Set(SmbStatus(), FakeRunner::Ok(SambaFixture("share-encrypted.smbstatus.json")));
  FakeTcpStats tcp(std::vector<TcpConnection>{});
  auto posture = NewSambaSource(options_, &runner_, &logs_, &tcp)->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  EXPECT_THAT(tcp.ports(), ElementsAre(445, 139));
}

}  // namespace
}  // namespace smbfleet::agent::samba

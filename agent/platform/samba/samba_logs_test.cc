#include "agent/platform/samba/samba_logs.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::samba {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Lines as smbd 4.17 wrote them in the lab (log level = 1 auth_audit:3).
constexpr char kLogVm[] =
    "pid=17120, ...torn line from the tail read\n"
    "[2026/12/02 16:19:39.797167,  0] ../../source3/smbd/server.c:1741(main)\n"
    "  smbd version 4.17.12-Debian started.\n"
    "[2026/12/02 16:19:41.429035,  1] ../../source3/smbd/smb2_tcon.c:327(smbd_smb2_tree_connect)\n"
    "  reject tcon with dialect[0x0210] as encryption is required for service finance\n"
    "[2026/12/02 16:20:03.058562,  1] ../../source3/smbd/smb1_process.c:1201(switch_message)\n"
    "  service[demo] requires encryptionSMBtdis ACCESS_DENIED. mid=8\n";

constexpr char kLogIp[] =
    "[2026/12/02 16:20:02.537449,  3] "
    "../../auth/auth_log.c:647(log_authentication_event_human_readable)\n"
    "  Auth: [SMB2,(null)] user [SMBFLEET]\\[smbfleet] at [Wed, 02 Dec 2026 16:20:02.535674 UTC] "
    "with [NTLMv2] status [NT_STATUS_OK] workstation [VM] remote host [ipv4:127.0.0.1:33486] "
    "became [SMBFLEET-LAB]\\[smbfleet] [S-1-5-21-1]. local host [ipv4:127.0.0.1:44506] \n"
    "[2026/12/02 16:20:02.539871,  1] "
    "../../source3/smbd/smb2_sesssetup.c:283(smbd_smb2_auth_generic_return)\n"
    "  reject session with dialect[0x0210] as encryption is required\n"
    "[2026/12/02 16:11:26.192108,  2] "
    "../../auth/auth_log.c:647(log_authentication_event_human_readable)\n"
    "  Auth: [SMB2,(null)] user [WORKGROUP]\\[smbfleet] at [Wed, 02 Dec 2026 16:11:26.191855 UTC] "
    "with [NTLMv2] status [NT_STATUS_WRONG_PASSWORD] workstation [VM] remote host "
    "[ipv4:127.0.0.1:59232] mapped to [WORKGROUP]\\[smbfleet]. local host [ipv4:127.0.0.1:44504] \n"
    "[2026/12/02 16:20:03.484129,  1] "
    "../../source3/smbd/smb2_sesssetup.c:277(smbd_smb2_auth_generic_return)\n"
    "  reject guest session as encryption is required\n";

TEST(SambaLogsTest, EncryptionRefusalsPerTreeConnect) {
  std::vector<v1::Event> events = ParseSambaLog(kLogVm, "log.vm");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind(), "client_no_encryption");
  EXPECT_EQ(events[0].share_name(), "finance");
  EXPECT_EQ(events[0].data().at("dialect"), "0x0210");
  EXPECT_EQ(events[0].client_name(), "vm");
  EXPECT_EQ(events[0].level(), v1::EVENT_LEVEL_WARNING);
  EXPECT_EQ(events[0].provider(), "smbd");
  EXPECT_EQ(events[0].channel(), "samba:log.vm");
  EXPECT_THAT(events[0].message(), HasSubstr("reject tcon with dialect[0x0210]"));
  EXPECT_GT(events[0].time().seconds(), 1700000000);
  EXPECT_EQ(events[1].share_name(), "demo");
  EXPECT_NE(events[0].record_id(), events[1].record_id());
  // Same line, same id: a collector can dedupe events seen in two reports.
  EXPECT_EQ(ParseSambaLog(kLogVm, "log.vm")[0].record_id(), events[0].record_id());
}

TEST(SambaLogsTest, RefusedSessionsAndFailedLogons) {
  std::vector<v1::Event> events = ParseSambaLog(kLogIp, "log.127.0.0.1");
  ASSERT_EQ(events.size(), 3u);  // the successful logon is not an event
  EXPECT_EQ(events[0].kind(), "client_no_encryption");
  EXPECT_EQ(events[0].share_name(), "");
  EXPECT_EQ(events[0].client_name(), "127.0.0.1");
  EXPECT_EQ(events[1].kind(), "");
  EXPECT_EQ(events[1].status(), "NT_STATUS_WRONG_PASSWORD");
  EXPECT_EQ(events[1].user(), "WORKGROUP\\smbfleet");
  EXPECT_EQ(events[1].client_address(), "127.0.0.1");
  EXPECT_EQ(events[1].client_name(), "VM");
  EXPECT_EQ(events[1].level(), v1::EVENT_LEVEL_INFORMATION);
  EXPECT_EQ(events[2].data().at("guest"), "true");
}

TEST(SambaLogsTest, GarbageIsSkipped) {
  EXPECT_THAT(ParseSambaLog("", "log.x"), IsEmpty());
  EXPECT_THAT(ParseSambaLog("[not a header]\n  reject tcon as encryption is required\n", "log.x"),
              IsEmpty());
  EXPECT_THAT(ParseSambaLog("[2026/12/02 16:19:41.4,  1] x\n", "log.x"), IsEmpty());
  EXPECT_THAT(ParseSambaLog(std::string("[2026/12/02 16:19:41.4,  1] x\n  Auth: [\n"), "log.x"),
              IsEmpty());
}

class FakeLogFiles : public LogFiles {
 public:
  std::map<std::string, std::string> files;
  absl::StatusOr<std::vector<std::string>> List(const std::string& dir,
                                                const std::string& prefix) override {
    listed = dir + "|" + prefix;
    if (files.empty()) return absl::NotFoundError(dir);
    std::vector<std::string> out;
    for (const auto& [path, text] : files) out.push_back(path);
    return out;
  }
  absl::StatusOr<std::string> ReadTail(const std::string& path, size_t max_bytes) override {
    const std::string& text = files.at(path);
    return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
  }
  std::string listed;
};

TEST(SambaLogsTest, CollectKeepsTheNewestWithinTheBound) {
  FakeLogFiles files;
  files.files["/var/log/samba/log.vm"] = kLogVm;
  files.files["/var/log/samba/log.127.0.0.1"] = kLogIp;
  v1::Posture p;
  LogLimits limits;
  limits.max_events = 3;
  CollectLogEvents("/var/log/samba/log.%m", &files, limits, &p);
  EXPECT_EQ(files.listed, "/var/log/samba|log.");
  ASSERT_EQ(p.events_size(), 3);
  EXPECT_EQ(p.events_dropped(), 2u);
  // Oldest first among the newest three.
  EXPECT_LE(p.events(0).time().seconds(), p.events(2).time().seconds());
  EXPECT_EQ(p.events(2).data().at("guest"), "true");
  EXPECT_EQ(p.probe_errors_size(), 0);
}

TEST(SambaLogsTest, MissingLogDirectoryIsNoEvents) {
  FakeLogFiles files;
  v1::Posture p;
  CollectLogEvents("/var/log/samba/log.%m", &files, LogLimits(), &p);
  EXPECT_EQ(p.events_size(), 0);
  EXPECT_EQ(p.probe_errors_size(), 0);
  CollectLogEvents("", &files, LogLimits(), &p);
  EXPECT_EQ(p.events_size(), 0);
}

}  // namespace
}  // namespace smbfleet::agent::samba

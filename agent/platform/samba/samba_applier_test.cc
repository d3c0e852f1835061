#include "agent/platform/samba/samba_applier.h"

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/platform/samba/fake_runner_for_test.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::samba {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// Stands in for testparm/smbcontrol at the OS boundary: `testparm -s -v` prints a standalone
// server's defaults overridden by whatever the managed include files say, and rejects enum
// values Samba would reject. Shares listed in `unwired` ignore their managed file, as if
// smb.conf lacked the include line.
class FakeSamba {
 public:
  FakeSamba(const std::string& conf, const std::string& managed_dir, FakeRunner* runner)
      : managed_dir_(managed_dir) {
    // Any smb.conf: the live one, or the applier's staged copy of it.
    runner->SetPrefixHandler("testparm -s -v ",
                             [this](const Command& c) { return Testparm(c.argv.back()); });
    runner->SetHandler("smbcontrol -s " + conf + " -- smbd reload-config", [this](const Command&) {
      ++reloads;
      return reload_result;
    });
    for (const char* args :
         {"close-share *", "close-share finance", "close-share demo", "close-share -d10",
          "kill-client-ip 127.0.0.1", "kill-client-ip 10.0.0.7"}) {
      runner->Set("smbcontrol -s " + conf + " -- smbd " + args, FakeRunner::Ok(""));
    }
    runner->Set("smbstatus -s " + conf + " --json",
                FakeRunner::Ok(R"({"sessions": {"1": {"session_id": "1",
                    "hostname": "ipv4:10.0.0.7:5000"}, "2": {"session_id": "2",
                    "hostname": "ipv4:10.0.0.7:5001"}, "3": {"session_id": "3",
                    "hostname": "ipv4:127.0.0.1:5002"}}})"));
  }

  std::set<std::string> unwired;
  int reloads = 0;
  absl::StatusOr<CommandResult> reload_result = FakeRunner::Ok("");

 private:
  std::map<std::string, std::string> Overrides(const std::string& file) {
    std::map<std::string, std::string> out;
    auto content = ReadFile(file);
    if (!content.ok()) return out;
    for (absl::string_view line : absl::StrSplit(*content, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (line.empty() || line[0] == '#') continue;
      std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
      std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(kv.first));
      if (key == "smb encrypt") key = "server smb encrypt";
      out[key] = std::string(absl::StripAsciiWhitespace(kv.second));
    }
    return out;
  }

  // Section name -> include paths in `conf`.
  static std::map<std::string, std::vector<std::string>> Includes(const std::string& conf) {
    std::map<std::string, std::vector<std::string>> out;
    std::string section;
    for (absl::string_view line : absl::StrSplit(ReadFile(conf).value_or(""), '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty() && line.front() == '[') {
        section = std::string(absl::StripSuffix(absl::StripPrefix(line, "["), "]"));
        continue;
      }
      std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
      if (absl::StripAsciiWhitespace(kv.first) == "include") {
        out[section].emplace_back(absl::StripAsciiWhitespace(kv.second));
      }
    }
    return out;
  }

  absl::StatusOr<CommandResult> Testparm(const std::string& conf) {
    std::map<std::string, std::vector<std::string>> includes = Includes(conf);
    std::map<std::string, std::string> global = {
        {"server signing", "default"},       {"server smb encrypt", "default"},
        {"server min protocol", "SMB2_02"},  {"server max protocol", "SMB3"},
        {"client signing", "default"},       {"map to guest", "Never"},
        {"client smb encrypt", "default"},   {"client min protocol", "SMB2_02"},
        {"server role", "standalone server"}};
    for (const std::string& file : includes["global"]) {
      for (const auto& [k, v] : Overrides(file)) global[k] = v;
    }
    std::string out = "[global]\n";
    bool valid = true;
    static const std::set<std::string> kEnum = {"auto",        "mandatory", "required", "desired",
                                                "if_required", "default",   "off",      "disabled"};
    for (const auto& [k, v] : global) {
      absl::StrAppend(&out, "\t", k, " = ", v, "\n");
      if ((k == "server signing" || k == "server smb encrypt" || k == "client signing" ||
           k == "client smb encrypt") &&
          kEnum.count(v) == 0) {
        valid = false;
      }
    }
    for (const char* share : {"demo", "finance"}) {
      absl::StrAppend(&out, "\n[", share, "]\n\tpath = /srv/", share, "\n");
      if (unwired.count(share)) continue;
      for (const std::string& file : includes[share]) {
        for (const auto& [k, v] : Overrides(file)) {
          absl::StrAppend(&out, "\t", k, " = ", v, "\n");
          if (k == "server smb encrypt" && kEnum.count(v) == 0) valid = false;
        }
      }
    }
    CommandResult r{valid ? 0 : 1, out, valid ? "" : "WARNING: Ignoring invalid value\n"};
    return r;
  }

  std::string managed_dir_;
};

v1::SettingChange Change(const std::string& setting, const std::string& value,
                         const std::string& share = "", const std::string& expected = "") {
  v1::SettingChange c;
  c.set_setting(setting);
  c.set_value(value);
  c.set_share(share);
  c.set_expected_current(expected);
  return c;
}

class SambaApplierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/samba_applier_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(MakeDirs(dir_ + "/conf.d").ok());
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/smb.conf",
                                absl::StrCat("[global]\n    include = ", Global(),
                                             "\n[demo]\n    include = ", Share("demo"),
                                             "\n[finance]\n    include = ", Share("finance"), "\n"))
                    .ok());
    ASSERT_TRUE(WriteFileAtomic(Global(), "# agent-managed global settings\n").ok());
    ::unlink(Share("finance").c_str());
    ::unlink((Global() + ".prev").c_str());
    options_.samba.smb_conf = dir_ + "/smb.conf";
    samba_ = std::make_unique<FakeSamba>(options_.samba.smb_conf, dir_ + "/conf.d", &runner_);
    applier_ = std::make_unique<SambaApplier>(options_, &runner_);
  }
  std::string Global() const { return dir_ + "/conf.d/posture.conf"; }
  std::string Share(const std::string& s) const { return dir_ + "/conf.d/share-" + s + ".conf"; }
  std::string Read(const std::string& path) const { return ReadFile(path).value_or("<missing>"); }
  std::string Cmd(const std::string& args) const {
    return "smbcontrol -s " + options_.samba.smb_conf + " -- smbd " + args;
  }

  std::string dir_;
  SambaApplierOptions options_;
  FakeRunner runner_;
  std::unique_ptr<FakeSamba> samba_;
  std::unique_ptr<SambaApplier> applier_;
};

TEST_F(SambaApplierTest, RequireSigningWritesValidatesReloads) {
  auto r = applier_->Apply({Change("server.requireSigning", "true", "", "false")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Read(Global()), HasSubstr("server signing = mandatory\n"));
  EXPECT_THAT(Read(Global()), HasSubstr("# agent-managed global settings"));  // kept
  EXPECT_EQ(Read(Global() + ".prev"), "# agent-managed global settings\n");
  ASSERT_EQ(r.before.size(), 1u);
  EXPECT_EQ(r.before[0].setting(), "server.requireSigning");
  EXPECT_EQ(r.before[0].value(), "false");
  EXPECT_EQ(r.after[0].value(), "true");
  EXPECT_EQ(samba_->reloads, 1);
  // testparm validated the written files before smbd was told to reload.
  std::vector<std::string> argvs = runner_.argvs();
  ASSERT_GE(argvs.size(), 3u);
  EXPECT_THAT(argvs[argvs.size() - 2], HasSubstr("testparm -s -v"));
  EXPECT_EQ(argvs.back(), Cmd("reload-config"));

  // Applying the before-values is the rollback.
  auto back = applier_->Apply({Change("server.requireSigning", r.before[0].value())});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(Read(Global()), HasSubstr("server signing = auto\n"));
  EXPECT_THAT(Read(Global()), Not(HasSubstr("mandatory")));
  EXPECT_EQ(back.after[0].value(), "false");
}

TEST_F(SambaApplierTest, ServerSettingMapping) {
  struct Case {
    std::vector<v1::SettingChange> changes;
    const char* want_line;
  };
  const Case cases[] = {
      {{Change("server.encryptData", "true")}, "server smb encrypt = desired"},
      {{Change("server.encryptData", "true"), Change("server.rejectUnencryptedAccess", "true")},
       "server smb encrypt = required"},
      {{Change("server.encryptData", "false")}, "server smb encrypt = if_required"},
      {{Change("server.minDialect", "SMB_3_1_1")}, "server min protocol = SMB3_11"},
      {{Change("server.minDialect", "smb_2_1")}, "server min protocol = SMB2_10"},
      {{Change("server.smb1Enabled", "true")}, "server min protocol = NT1"},
      {{Change("client.requireSigning", "true")}, "client signing = required"},
      {{Change("client.requireEncryption", "true")}, "client smb encrypt = required"},
      {{Change("client.requireEncryption", "false")}, "client smb encrypt = default"},
      {{Change("client.minDialect", "SMB_3_1_1")}, "client min protocol = SMB3_11"},
      {{Change("client.minDialect", "smb_2_0_2")}, "client min protocol = SMB2_02"},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(WriteFileAtomic(Global(), "").ok());
    auto r = applier_->Apply(c.changes);
    ASSERT_TRUE(r.ok()) << c.want_line << ": " << r.status();
    EXPECT_THAT(Read(Global()), HasSubstr(c.want_line));
    for (size_t i = 0; i < c.changes.size(); ++i) {
      // Read back as the typed value that was asked for (dialects normalised to upper case).
      bool dialect = absl::EndsWith(c.changes[i].setting(), ".minDialect");
      EXPECT_EQ(r.after[i].value(),
                dialect ? absl::AsciiStrToUpper(c.changes[i].value()) : c.changes[i].value())
          << c.want_line;
    }
  }
}

// The client's encryption mandate and minimum dialect roll back to the values read before.
TEST_F(SambaApplierTest, ClientEncryptionAndMinimumDialectRollBack) {
  auto r = applier_->Apply({Change("client.requireEncryption", "true", "", "false"),
                            Change("client.minDialect", "SMB_3_1_1", "", "SMB_2_0_2")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Read(Global()), HasSubstr("client smb encrypt = required\n"));
  EXPECT_THAT(Read(Global()), HasSubstr("client min protocol = SMB3_11\n"));
  ASSERT_EQ(r.before.size(), 2u);
  EXPECT_EQ(r.before[0].value(), "false");
  EXPECT_EQ(r.before[1].value(), "SMB_2_0_2");
  EXPECT_EQ(r.after[0].value(), "true");
  EXPECT_EQ(r.after[1].value(), "SMB_3_1_1");

  auto back = applier_->Apply({r.before[0], r.before[1]});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(Read(Global()), HasSubstr("client smb encrypt = default\n"));
  EXPECT_THAT(Read(Global()), HasSubstr("client min protocol = SMB2_02\n"));
  EXPECT_EQ(back.after[0].value(), "false");
  EXPECT_EQ(back.after[1].value(), "SMB_2_0_2");
}

TEST_F(SambaApplierTest, Smb1OffRaisesMinimumOnlyFromNt1) {
  ASSERT_TRUE(WriteFileAtomic(Global(), "    server min protocol = NT1\n").ok());
  auto r = applier_->Apply({Change("server.smb1Enabled", "false")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r.before[0].value(), "true");
  EXPECT_THAT(Read(Global()), HasSubstr("server min protocol = SMB2_02"));
  EXPECT_THAT(Read(Global()), Not(HasSubstr("NT1")));

  ASSERT_TRUE(WriteFileAtomic(Global(), "    server min protocol = SMB3_00\n").ok());
  r = applier_->Apply({Change("server.smb1Enabled", "false")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Read(Global()), HasSubstr("server min protocol = SMB3_00"));
  EXPECT_THAT(r.actions, Contains("no file changed"));
}

TEST_F(SambaApplierTest, ShareEncryptionGoesToTheShareFile) {
  auto r = applier_->Apply({Change("share.encryptData", "true", "Finance")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Read(Share("finance")), HasSubstr("smb encrypt = required"));
  EXPECT_EQ(Read(Global()), "# agent-managed global settings\n");
  EXPECT_EQ(r.before[0].share(), "finance");  // canonical name from testparm
  EXPECT_EQ(r.before[0].value(), "false");
  EXPECT_EQ(r.after[0].value(), "true");
}

TEST_F(SambaApplierTest, RefusedBeforeAnythingIsWritten) {
  struct Case {
    std::vector<v1::SettingChange> changes;
    std::vector<std::string> options;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {{Change("server.smbShell", "true")},
       {},
       absl::StatusCode::kPermissionDenied,
       "not on the allowlist"},
      {{Change("share.compressData", "true", "demo")},
       {},
       absl::StatusCode::kUnimplemented,
       "no Samba equivalent"},
      {{Change("server.requireSigning", "mandatory")},
       {},
       absl::StatusCode::kInvalidArgument,
       "expected true or false"},
      {{Change("server.minDialect", "NT1")},
       {},
       absl::StatusCode::kInvalidArgument,
       "expected one of"},
      {{Change("share.encryptData", "true", "demo]\n[evil")},
       {},
       absl::StatusCode::kInvalidArgument,
       "settings[0].share"},
      {{Change("share.encryptData", "true", "x\ninclude = /etc/evil.conf")},
       {},
       absl::StatusCode::kInvalidArgument,
       "0x0a"},
      {{Change("share.encryptData", "true", "../../etc/samba/smb")},
       {},
       absl::StatusCode::kInvalidArgument,
       "'/'"},
      {{Change("share.encryptData", "true", "")}, {}, absl::StatusCode::kInvalidArgument, "empty"},
      {{Change("share.encryptData", "true", "payroll")},
       {},
       absl::StatusCode::kInvalidArgument,
       "share 'payroll' does not exist"},
      {{Change("server.requireSigning", "true", "demo")},
       {},
       absl::StatusCode::kInvalidArgument,
       "not a share setting"},
      {{Change("server.requireSigning", "true"), Change("server.requireSigning", "false")},
       {},
       absl::StatusCode::kInvalidArgument,
       "appears twice"},
      {{Change("server.rejectUnencryptedAccess", "true")},
       {},
       absl::StatusCode::kInvalidArgument,
       "needs server.encryptData=true"},
      {{Change("server.smb1Enabled", "true"), Change("server.minDialect", "SMB_3_0")},
       {},
       absl::StatusCode::kInvalidArgument,
       "conflicts"},
      {{Change("server.requireSigning", "true", "", "true")},
       {},
       absl::StatusCode::kFailedPrecondition,
       "expected current value 'true', found 'false'"},
      {{Change("server.requireSigning", "true")},
       {"reboot"},
       absl::StatusCode::kInvalidArgument,
       "unknown option 'reboot'"},
      {{Change("server.requireSigning", "true")},
       {"kill-client-ip:127.0.0.1; rm -rf /"},
       absl::StatusCode::kInvalidArgument,
       "not an IP address"},
      {{Change("server.requireSigning", "true")},
       {"close-share:a]b"},
       absl::StatusCode::kInvalidArgument,
       "options[0]"},
  };
  for (const Case& c : cases) {
    auto r = applier_->Apply(c.changes, c.options);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), c.code) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
    EXPECT_EQ(Read(Global()), "# agent-managed global settings\n") << c.message;
    EXPECT_EQ(Read(Share("finance")), "<missing>") << c.message;
    EXPECT_EQ(samba_->reloads, 0) << c.message;
  }
  for (const std::string& argv : runner_.argvs()) {
    EXPECT_THAT(argv, Not(HasSubstr("smbcontrol")));
  }
}

TEST_F(SambaApplierTest, ValueThatDoesNotTakeEffectIsRestored) {
  samba_->unwired = {"finance"};
  ASSERT_TRUE(WriteFileAtomic(Share("finance"), "    comment = kept\n").ok());
  auto r = applier_->Apply({Change("share.encryptData", "true", "finance")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(r.status().message(),
              HasSubstr("smb.conf must include " + Share("finance") + " at the end of [finance]"));
  EXPECT_THAT(r.status().message(), HasSubstr("restored"));
  EXPECT_EQ(Read(Share("finance")), "    comment = kept\n");
  EXPECT_EQ(samba_->reloads, 0);
}

TEST_F(SambaApplierTest, FailedReloadIsRestored) {
  samba_->reload_result = FakeRunner::Exit(1, "Can't find pid for destination 'smbd'\n");
  auto r = applier_->Apply({Change("server.requireSigning", "true")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("Can't find pid for destination 'smbd'"));
  EXPECT_EQ(Read(Global()), "# agent-managed global settings\n");
}

TEST_F(SambaApplierTest, OptionsCloseSharesAndKillClients) {
  auto r = applier_->Apply({Change("share.encryptData", "true", "finance")},
                           {"close-share", "kill-client-ip"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r.warnings, IsEmpty());
  EXPECT_THAT(r.actions, Contains(Cmd("close-share finance")));
  EXPECT_THAT(r.actions, Contains(Cmd("kill-client-ip 10.0.0.7")));
  EXPECT_THAT(r.actions, Contains(Cmd("kill-client-ip 127.0.0.1")));
  int kills = 0;
  for (const std::string& a : runner_.argvs()) kills += absl::StrContains(a, "kill-client-ip");
  EXPECT_EQ(kills, 2);  // one per address, not per session

  r = applier_->Apply({Change("server.requireSigning", "true")}, {"close-share"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r.actions, Contains(Cmd("close-share *")));

  r = applier_->Apply({Change("server.requireSigning", "false")},
                      {"close-share:demo", "kill-client-ip:10.0.0.7"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r.actions, Contains(Cmd("close-share demo")));
  EXPECT_THAT(r.actions, Contains(Cmd("kill-client-ip 10.0.0.7")));
}

// A share whose name looks like an option ("-d10" is smbcontrol's debug level) reaches smbcontrol
// after "--", as the share to close.
TEST_F(SambaApplierTest, ShareNamedLikeAnOptionIsPassedAfterDoubleDash) {
  auto r = applier_->Apply({Change("server.requireSigning", "true")}, {"close-share:-d10"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r.warnings, IsEmpty());
  std::vector<std::string> close;
  for (const std::string& a : runner_.argvs()) {
    if (absl::StrContains(a, "close-share")) close.push_back(a);
  }
  EXPECT_THAT(
      close, ElementsAre("smbcontrol -s " + options_.samba.smb_conf + " -- smbd close-share -d10"));
}

TEST_F(SambaApplierTest, ReadReportsCurrentValuesWithoutWriting) {
  ASSERT_TRUE(WriteFileAtomic(Share("finance"), "smb encrypt = required\n").ok());
  auto r = applier_->Read({Change("share.encryptData", "", "finance"),
                           Change("server.minDialect", ""), Change("server.requireSigning", "")});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].value(), "true");
  EXPECT_EQ((*r)[1].value(), "SMB_2_0_2");
  EXPECT_EQ((*r)[2].value(), "false");
  EXPECT_EQ(samba_->reloads, 0);
}

TEST_F(SambaApplierTest, WriterRejectsInvalidValueAndRestores) {
  ASSERT_TRUE(WriteFileAtomic(Global(), "    server signing = mandatory\n").ok());
  auto r = applier_->writer().Write({{"", "server signing", "bogus"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(r.status().message(), HasSubstr("Ignoring invalid value"));
  EXPECT_EQ(Read(Global()), "    server signing = mandatory\n");
  EXPECT_EQ(samba_->reloads, 0);
}

TEST_F(SambaApplierTest, WriterRefusesInjection) {
  struct Case {
    ParameterChange change;
    const char* message;
  };
  const Case cases[] = {
      {{"", "server signing", "required\ninclude = /tmp/evil.conf"}, "forbidden character"},
      {{"", "server signing", "required ] [evil"}, "forbidden character"},
      {{"", "server signing", "auto \\"}, "forbidden character"},
      {{"", "include", "/tmp/evil.conf"}, "not a parameter the agent writes"},
      {{"", "server signing = mandatory\ninclude", "x"}, "not a parameter the agent writes"},
      {{"demo", "server signing", "mandatory"}, "not a parameter the agent writes in [demo]"},
      {{"demo]\n[global", "smb encrypt", "required"}, "share name"},
      {{"", "server signing", std::string(300, 'a')}, "300 bytes, limit 256"},
  };
  for (const Case& c : cases) {
    auto r = applier_->writer().Write({c.change});
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
  }
  EXPECT_EQ(Read(Global()), "# agent-managed global settings\n");
  EXPECT_TRUE(runner_.commands().empty());
}

TEST_F(SambaApplierTest, WriterKeepsUnrelatedLinesAndReplacesSynonyms) {
  ASSERT_TRUE(WriteFileAtomic(Share("finance"),
                              "# note\n    comment = finance team\n    server smb encrypt = off\n")
                  .ok());
  auto r = applier_->writer().Write({{"finance", "smb encrypt", "required"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(samba_->reloads, 1);
  std::string content = Read(Share("finance"));
  EXPECT_THAT(content, HasSubstr("# note\n    comment = finance team\n"));
  EXPECT_THAT(content, HasSubstr("    smb encrypt = required\n"));
  EXPECT_THAT(content, Not(HasSubstr("= off")));
  EXPECT_THAT(Read(Share("finance") + ".prev"), HasSubstr("server smb encrypt = off"));
}

// smbd re-reads changed include files by itself: the live files must not change before testparm
// has accepted the candidate.
TEST_F(SambaApplierTest, RejectedCandidateLeavesTheLiveFilesByteIdenticalAndNoStagingBehind) {
  const std::string live = "    server signing = mandatory\n";
  ASSERT_TRUE(WriteFileAtomic(Global(), live).ok());
  std::string seen_during_check;
  runner_.SetPrefixHandler("testparm -s -v ",
                           [&](const Command& c) -> absl::StatusOr<CommandResult> {
                             seen_during_check = Read(Global());
                             EXPECT_NE(c.argv.back(), options_.samba.smb_conf);  // the staged copy
                             return FakeRunner::Exit(1, "WARNING: Ignoring invalid value 'bogus'");
                           });
  auto r = applier_->writer().Write({{"", "server signing", "bogus"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(r.status().message(), HasSubstr("live files untouched"));
  EXPECT_EQ(seen_during_check, live);
  EXPECT_EQ(Read(Global()), live);
  EXPECT_EQ(Read(Global() + ".prev"), "<missing>");
  EXPECT_EQ(samba_->reloads, 0);
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/conf.d")) {
    EXPECT_FALSE(absl::StartsWith(e.path().filename().string(), ".stage-")) << e.path();
  }
}

TEST_F(SambaApplierTest, LeftoversOfAKilledApplyAreRemovedByTheNextApply) {
  ASSERT_TRUE(MakeDirs(dir_ + "/conf.d/.stage-AbC123").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/conf.d/.stage-AbC123/smb.conf", "[global]\n").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/conf.d/.posture.conf.x1Y2z3", "half").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/conf.d/notes.txt", "kept").ok());
  auto r = applier_->Apply({Change("server.requireSigning", "true")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/conf.d/.stage-AbC123"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/conf.d/.posture.conf.x1Y2z3"));
  EXPECT_EQ(Read(dir_ + "/conf.d/notes.txt"), "kept");
}

TEST_F(SambaApplierTest, RedirectIncludesRewritesOnlyTheNamedIncludeLines) {
  std::string conf =
      "[global]\n  include = /etc/samba/conf.d/posture.conf\n  # include = /etc/samba/conf.d/"
      "posture.conf\n[finance]\n\tINCLUDE=/etc/samba/conf.d/share-finance.conf\n"
      "  include = /etc/samba/other.conf\n";
  std::string out = RedirectIncludes(conf, {{"/etc/samba/conf.d/posture.conf", "/s/posture.conf"},
                                            {"/etc/samba/conf.d/share-finance.conf", "/s/f.conf"}});
  EXPECT_EQ(out,
            "[global]\ninclude = /s/posture.conf\n  # include = /etc/samba/conf.d/posture.conf\n"
            "[finance]\ninclude = /s/f.conf\n  include = /etc/samba/other.conf\n");
}

TEST_F(SambaApplierTest, MultiFileChangeLandsWholeOrNotAtAll) {
  ASSERT_TRUE(WriteFileAtomic(Share("demo"), "    comment = demo\n").ok());
  // The candidate with an invalid share value: neither file changes.
  auto r = applier_->writer().Write(
      {{"", "server signing", "mandatory"}, {"demo", "smb encrypt", "bogus"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(Read(Global()), "# agent-managed global settings\n");
  EXPECT_EQ(Read(Share("demo")), "    comment = demo\n");
  // A valid one: both change, checked together, one reload.
  auto ok = applier_->Apply({Change("server.requireSigning", "true"),
                             Change("share.encryptData", "true", "finance"),
                             Change("share.encryptData", "true", "demo")});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT(Read(Global()), HasSubstr("server signing = mandatory"));
  EXPECT_THAT(Read(Share("demo")), HasSubstr("smb encrypt = required"));
  EXPECT_THAT(Read(Share("finance")), HasSubstr("smb encrypt = required"));
  EXPECT_EQ(samba_->reloads, 1);
}

TEST_F(SambaApplierTest, AKillBetweenTwoRenamesIsUndoneByteForByteBeforeTheNextRead) {
  ASSERT_TRUE(WriteFileAtomic(Share("demo"), "    comment = demo\n").ok());
  auto ok = applier_->Apply({Change("server.requireSigning", "true"),
                             Change("share.encryptData", "true", "demo"),
                             Change("share.encryptData", "true", "finance")});
  ASSERT_TRUE(ok.ok()) << ok.status();
  const std::string pending = PendingWritePath(dir_ + "/conf.d");
  EXPECT_FALSE(std::filesystem::exists(pending));  // a finished write leaves no record
  // What a kill -9 after the first of three renames leaves: the global file new, the demo file
  // old, finance (which did not exist) not yet there, and the record of the set.
  ASSERT_TRUE(WriteFileAtomic(Share("demo"), "    comment = demo\n").ok());
  ::unlink(Share("finance").c_str());
  ASSERT_TRUE(WriteFileAtomic(pending, absl::StrCat("1 ", Global(), "\n1 ", Share("demo"), "\n0 ",
                                                    Share("finance"), "\n"))
                  .ok());
  auto read = applier_->Read({Change("server.requireSigning", "")});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[0].value(), "false");
  EXPECT_EQ(Read(Global()), "# agent-managed global settings\n");
  EXPECT_EQ(Read(Share("demo")), "    comment = demo\n");
  EXPECT_EQ(Read(Share("finance")), "<missing>");
  EXPECT_FALSE(std::filesystem::exists(pending));
}

TEST_F(SambaApplierTest, AnInterruptedWriteRecordNamingAnotherFileIsRefused) {
  const std::string pending = PendingWritePath(dir_ + "/conf.d");
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/elsewhere.conf", "kept\n").ok());
  ASSERT_TRUE(WriteFileAtomic(pending, absl::StrCat("0 ", dir_, "/elsewhere.conf\n")).ok());
  auto read = applier_->Read({Change("server.requireSigning", "")});
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("is not in"));
  EXPECT_EQ(Read(dir_ + "/elsewhere.conf"), "kept\n");
  auto apply = applier_->Apply({Change("server.requireSigning", "true")});
  EXPECT_FALSE(apply.ok());
  EXPECT_EQ(Read(Global()), "# agent-managed global settings\n");
  ::unlink(pending.c_str());
}

TEST_F(SambaApplierTest, ConcurrentAppliesDoNotInterleave) {
  // An apply is inside its critical section from the testparm of its staged candidate to its
  // reload; two applies inside at once would be an interleaving.
  class CountingRunner : public CommandRunner {
   public:
    CountingRunner(CommandRunner* inner, std::string live_conf)
        : inner_(inner), live_conf_(std::move(live_conf)) {}
    absl::StatusOr<CommandResult> Run(const Command& c) override {
      absl::StatusOr<CommandResult> r;
      {
        std::lock_guard<std::mutex> l(mu_);  // FakeRunner itself is not thread-safe
        r = inner_->Run(c);
      }
      if (c.argv[0] == "testparm" && c.argv.back() != live_conf_) {
        if (inside.fetch_add(1) != 0) ++overlaps;
        std::this_thread::sleep_for(std::chrono::milliseconds(3));  // widen the window
      } else if (c.argv.back() == "reload-config") {
        inside.fetch_sub(1);
      }
      return r;
    }
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};

   private:
    CommandRunner* inner_;
    std::string live_conf_;
    std::mutex mu_;
  } locked(&runner_, options_.samba.smb_conf);
  SambaApplier a(options_, &locked), b(options_, &locked);
  auto loop = [&](SambaApplier* applier, const std::string& share) {
    for (int i = 0; i < 10; ++i) {
      auto r = applier->Apply({Change("share.encryptData", i % 2 ? "false" : "true", share)});
      EXPECT_TRUE(r.ok()) << r.status();
    }
  };
  std::thread t1(loop, &a, "finance"), t2(loop, &b, "demo");
  t1.join();
  t2.join();
  EXPECT_EQ(locked.overlaps.load(), 0);
  EXPECT_EQ(samba_->reloads, 20);
  EXPECT_THAT(Read(Share("finance")), HasSubstr("smb encrypt = if_required"));
  EXPECT_THAT(Read(Share("demo")), HasSubstr("smb encrypt = if_required"));
}

}  // namespace
}  // namespace smbfleet::agent::samba

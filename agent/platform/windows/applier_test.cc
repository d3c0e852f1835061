#include "agent/platform/windows/applier.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/platform/windows/testing/fake_powershell_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;
using testing::FakePowerShellRunner;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

std::string Fixture(const std::string& name) {
  return absl::StrCat(SMBFLEET_SOURCE_DIR, "/tests/fixtures/windows/", name);
}

v1::SettingChange Change(const std::string& setting, const std::string& value,
                         const std::string& share = "", const std::string& expected = "") {
  v1::SettingChange c;
  c.set_setting(setting);
  c.set_value(value);
  c.set_share(share);
  c.set_expected_current(expected);
  return c;
}

// The names the issue calls out, plus PowerShell's other quote and escape characters.
const std::vector<std::string>& HostileNames() {
  static const std::vector<std::string>* kNames = new std::vector<std::string>{
      "Reports'; Remove-Item C:\\ -Recurse; '",
      "$(calc)",
      "\xE2\x80\x98x\xE2\x80\x99",  // ‘x’
      "a`\"b",
      "\xE2\x80\x9A\xE2\x80\x9B\xE2\x80\x9C\xE2\x80\x9D\xE2\x80\x9E",  // ‚ ‛ “ ” „
      "@{a=1}; & calc.exe #",
      "x*[a-z]?",
      "\"; exit 0; \"",
  };
  return *kNames;
}

TEST(PlanApplyTest, HostileShareNamesTravelAsDataOnly) {
  for (const std::string& name : HostileNames()) {
    auto plan = PlanApply({Change("share.encryptData", "true", name)});
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status();
    ASSERT_THAT(*plan, SizeIs(1));
    // What the script receives decodes to exactly the name.
    nlohmann::json data = nlohmann::json::parse((*plan)[0].data_json);
    EXPECT_EQ(data["share"].get<std::string>(), name);
    EXPECT_EQ(data["target"], "share");
    EXPECT_EQ(data["parameters"]["EncryptData"], true);
    // The script is the same constant for every name, and it never contains one.
    EXPECT_THAT(ApplyScript(), Not(HasSubstr(name)));
    PowerShellScript s;
    s.text = ApplyScript();
    s.data_json = (*plan)[0].data_json;
    Command cmd = BuildPowerShellCommand(s, "powershell.exe");
    for (const auto& arg : cmd.argv) EXPECT_THAT(arg, Not(HasSubstr(name)));
  }
  // The script never uses -Name (wildcards) to find the share.
  EXPECT_THAT(ApplyScript(), Not(HasSubstr("Set-SmbShare -Name")));
  EXPECT_THAT(ApplyScript(), HasSubstr("$_.Name -eq $name"));
}

TEST(PlanApplyTest, GroupsByTargetAndTypesValues) {
  auto plan = PlanApply(
      {Change("server.requireSigning", "True"), Change("server.minDialect", "smb_3_0"),
       Change("client.enableInsecureGuestLogons", "0"), Change("share.encryptData", "true", "HR"),
       Change("share.compressData", "false", "hr"),
       Change("share.encryptData", "true", "Projects")});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_THAT(*plan, SizeIs(4));
  nlohmann::json server = nlohmann::json::parse((*plan)[0].data_json);
  EXPECT_EQ(server["target"], "server");
  EXPECT_EQ(server["parameters"]["RequireSecuritySignature"], true);
  EXPECT_EQ(server["parameters"]["Smb2DialectMin"], "SMB300");
  nlohmann::json client = nlohmann::json::parse((*plan)[1].data_json);
  EXPECT_EQ(client["parameters"]["EnableInsecureGuestLogons"], false);
  nlohmann::json hr = nlohmann::json::parse((*plan)[2].data_json);
  EXPECT_EQ(hr["parameters"].size(), 2u);  // one Set-SmbShare for both HR settings
}

TEST(PlanApplyTest, RefusesWhatIsNotAllowlistedOrMalformed) {
  struct Case {
    v1::SettingChange change;
    const char* expect;
  };
  std::vector<Case> cases = {
      {Change("server.enableCompression", "true"), "not on the allowlist"},
      {Change("server.requireSigning", "yes please"), "expected true or false"},
      {Change("server.minDialect", "SMB_4"), "expected one of"},
      {Change("share.encryptData", "true", ""), "share name is empty"},
      {Change("share.encryptData", "true", std::string(300, 'a')), "300 bytes, limit 240"},
      {Change("share.encryptData", "true", "bad\xFFutf8"), "not valid UTF-8"},
      {Change("share.encryptData", "true", "line\nbreak"), "control character"},
      {Change("server.requireSigning", "true", "HR"), "takes no share"},
  };
  for (const auto& c : cases) {
    auto plan = PlanApply({c.change});
    ASSERT_FALSE(plan.ok()) << c.change.setting();
    EXPECT_THAT(plan.status().message(), HasSubstr(c.expect)) << c.change.setting();
  }
  EXPECT_FALSE(
      PlanApply({Change("server.requireSigning", "true"), Change("server.requireSigning", "false")})
          .ok());
}

TEST(WindowsApplierTest, AppliesReReadsAndReportsBeforeAndAfter) {
  FakePowerShellRunner runner(Fixture("ws2025"));
  WindowsApplier applier({}, &runner);
  ApplyResult r = applier.Apply({Change("server.requireSigning", "true", "", "false"),
                                 Change("server.minDialect", "SMB_3_0"),
                                 Change("share.encryptData", "true", "$(calc)")});
  EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_APPLIED) << r.message();
  ASSERT_THAT(r.before, SizeIs(3));
  ASSERT_THAT(r.after, SizeIs(3));
  EXPECT_EQ(r.before[0].value(), "false");
  EXPECT_EQ(r.after[0].value(), "true");
  EXPECT_EQ(r.before[1].value(), "SMB_3_1_1");
  EXPECT_EQ(r.after[1].value(), "SMB_3_0");
  EXPECT_EQ(r.before[2].value(), "false");
  EXPECT_EQ(r.after[2].value(), "true");
  EXPECT_EQ(r.after[2].share(), "$(calc)");
  auto applies = runner.CallsOf("apply");
  ASSERT_THAT(applies, SizeIs(2));
  for (const auto& a : applies) EXPECT_EQ(a.text, ApplyScript());
  EXPECT_EQ(nlohmann::json::parse(applies[1].data_json)["share"], "$(calc)");
}

TEST(WindowsApplierTest, EveryHostileNameReachesTheCmdletVerbatim) {
  for (const std::string& name :
       {std::string("\xE2\x80\x98x\xE2\x80\x99"), std::string("a`\"b"), std::string("$(calc)")}) {
    FakePowerShellRunner runner(Fixture("ws2025"));
    WindowsApplier applier({}, &runner);
    ApplyResult r = applier.Apply({Change("share.encryptData", "true", name)});
    EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_APPLIED) << name << ": " << r.message();
    EXPECT_EQ(r.after[0].value(), "true") << name;
  }
}

TEST(WindowsApplierTest, PreconditionsAndUnsupportedSettings) {
  {
    FakePowerShellRunner runner(Fixture("ws2025"));
    ApplyResult r =
        WindowsApplier({}, &runner).Apply({Change("server.requireSigning", "true", "", "true")});
    EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_PRECONDITION_FAILED);
    EXPECT_THAT(r.message(), HasSubstr("host has 'false'"));
    EXPECT_THAT(runner.CallsOf("apply"), SizeIs(0));
  }
  {
    // WS2022 has no Smb2DialectMin.
    FakePowerShellRunner runner(Fixture("ws2022"));
    ApplyResult r = WindowsApplier({}, &runner).Apply({Change("server.minDialect", "SMB_3_0")});
    EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_PRECONDITION_FAILED);
    EXPECT_THAT(r.message(), HasSubstr("does not report it"));
    EXPECT_THAT(runner.CallsOf("apply"), SizeIs(0));
  }
  {
    FakePowerShellRunner runner(Fixture("ws2022"));
    ApplyResult r =
        WindowsApplier({}, &runner).Apply({Change("share.encryptData", "true", "NoSuchShare")});
    EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_PRECONDITION_FAILED);
    EXPECT_THAT(r.message(), HasSubstr("'NoSuchShare' not found"));
  }
  {
    FakePowerShellRunner runner(Fixture("ws2022"));
    ApplyResult r = WindowsApplier({}, &runner).Apply({Change("server.enableCompression", "true")});
    EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_REFUSED);
    EXPECT_THAT(runner.calls(), SizeIs(0));
  }
}

// client.requireEncryption and client.minDialect go to Set-SmbClientConfiguration
// -RequireEncryption / -Smb2DialectMin; applying the before-values is the rollback.
TEST(WindowsApplierTest, ClientEncryptionAndMinimumDialectApplyAndRollBack) {
  FakePowerShellRunner runner(Fixture("ws2025"));
  WindowsApplier applier({}, &runner);
  ApplyResult r = applier.Apply({Change("client.requireEncryption", "true", "", "false"),
                                 Change("client.minDialect", "smb_3_1_1", "", "SMB_3_0")});
  EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_APPLIED) << r.message();
  auto applies = runner.CallsOf("apply");
  ASSERT_THAT(applies, SizeIs(1));  // one Set-SmbClientConfiguration for both
  nlohmann::json data = nlohmann::json::parse(applies[0].data_json);
  EXPECT_EQ(data["target"], "client");
  EXPECT_EQ(data["parameters"]["RequireEncryption"], true);
  EXPECT_EQ(data["parameters"]["Smb2DialectMin"], "SMB311");
  ASSERT_THAT(r.before, SizeIs(2));
  EXPECT_EQ(r.before[0].value(), "false");
  EXPECT_EQ(r.before[1].value(), "SMB_3_0");
  EXPECT_EQ(r.after[0].value(), "true");
  EXPECT_EQ(r.after[1].value(), "SMB_3_1_1");

  ApplyResult back = applier.Apply({r.before[0], r.before[1]});
  EXPECT_EQ(back.ack(), v1::AckChangeRequest::RESULT_APPLIED) << back.message();
  EXPECT_EQ(back.after[0].value(), "false");
  EXPECT_EQ(back.after[1].value(), "SMB_3_0");
  EXPECT_EQ(
      nlohmann::json::parse(runner.CallsOf("apply")[1].data_json)["parameters"]["Smb2DialectMin"],
      "SMB300");
}

TEST(WindowsApplierTest, ClientSettingsNewerThanTheBuildAreRefusedNamingTheBuild) {
  for (const char* build : {"ws2016", "ws2019", "ws2022"}) {
    for (const auto& change :
         {Change("client.minDialect", "SMB_3_1_1"), Change("client.requireEncryption", "true")}) {
      FakePowerShellRunner runner(Fixture(build));
      ApplyResult r = WindowsApplier({}, &runner).Apply({change});
      EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_PRECONDITION_FAILED) << build;
      EXPECT_THAT(r.message(), HasSubstr(change.setting())) << build;
      EXPECT_THAT(r.message(), HasSubstr("build 26100")) << build;
      EXPECT_THAT(runner.CallsOf("apply"), SizeIs(0)) << build;
    }
  }
}

TEST(WindowsApplierTest, FailedCmdletAndSettingThatDoesNotStick) {
  {
    FakePowerShellRunner runner(Fixture("ws2022"));
    runner.SetError("apply", absl::UnknownError("apply: exit code 1: Access is denied."));
    ApplyResult r = WindowsApplier({}, &runner).Apply({Change("server.encryptData", "true")});
    EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_FAILED);
    EXPECT_THAT(r.message(), HasSubstr("Access is denied"));
    ASSERT_THAT(r.after, SizeIs(1));
    EXPECT_EQ(r.after[0].value(), "false");
  }
  {
    // Set-* succeeds but the value reverts (e.g. a Group Policy): FAILED, with before and after.
    FakePowerShellRunner runner(Fixture("ws2022"));
    runner.set_apply_sticks(false);
    ApplyResult r = WindowsApplier({}, &runner).Apply({Change("client.requireSigning", "true")});
    EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_FAILED);
    EXPECT_THAT(r.message(), HasSubstr("still 'false' after apply"));
    EXPECT_EQ(r.before[0].value(), "false");
    EXPECT_EQ(r.after[0].value(), "false");
    EXPECT_THAT(runner.CallsOf("apply"), SizeIs(1));
  }
}

TEST(WindowsApplierTest, FailureMidwayUndoesTheCallsAlreadyAppliedNewestFirst) {
  FakePowerShellRunner runner(Fixture("ws2025"));
  // Server settings go first, then the share's call fails.
  runner.FailApplyCall(2, absl::UnknownError("apply: exit code 1: The share is in use."));
  ApplyResult r =
      WindowsApplier({}, &runner)
          .Apply({Change("server.requireSigning", "true"), Change("server.minDialect", "SMB_3_0"),
                  Change("share.encryptData", "true", "$(calc)")});
  EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_ROLLED_BACK) << r.message();
  EXPECT_THAT(r.message(), HasSubstr("The share is in use"));
  auto applies = runner.CallsOf("apply");
  ASSERT_THAT(applies, SizeIs(3));  // server, share (failed), server undone
  auto undo = nlohmann::json::parse(applies[2].data_json);
  EXPECT_EQ(undo["target"], "server");
  EXPECT_EQ(undo["parameters"]["RequireSecuritySignature"], false);
  ASSERT_THAT(r.after, SizeIs(3));
  EXPECT_EQ(r.after[0].value(), "false");      // requireSigning back to its before-value
  EXPECT_EQ(r.after[1].value(), "SMB_3_1_1");  // minDialect too
  EXPECT_EQ(r.after[2].value(), "false");
}

TEST(WindowsApplierTest, FailedUndoIsFailedNamingBoth) {
  FakePowerShellRunner runner(Fixture("ws2025"));
  runner.FailApplyCall(2, absl::UnknownError("apply: exit code 1: Access is denied."),
                       /*and_later=*/true);
  ApplyResult r = WindowsApplier({}, &runner)
                      .Apply({Change("server.requireSigning", "true"),
                              Change("share.encryptData", "true", "$(calc)")});
  EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_FAILED);
  EXPECT_THAT(r.message(), HasSubstr("undoing the settings already applied failed"));
  ASSERT_THAT(r.after, SizeIs(2));
  EXPECT_EQ(r.after[0].value(), "true");
}

TEST(WindowsApplierTest, ReadReportsCurrentValuesWithoutApplying) {
  FakePowerShellRunner runner(Fixture("ws2025"));
  WindowsApplier applier({}, &runner);
  auto r = applier.Read({Change("server.requireSigning", ""), Change("server.minDialect", ""),
                         Change("share.encryptData", "", "NoSuchShare")});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_THAT(*r, SizeIs(3));
  EXPECT_EQ((*r)[0].value(), "false");
  EXPECT_EQ((*r)[1].value(), "SMB_3_1_1");
  EXPECT_EQ((*r)[2].value(), "");  // unknown: no such share
  EXPECT_EQ((*r)[2].share(), "NoSuchShare");
  EXPECT_THAT(runner.CallsOf("apply"), SizeIs(0));

  auto refused = applier.Read({Change("server.enableCompression", "")});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(WindowsApplierTest, OptionsAreRefusedBeforeAnythingRuns) {
  FakePowerShellRunner runner(Fixture("ws2025"));
  ApplyResult r =
      WindowsApplier({}, &runner).Apply({Change("server.requireSigning", "true")}, {"close-share"});
  EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_FAILED);
  EXPECT_THAT(r.message(), HasSubstr("unknown option 'close-share'"));
  EXPECT_THAT(runner.calls(), SizeIs(0));
}

// Values are typed (bool, dialect) before any script is planned: PowerShell quoting, subexpressions
// and backticks in a value are refused with the setting named, and nothing runs.
TEST(WindowsApplierTest, HostileValuesAreRefusedBeforeAnythingRuns) {
  const std::vector<v1::SettingChange> changes = {
      Change("server.requireSigning", "true'; Remove-Item C:\\ -Recurse; '"),
      Change("server.requireSigning", "$(Remove-Item C:\\ -Recurse)"),
      Change("server.requireSigning", "`$true"),
      Change("server.minDialect", "SMB_3_0; & calc.exe"),
      Change("share.encryptData", "$true -or $(calc)", "HR"),
  };
  for (const auto& c : changes) {
    FakePowerShellRunner runner(Fixture("ws2025"));
    ApplyResult r = WindowsApplier({}, &runner).Apply({c});
    EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_FAILED) << c.value();
    EXPECT_THAT(r.message(), HasSubstr(c.setting())) << r.message();
    EXPECT_THAT(runner.calls(), SizeIs(0)) << c.value();
  }
}

}  // namespace
}  // namespace smbfleet::agent::windows

#include "cli/command_line.h"

#include <fstream>

#include "cli/exit_code.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15 08:00:00 UTC

std::string Write(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/command_line_test_" + name;
  std::ofstream(path) << text;
  return path;
}

absl::StatusOr<Invocation> Parse(const std::vector<std::string>& args) {
  return ParseCommandLine(args, kNow);
}

TEST(ExitCodeTest, OneMappingFromTheCollectorsAnswer) {
  struct Case {
    grpc::StatusCode code;
    int exit;
  };
  for (const Case& c : std::vector<Case>{
           {grpc::StatusCode::OK, 0},
           {grpc::StatusCode::NOT_FOUND, 3},
           {grpc::StatusCode::PERMISSION_DENIED, 4},
           {grpc::StatusCode::FAILED_PRECONDITION, 5},
           {grpc::StatusCode::INVALID_ARGUMENT, 1},  // the server's: a failure, not usage
           {grpc::StatusCode::UNAVAILABLE, 1},
           {grpc::StatusCode::UNAUTHENTICATED, 1},
           {grpc::StatusCode::INTERNAL, 1},
           {grpc::StatusCode::ALREADY_EXISTS, 1},
       }) {
    EXPECT_EQ(ExitCodeFor(c.code), c.exit) << "code " << static_cast<int>(c.code);
  }
}

TEST(CommandLineTest, ProposeForHostsTakesSeveralValuesAndRepeats) {
  auto inv = Parse({"changes", "propose", "--host", "fs01", "fs02", "--host", "fs03", "--reason",
                    "encrypt finance"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->command, "changes propose");
  const auto& req = RequestOf<smbfleet::v1::ProposeChangeRequest>(*inv);
  EXPECT_THAT(req.hosts(), ElementsAre("fs01", "fs02", "fs03"));
  EXPECT_EQ(req.reason(), "encrypt finance");
  EXPECT_TRUE(req.rule_id().empty());
  EXPECT_EQ(req.settings_size(), 0);
}

TEST(CommandLineTest, ProposeForARuleWithLabels) {
  auto inv = Parse({"changes", "propose", "--rule", "share-encryption", "--label", "site=ams",
                    "--label", "role=file"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  const auto& req = RequestOf<smbfleet::v1::ProposeChangeRequest>(*inv);
  EXPECT_EQ(req.rule_id(), "share-encryption");
  EXPECT_THAT(req.labels(), UnorderedElementsAre(Pair("site", "ams"), Pair("role", "file")));
  EXPECT_EQ(req.hosts_size(), 0);
}

TEST(CommandLineTest, ProposeNeedsExactlyOneSource) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"changes", "propose"},
           {"changes", "propose", "--host", "a", "--rule", "r"},
           {"changes", "propose", "--rule", "r", "--settings", "x.yaml"},
       }) {
    auto inv = Parse(args);
    ASSERT_FALSE(inv.ok()) << args.size();
    EXPECT_THAT(inv.status().message(), HasSubstr("exactly one of --host"));
  }
  auto labels_alone = Parse({"changes", "propose", "--host", "a", "--label", "site=x"});
  ASSERT_FALSE(labels_alone.ok());
  EXPECT_THAT(labels_alone.status().message(), HasSubstr("--label"));
}

TEST(CommandLineTest, MalformedLabelNamesFlagAndValue) {
  auto inv = Parse({"changes", "propose", "--rule", "r", "--label", "site"});
  ASSERT_FALSE(inv.ok());
  EXPECT_THAT(inv.status().message(), HasSubstr("--label"));
  EXPECT_THAT(inv.status().message(), HasSubstr("'site'"));
}

TEST(CommandLineTest, ProposeFromASettingsFile) {
  std::string file = Write("ok.yaml",
                           "hosts: [fs01]\n"
                           "settings:\n"
                           "  - {setting: server.requireSigning, value: \"TRUE\"}\n"
                           "  - {setting: share.encryptData, share: finance, value: 'true'}\n"
                           "  - {setting: server.minDialect, value: smb_3_0}\n");
  auto inv = Parse({"changes", "propose", "--settings", file});
  ASSERT_TRUE(inv.ok()) << inv.status();
  const auto& req = RequestOf<smbfleet::v1::ProposeChangeRequest>(*inv);
  EXPECT_THAT(req.hosts(), ElementsAre("fs01"));
  ASSERT_EQ(req.settings_size(), 3);
  EXPECT_EQ(req.settings(0).setting(), "server.requireSigning");
  EXPECT_EQ(req.settings(0).value(), "true");  // normalised
  EXPECT_EQ(req.settings(1).share(), "finance");
  EXPECT_EQ(req.settings(2).value(), "SMB_3_0");
}

TEST(SettingsFileTest, LabelsInsteadOfHosts) {
  auto f = ParseSettingsFile("s.yaml",
                             "labels: {site: ams}\n"
                             "settings: [{setting: server.smb1Enabled, value: false}]\n");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(f->labels, ElementsAre(Pair("site", "ams")));
  EXPECT_TRUE(f->hosts.empty());
  ASSERT_EQ(f->settings.size(), 1u);
  EXPECT_EQ(f->settings[0].value(), "false");
}

TEST(SettingsFileTest, EveryMistakeNamesFileEntryAndField) {
  auto f =
      ParseSettingsFile("bad.yaml",
                        "hosts: [fs01]\n"
                        "settings:\n"
                        "  - {setting: server.frobnicate, value: 'true'}\n"
                        "  - {setting: server.requireSigning, value: perhaps}\n"
                        "  - {setting: share.encryptData, value: 'true'}\n"
                        "  - {setting: server.encryptData, share: x, value: 'true'}\n"
                        "  - {setting: share.encryptData, share: \"fin\\e[2J\", value: 'true'}\n"
                        "  - {setting: server.smb1Enabled}\n"
                        "  - {setting: server.smb1Enabled, value: false, colour: blue}\n");
  ASSERT_FALSE(f.ok());
  const std::string msg(f.status().message());
  EXPECT_THAT(msg, HasSubstr("bad.yaml"));
  EXPECT_THAT(msg, HasSubstr("settings[0].setting"));
  EXPECT_THAT(msg, HasSubstr("server.frobnicate"));
  EXPECT_THAT(msg, HasSubstr("settings[1].value"));
  EXPECT_THAT(msg, HasSubstr("perhaps"));
  EXPECT_THAT(msg, HasSubstr("settings[2].share"));
  EXPECT_THAT(msg, HasSubstr("settings[3].share"));
  EXPECT_THAT(msg, HasSubstr("not a share setting"));
  EXPECT_THAT(msg, HasSubstr("settings[4].share"));
  EXPECT_THAT(msg, HasSubstr("control character"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("\x1b")));
  EXPECT_THAT(msg, HasSubstr("settings[5].value"));
  EXPECT_THAT(msg, HasSubstr("settings[6].colour"));
}

TEST(SettingsFileTest, NeedsTargetsAndSettings) {
  auto none = ParseSettingsFile("t.yaml", "settings: []\n");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("hosts"));
  EXPECT_THAT(none.status().message(), HasSubstr("settings: required"));
  auto both = ParseSettingsFile(
      "t.yaml",
      "hosts: [a]\nlabels: {k: v}\nsettings: [{setting: server.smb1Enabled, value: 'false'}]\n");
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(), HasSubstr("either hosts"));
  auto twice = ParseSettingsFile("t.yaml",
                                 "hosts: [a]\nsettings:\n"
                                 "  - {setting: server.smb1Enabled, value: 'false'}\n"
                                 "  - {setting: server.smb1Enabled, value: 'true'}\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(),
              HasSubstr("settings[1]: server.smb1Enabled is listed twice"));
  auto syntax = ParseSettingsFile("t.yaml", "hosts: [a\n");
  ASSERT_FALSE(syntax.ok());
  EXPECT_THAT(syntax.status().message(), HasSubstr("t.yaml"));
}

TEST(CommandLineTest, UnreadableSettingsFileIsNamed) {
  auto inv = Parse({"changes", "propose", "--settings", "/nonexistent/changes.yaml"});
  ASSERT_FALSE(inv.ok());
  EXPECT_THAT(inv.status().message(), HasSubstr("/nonexistent/changes.yaml"));
}

TEST(CommandLineTest, ApproveCarriesTheRollout) {
  auto inv =
      Parse({"changes", "approve", "c-1", "--comment", "ok", "--canary", "fs01", "fs02", "--waves",
             "10%,50%,100%", "--watch", "10m", "--window", "site=ams:Sat 22:00-06:00 UTC+01:00",
             "--max-precondition-failed", "2", "--format=json"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->global.format, "json");
  const auto& req = RequestOf<smbfleet::v1::ApproveChangeRequest>(*inv);
  EXPECT_EQ(req.id(), "c-1");
  EXPECT_EQ(req.comment(), "ok");
  EXPECT_THAT(req.rollout().canary_hosts(), ElementsAre("fs01", "fs02"));
  EXPECT_EQ(req.rollout().waves(), "10%,50%,100%");
  EXPECT_EQ(req.rollout().watch(), "10m");
  EXPECT_THAT(req.rollout().windows(), ElementsAre("site=ams:Sat 22:00-06:00 UTC+01:00"));
  EXPECT_EQ(req.rollout().max_precondition_failed(), 2u);
  EXPECT_FALSE(Parse({"changes", "approve", "c-1", "--max-precondition-failed", "-1"}).ok());
  EXPECT_FALSE(Parse({"changes", "approve", "c-1", "--max-precondition-failed", "some"}).ok());
}

TEST(CommandLineTest, MalformedRolloutIsAUsageErrorNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {{"changes", "approve", "c-1", "--waves", "50%,10%"}, "--waves"},
           {{"changes", "approve", "c-1", "--waves", "ten"}, "ten"},
           {{"changes", "approve", "c-1", "--watch", "forever"}, "--watch"},
           {{"changes", "approve", "c-1", "--window", "site=ams:Someday 22:00-06:00"}, "--window"},
           {{"changes", "approve", "c-1", "--canary", "fs01", "--canary", "fs01"}, "twice"},
       }) {
    auto inv = Parse(c.args);
    ASSERT_FALSE(inv.ok()) << c.want;
    EXPECT_THAT(inv.status().message(), HasSubstr(c.want));
  }
}

TEST(CommandLineTest, CertsRevokeTakesACertificateOrAHostAlone) {
  auto host = Parse({"certs", "revoke", "--host", "fs01", "--reason", "decommissioned"});
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->command, "certs revoke");
  const auto& by_host = RequestOf<smbfleet::v1::RevokeCertificateRequest>(*host).revocation();
  EXPECT_EQ(by_host.host(), "fs01");
  EXPECT_TRUE(by_host.serial().empty());
  EXPECT_TRUE(by_host.fingerprint().empty());
  EXPECT_EQ(by_host.reason(), "decommissioned");

  auto serial = Parse({"certs", "revoke", "--serial", "serial=1A", "--reason", "lost"});
  ASSERT_TRUE(serial.ok()) << serial.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::RevokeCertificateRequest>(*serial).revocation().serial(), "1A");

  auto nothing = Parse({"certs", "revoke", "--reason", "lost"});
  ASSERT_FALSE(nothing.ok());
  EXPECT_THAT(nothing.status().message(), HasSubstr("--host"));
  EXPECT_FALSE(Parse({"certs", "revoke", "--host", "fs01"}).ok());  // --reason is required
}

TEST(CommandLineTest, ActionsAndTheirRequiredFlags) {
  auto reject = Parse({"changes", "reject", "c-1", "--reason", "not now"});
  ASSERT_TRUE(reject.ok()) << reject.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::RejectChangeRequest>(*reject).reason(), "not now");
  EXPECT_FALSE(Parse({"changes", "reject", "c-1"}).ok());  // --reason is required
  EXPECT_FALSE(Parse({"changes", "reject", "c-1", "--reason", " "}).ok());
  for (const std::string action : {"halt", "resume", "rollback"}) {
    auto inv = Parse({"changes", action, "c-9", "--reason", "clients broke"});
    ASSERT_TRUE(inv.ok()) << inv.status();
    EXPECT_EQ(inv->command, "changes " + action);
    const auto& req = RequestOf<smbfleet::v1::ChangeActionRequest>(*inv);
    EXPECT_EQ(req.id(), "c-9");
    EXPECT_EQ(req.reason(), "clients broke");
    EXPECT_TRUE(Parse({"changes", action, "c-9"}).ok());  // the reason is optional
  }
  EXPECT_FALSE(Parse({"changes", "show"}).ok());  // ID is required
  EXPECT_FALSE(Parse({"changes", "frobnicate", "c-1"}).ok());
  EXPECT_FALSE(Parse({"changes", "show", "c-1", "--bogus"}).ok());
}

TEST(CommandLineTest, ListFiltersByState) {
  auto inv = Parse({"changes", "list", "--state", "rolling_out"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::ListChangesRequest>(*inv).state(),
            smbfleet::v1::CHANGE_STATE_ROLLING_OUT);
  auto bad = Parse({"changes", "list", "--state", "done"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("'done'"));
  EXPECT_THAT(bad.status().message(), HasSubstr("rolled_back"));
  EXPECT_EQ(*ParseChangeState("CHANGE_STATE_HALTED"), smbfleet::v1::CHANGE_STATE_HALTED);
  EXPECT_EQ(*ParseChangeState("Completed"), smbfleet::v1::CHANGE_STATE_COMPLETED);
  EXPECT_FALSE(ParseChangeState("unspecified").ok());
}

TEST(CommandLineTest, WatchIntervalAndTimeout) {
  auto inv = Parse({"changes", "watch", "c-1", "--interval", "250ms", "--timeout", "5m"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::GetChangeRequest>(*inv).id(), "c-1");
  EXPECT_EQ(inv->watch.interval, absl::Milliseconds(250));
  EXPECT_EQ(inv->watch.timeout, absl::Minutes(5));
  auto defaults = Parse({"changes", "watch", "c-1"});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->watch.interval, absl::Seconds(2));
  EXPECT_EQ(defaults->watch.timeout, absl::InfiniteDuration());
  EXPECT_FALSE(Parse({"changes", "watch", "c-1", "--interval", "0s"}).ok());
  EXPECT_FALSE(Parse({"changes", "watch", "c-1", "--timeout", "soon"}).ok());
}

TEST(CommandLineTest, GlobalFlagsBeforeOrAfterTheCommand) {
  auto inv = Parse({"--collector", "127.0.0.1:1", "--cert", "c.pem", "--key", "k.pem", "--ca",
                    "ca.pem", "audit", "--change", "c-1", "--format", "json"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->global.collector, "127.0.0.1:1");
  EXPECT_EQ(inv->global.cert, "c.pem");
  EXPECT_EQ(inv->global.format, "json");
  EXPECT_EQ(RequestOf<smbfleet::v1::ListAuditRequest>(*inv).change_id(), "c-1");
  auto bad_format = Parse({"hosts", "--format=yaml"});
  ASSERT_FALSE(bad_format.ok());
  EXPECT_THAT(bad_format.status().message(), HasSubstr("--format"));
}

TEST(CommandLineTest, CallTimeoutIsSecondsOrADuration) {
  auto defaults = Parse({"hosts"});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->global.call_timeout, absl::Seconds(30));
  auto seconds = Parse({"--call-timeout", "600", "changes", "propose", "--host", "fs01"});
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_EQ(seconds->global.call_timeout, absl::Minutes(10));
  auto after = Parse({"changes", "approve", "c-1", "--call-timeout=2m"});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->global.call_timeout, absl::Minutes(2));
  // `changes watch --timeout` stays the watch's own bound.
  auto watch = Parse({"changes", "watch", "c-1", "--timeout", "5m", "--call-timeout", "90s"});
  ASSERT_TRUE(watch.ok()) << watch.status();
  EXPECT_EQ(watch->watch.timeout, absl::Minutes(5));
  EXPECT_EQ(watch->global.call_timeout, absl::Seconds(90));
  for (const char* bad : {"0", "0s", "soon", "-5"}) {
    auto refused = Parse({"hosts", "--call-timeout", bad});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(refused.status().message(), HasSubstr("--call-timeout")) << bad;
  }
}

TEST(CommandLineTest, ExistingCommandsKeepTheirLines) {
  auto findings = Parse({"findings", "--host", "fs01", "--rule", "r1", "--include-waived"});
  ASSERT_TRUE(findings.ok()) << findings.status();
  const auto& f = RequestOf<smbfleet::v1::ListFindingsRequest>(*findings);
  EXPECT_EQ(f.host(), "fs01");
  EXPECT_EQ(f.rule_id(), "r1");
  EXPECT_TRUE(f.include_waived());
  auto show = Parse({"host", "show", "fs01", "--format=json"});
  ASSERT_TRUE(show.ok()) << show.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::GetHostRequest>(*show).name(), "fs01");
  auto hosts = Parse({"hosts", "--prefix", "fs"});
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::ListHostsRequest>(*hosts).name_prefix(), "fs");
  auto refresh = Parse({"host", "refresh", "fs01"});
  ASSERT_TRUE(refresh.ok()) << refresh.status();
  EXPECT_EQ(refresh->command, "host refresh");
  // No reason: the collector then tells the agent who asked ("requested by NAME").
  EXPECT_TRUE(RequestOf<smbfleet::v1::RequestReportRequest>(*refresh).reason().empty());
  EXPECT_EQ(Parse({"compliance"})->command, "compliance");
  EXPECT_FALSE(Parse({}).ok());
  EXPECT_FALSE(Parse({"frobnicate"}).ok());
  auto help = Parse({"changes", "approve", "--help"});
  ASSERT_TRUE(help.ok()) << help.status();
  EXPECT_EQ(help->command, "help");
  EXPECT_THAT(help->help, HasSubstr("--waves"));
}

TEST(CommandLineTest, ReadinessTakesExactlyOneOfRuleAndChange) {
  auto rule = Parse({"readiness", "--rule", "min-dialect-3-1-1", "--limit", "20"});
  ASSERT_TRUE(rule.ok()) << rule.status();
  EXPECT_EQ(rule->command, "readiness");
  const auto& r = RequestOf<smbfleet::v1::GetReadinessRequest>(*rule);
  EXPECT_EQ(r.rule_id(), "min-dialect-3-1-1");
  EXPECT_EQ(r.change_id(), "");
  EXPECT_EQ(r.limit(), 20u);
  auto change = Parse({"readiness", "--change", "CHG-7", "--format=json"});
  ASSERT_TRUE(change.ok()) << change.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::GetReadinessRequest>(*change).change_id(), "CHG-7");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"readiness"}, {"readiness", "--rule", "r", "--change", "CHG-1"}}) {
    auto bad = Parse(args);
    ASSERT_FALSE(bad.ok()) << args.size();
    EXPECT_THAT(bad.status().message(), HasSubstr("exactly one of --rule and --change"));
  }
}

TEST(CommandLineTest, WaiverRequestScopesAndExpiry) {
  auto inv =
      Parse({"waivers", "request", "--rule", "share-encryption", "--share", "finance", "--host",
             "fs01", "--justification", "legacy scanner", "--ticket", "CHG-7", "--expires", "30d"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  const auto& w = RequestOf<smbfleet::v1::RequestWaiverRequest>(*inv).waiver();
  EXPECT_EQ(w.rule_id(), "share-encryption");
  EXPECT_EQ(w.share(), "finance");
  EXPECT_EQ(w.host(), "fs01");
  EXPECT_EQ(w.ticket(), "CHG-7");
  EXPECT_EQ(w.expires_at().seconds(), absl::ToUnixSeconds(kNow + absl::Hours(30 * 24)));

  auto label = Parse({"waivers", "request", "--rule", "*", "--label", "site=lab", "--justification",
                      "lab", "--expires", "2027-02-01T00:00:00Z"});
  ASSERT_TRUE(label.ok()) << label.status();
  const auto& lw = RequestOf<smbfleet::v1::RequestWaiverRequest>(*label).waiver();
  EXPECT_EQ(lw.label_key(), "site");
  EXPECT_EQ(lw.label_value(), "lab");
  EXPECT_EQ(lw.expires_at().seconds(), 1'801'440'000);
}

TEST(CommandLineTest, WaiverRequestMistakes) {
  WaiverFlags base{"r", "fs01", "", "", "why", "", "30d"};
  EXPECT_TRUE(BuildWaiverRequest(base, kNow).ok());
  struct Case {
    std::function<void(WaiverFlags*)> edit;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {[](WaiverFlags* f) { f->host.clear(); }, "one scope"},
           {[](WaiverFlags* f) { f->label = "site=x"; }, "one scope"},
           {[](WaiverFlags* f) {
              f->label = "site";
              f->host.clear();
            },
            "--label"},
           {[](WaiverFlags* f) { f->share = "a\x1b"; }, "--share"},
           {[](WaiverFlags* f) { f->expires = "2020-01-01T00:00:00Z"; }, "not in the future"},
           {[](WaiverFlags* f) { f->expires = "next week"; }, "'next week'"},
           {[](WaiverFlags* f) { f->justification = ""; }, "--justification"},
       }) {
    WaiverFlags f = base;
    c.edit(&f);
    auto r = BuildWaiverRequest(f, kNow);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_THAT(r.status().message(), HasSubstr(c.want));
  }
  // Required flags are enforced by the parser.
  EXPECT_FALSE(Parse({"waivers", "request", "--rule", "r", "--host", "h", "--expires", "1d"}).ok());
}

TEST(CommandLineTest, WaiverListApproveRevokeAndAudit) {
  auto list = Parse({"waivers", "list", "--all"});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(RequestOf<smbfleet::v1::ListWaiversRequest>(*list).include_inactive());
  auto approve = Parse({"waivers", "approve", "w-1", "--comment", "fine"});
  ASSERT_TRUE(approve.ok()) << approve.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::ApproveWaiverRequest>(*approve).id(), "w-1");
  EXPECT_FALSE(Parse({"waivers", "revoke", "w-1"}).ok());  // --reason is required
  auto revoke = Parse({"waivers", "revoke", "w-1", "--reason", "fixed"});
  ASSERT_TRUE(revoke.ok()) << revoke.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::RevokeWaiverRequest>(*revoke).reason(), "fixed");
  auto audit = Parse({"audit", "--waiver", "w-1"});
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_EQ(RequestOf<smbfleet::v1::ListAuditRequest>(*audit).waiver_id(), "w-1");
}

}  // namespace
}  // namespace smbfleet::cli

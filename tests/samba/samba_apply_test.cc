// Changes applied to a real smbd through SambaApplier, checked with real smbclient connections.

#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/core/change_executor.h"
#include "agent/core/testing/fake_clock.h"
#include "agent/core/testing/fake_collector_client.h"
#include "agent/core/testing/test_approvals.h"
#include "agent/platform/samba/samba_applier.h"
#include "agent/platform/samba/samba_source.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/samba/samba_lab.h"

namespace smbfleet::testing {
namespace {

using agent::samba::ParameterChange;
using agent::samba::SambaApplier;
using agent::samba::SambaApplierOptions;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

v1::SettingChange Change(const std::string& setting, const std::string& value,
                         const std::string& share = "") {
  v1::SettingChange c;
  c.set_setting(setting);
  c.set_value(value);
  c.set_share(share);
  return c;
}

std::unique_ptr<SambaApplier> ApplierFor(SambaLab& lab) {
  SambaApplierOptions options;
  options.samba = lab.Options();
  options.managed_dir = lab.managed_dir();
  return std::make_unique<SambaApplier>(options, lab.runner());
}

// smbclient's verdict for one new connection: "ok" or the NT_STATUS it failed with.
std::string Verdict(SambaLab& lab, const std::string& share, const std::vector<std::string>& opts) {
  auto r = lab.Connect(share, opts);
  if (!r.ok()) return std::string(r.status().message());
  if (r->exit_code == 0 && absl::StrContains(r->stdout_data, "blocks of size")) return "ok";
  std::string out = r->stdout_data + r->stderr_data;
  size_t at = out.find("NT_STATUS_");
  if (at == std::string::npos) return out;
  size_t end = out.find_first_of(" \n", at);
  return out.substr(at, end - at);
}

v1::Posture Collect(SambaLab& lab) {
  auto posture = agent::NewSambaSource(lab.Options(), lab.runner())->Collect();
  EXPECT_TRUE(posture.ok()) << posture.status();
  return posture.ok() ? *posture : v1::Posture();
}

std::vector<std::string> Smb1SigningOff() {
  std::vector<std::string> o = Smb1ClientOptions();
  o.push_back("--option=client signing=off");
  return o;
}

TEST(SambaApplyTest, MandatorySigningRefusesUnsignedSmb1AndSignsSmb3) {
  auto lab = SambaLab::Start({"server min protocol = NT1\n", {}});
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  EXPECT_EQ(Verdict(l, "demo", Smb1SigningOff()), "ok");
  ASSERT_TRUE(l.Hold("before", "demo").ok());

  auto r = ApplierFor(l)->Apply({Change("server.requireSigning", "true")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r.before[0].value(), "false");
  EXPECT_EQ(r.after[0].value(), "true");

  EXPECT_EQ(Verdict(l, "demo", Smb1SigningOff()), "NT_STATUS_ACCESS_DENIED");
  EXPECT_EQ(Verdict(l, "demo", Smb1ClientOptions()), "ok");  // SMB1 that signs is fine
  ASSERT_TRUE(l.Hold("after", "demo").ok());
  v1::Posture p = Collect(l);
  EXPECT_TRUE(p.server().require_signing());
  std::map<v1::Protection, int> by_signing;
  for (const auto& s : p.sessions()) {
    ASSERT_EQ(s.shares_size(), 1);
    ++by_signing[s.shares(0).signing()];
  }
  // The session held from before keeps what it negotiated; the new one is signed.
  EXPECT_EQ(by_signing[v1::PROTECTION_NONE], 1);
  EXPECT_EQ(by_signing[v1::PROTECTION_FULL], 1);
}

TEST(SambaApplyTest, ShareEncryptionRefusesSmb2AndEncryptsSmb3) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  EXPECT_EQ(Verdict(l, "finance", {"-mSMB2_10"}), "ok");

  auto r = ApplierFor(l)->Apply({Change("share.encryptData", "true", "finance")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r.after[0].value(), "true");

  EXPECT_EQ(Verdict(l, "finance", {"-mSMB2_10"}), "NT_STATUS_ACCESS_DENIED");
  EXPECT_EQ(Verdict(l, "demo", {"-mSMB2_10"}), "ok");  // other shares unaffected
  ASSERT_TRUE(l.Hold("enc", "finance", {"--client-protection=off"}).ok());
  v1::Posture p = Collect(l);
  ASSERT_EQ(p.sessions_size(), 1);
  EXPECT_EQ(p.sessions(0).shares(0).encryption(), v1::PROTECTION_FULL);
  EXPECT_EQ(p.sessions(0).shares(0).cipher(), v1::AES_128_GCM);
  for (const auto& share : p.shares()) {
    EXPECT_EQ(share.encrypt_data(), share.name() == "finance") << share.name();
  }
  // smbd logged the refused tree connect; it arrives as an event naming the share.
  int refusals = 0;
  for (const auto& e : p.events()) {
    if (e.kind() == "client_no_encryption" && e.share_name() == "finance") ++refusals;
  }
  EXPECT_EQ(refusals, 1) << p.DebugString();
}

TEST(SambaApplyTest, MinimumSmb311RefusesOlderDialects) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  EXPECT_EQ(Verdict(l, "demo", {"-mSMB2_10"}), "ok");
  auto r = ApplierFor(l)->Apply({Change("server.minDialect", "SMB_3_1_1")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r.before[0].value(), "SMB_2_0_2");
  EXPECT_EQ(r.after[0].value(), "SMB_3_1_1");
  EXPECT_EQ(Verdict(l, "demo", {"-mSMB2_10"}), "NT_STATUS_NOT_SUPPORTED");
  EXPECT_EQ(Verdict(l, "demo", {"-mSMB3_00"}), "NT_STATUS_NOT_SUPPORTED");
  EXPECT_EQ(Verdict(l, "demo", {}), "ok");
  EXPECT_EQ(Collect(l).server().min_dialect(), v1::DIALECT_SMB_3_1_1);
}

// The client side of smb.conf (what Samba's own client tools and winbind use): real testparm
// takes "client smb encrypt" and "client min protocol", and the before-values undo them.
TEST(SambaApplyTest, ClientEncryptionAndMinimumDialectRoundTripThroughTestparm) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  auto applier = ApplierFor(l);
  auto r = applier->Apply(
      {Change("client.requireEncryption", "true"), Change("client.minDialect", "SMB_3_1_1")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r.before[0].value(), "false");
  EXPECT_EQ(r.after[0].value(), "true");
  EXPECT_EQ(r.after[1].value(), "SMB_3_1_1");
  v1::Posture p = Collect(l);
  EXPECT_TRUE(p.client().require_encryption());
  EXPECT_EQ(p.client().min_dialect(), v1::DIALECT_SMB_3_1_1);
  auto back = applier->Apply({r.before[0], r.before[1]});
  ASSERT_TRUE(back.ok()) << back.status();
  p = Collect(l);
  EXPECT_FALSE(p.client().require_encryption());
  EXPECT_EQ(v1::Dialect_Name(p.client().min_dialect()),
            absl::StrCat("DIALECT_", r.before[1].value()));
  // The server still serves: the client settings do not touch what smbd accepts.
  EXPECT_EQ(Verdict(l, "demo", {"-mSMB2_10"}), "ok");
}

TEST(SambaApplyTest, InvalidValueIsRolledBackAndTheShareStillWorks) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  auto applier = ApplierFor(l);
  ASSERT_TRUE(applier->Apply({Change("server.requireSigning", "true")}).ok());
  std::string before = ReadFile(l.managed_dir() + "/posture.conf").value_or("");
  ASSERT_THAT(before, HasSubstr("server signing = mandatory"));

  // The typed API never produces such a value; the writer below it still must not load it.
  auto r = applier->writer().Write({{"", "server signing", "bogus"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(r.status().message(), HasSubstr("restored"));
  EXPECT_EQ(ReadFile(l.managed_dir() + "/posture.conf").value_or(""), before);

  EXPECT_EQ(Verdict(l, "demo", {}), "ok");
  EXPECT_EQ(Verdict(l, "finance", {}), "ok");
  v1::Posture p = Collect(l);
  EXPECT_EQ(p.probe_errors_size(), 0);
  EXPECT_TRUE(p.server().require_signing());

  // A typed value that is not a value at all never reaches the file.
  auto typed = applier->Apply({Change("server.requireSigning", "bogus")});
  EXPECT_EQ(typed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadFile(l.managed_dir() + "/posture.conf").value_or(""), before);
}

TEST(SambaApplyTest, InjectionAttemptsAreRefused) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  auto applier = ApplierFor(l);
  const std::string evil = l.dir() + "/evil.conf";
  ASSERT_TRUE(WriteFileAtomic(evil, "[evil]\n    path = /\n    guest ok = yes\n").ok());
  const std::vector<std::string> shares = {"finance]\n[evil", "finance\ninclude = " + evil,
                                           "include = " + evil, "../posture", "finance]"};
  for (const std::string& share : shares) {
    auto r = applier->Apply({Change("share.encryptData", "true", share)});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << share;
  }
  auto w = applier->writer().Write({{"", "server signing", "auto\ninclude = " + evil}});
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  w = applier->writer().Write({{"", "include", evil}});
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);

  v1::Posture p = Collect(l);
  ASSERT_EQ(p.shares_size(), 2);
  for (const auto& s : p.shares()) EXPECT_NE(s.name(), "evil");
  EXPECT_EQ(Verdict(l, "evil", {}), "NT_STATUS_BAD_NETWORK_NAME");
  for (const char* f : {"/posture.conf", "/share-finance.conf"}) {
    EXPECT_THAT(ReadFile(l.managed_dir() + f).value_or(""), Not(HasSubstr("evil"))) << f;
  }
}

// Every file smb.conf reads, by name, so that a refused change can be shown to have changed none.
std::map<std::string, std::string> ConfigFiles(SambaLab& lab) {
  std::map<std::string, std::string> files = {{"smb.conf", ReadFile(lab.smb_conf()).value_or("")}};
  for (const auto& e : std::filesystem::directory_iterator(lab.managed_dir())) {
    files[e.path().filename().string()] = ReadFile(e.path().string()).value_or("");
  }
  return files;
}

// Section breaks, include lines and smb.conf's % substitutions, in share names and in values:
// each is refused with an error naming the setting's field, and no file changes.
TEST(SambaApplyTest, HostileSharesAndValuesNameTheFieldAndChangeNothing) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  auto applier = ApplierFor(l);
  ASSERT_TRUE(applier->Apply({Change("server.requireSigning", "true")}).ok());
  const auto before = ConfigFiles(l);
  struct Case {
    v1::SettingChange change;
    const char* field;
  };
  const Case cases[] = {
      {Change("share.encryptData", "true", "finance]\n[global]"), "settings[0].share"},
      {Change("share.encryptData", "true", "finance\ninclude = /etc/passwd"), "settings[0].share"},
      {Change("share.encryptData", "true", "fin%U"), "settings[0].share"},
      {Change("share.encryptData", "true", "fin%m\\..\\x"), "settings[0].share"},
      {Change("share.encryptData", "true\ninclude = /etc/passwd", "finance"), "settings[0]"},
      {Change("server.minDialect", "SMB_3_0\n[global]\n  guest ok = yes"), "settings[0]"},
      {Change("server.requireSigning", "%U"), "settings[0]"},
      {Change("server.minDialect", "include = /etc/passwd"), "settings[0]"},
  };
  for (const Case& c : cases) {
    auto r = applier->Apply({c.change});
    ASSERT_FALSE(r.ok()) << c.change.ShortDebugString();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(c.field)) << r.status();
    EXPECT_EQ(ConfigFiles(l), before) << c.change.ShortDebugString();
  }
  EXPECT_EQ(Verdict(l, "finance", {}), "ok");
  EXPECT_TRUE(Collect(l).server().require_signing());
}

// A share named like one of smbcontrol's options ("-d10" is its debug level) reaches the real
// smbcontrol after "--": the close-share goes out without a warning instead of "Invalid option".
TEST(SambaApplyTest, CloseShareOfAShareNamedLikeAnOptionReachesSmbcontrol) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  auto r =
      ApplierFor(**lab)->Apply({Change("server.requireSigning", "true")}, {"close-share:-d10"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r.warnings, ::testing::IsEmpty());
  bool closed = false;
  for (const std::string& a : r.actions) closed |= absl::EndsWith(a, "close-share -d10");
  EXPECT_TRUE(closed) << ::testing::PrintToString(r.actions);
}

TEST(SambaApplyTest, CloseShareMakesHeldSessionsReconnect) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  ASSERT_TRUE(l.Hold("old", "finance", {"-mSMB2_10"}).ok());
  auto r = ApplierFor(l)->Apply({Change("share.encryptData", "true", "finance")}, {"close-share"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r.warnings, ::testing::IsEmpty());
  EXPECT_THAT(r.actions, Contains(HasSubstr("close-share finance")));
  ASSERT_TRUE(l.Send("old", "ls").ok());
  std::string out = ReadFile(l.dir() + "/holds/old.out").value_or("");
  EXPECT_THAT(out, HasSubstr("NT_STATUS_NETWORK_NAME_DELETED"));
  // The SMB2_10 client cannot come back to the now-encrypted share.
  EXPECT_EQ(Verdict(l, "finance", {"-mSMB2_10"}), "NT_STATUS_ACCESS_DENIED");
}

TEST(SambaApplyTest, KillClientIpDropsConnections) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  ASSERT_TRUE(l.Hold("old", "demo").ok());
  ASSERT_EQ(Collect(l).sessions_size(), 1);
  auto r = ApplierFor(l)->Apply({Change("server.requireSigning", "true")}, {"kill-client-ip"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r.actions, Contains(HasSubstr("kill-client-ip 127.0.0.1")));
  ASSERT_TRUE(l.Send("old", "ls").ok());
  EXPECT_THAT(ReadFile(l.dir() + "/holds/old.out").value_or(""),
              HasSubstr("NT_STATUS_CONNECTION_DISCONNECTED"));
  // A new session gets the new setting.
  ASSERT_TRUE(l.Hold("new", "demo").ok());
  v1::Posture p = Collect(l);
  ASSERT_EQ(p.sessions_size(), 1);
  EXPECT_EQ(p.sessions(0).shares(0).signing(), v1::PROTECTION_FULL);
}

TEST(SambaApplyTest, EncryptionRequiredServerWideRefusesSmb2AtSessionSetup) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  auto r = ApplierFor(l)->Apply(
      {Change("server.encryptData", "true"), Change("server.rejectUnencryptedAccess", "true")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Verdict(l, "demo", {"-mSMB2_10"}), "NT_STATUS_ACCESS_DENIED");
  ASSERT_TRUE(l.Hold("s3", "demo").ok());
  v1::Posture p = Collect(l);
  EXPECT_TRUE(p.server().encrypt_data());
  EXPECT_TRUE(p.server().reject_unencrypted_access());
  ASSERT_EQ(p.sessions_size(), 1);
  EXPECT_EQ(p.sessions(0).shares(0).encryption(), v1::PROTECTION_FULL);

  // Rolling back with the journaled before-values restores access for SMB2.
  auto back = ApplierFor(l)->Apply(r.before);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(Verdict(l, "demo", {"-mSMB2_10"}), "ok");
}

std::vector<std::string> StagingLeftovers(SambaLab& l) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(l.managed_dir())) {
    std::string name = e.path().filename().string();
    if (absl::StartsWith(name, ".stage-") || absl::StartsWith(name, ".posture.conf.") ||
        absl::StartsWith(name, ".share-")) {
      out.push_back(name);
    }
  }
  return out;
}

// smbd re-reads changed include files by itself: a candidate testparm rejects must never be
// written where smbd reads, not even for a moment.
TEST(SambaApplyTest, CandidateTestparmRejectsLeavesTheLiveFilesByteIdentical) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  auto applier = ApplierFor(l);
  ASSERT_TRUE(applier->Apply({Change("share.encryptData", "false", "finance")}).ok());
  const std::string global = l.managed_dir() + "/posture.conf";
  const std::string finance = l.managed_dir() + "/share-finance.conf";
  std::string global_before = ReadFile(global).value_or("<missing>");
  std::string finance_before = ReadFile(finance).value_or("<missing>");

  auto r = applier->writer().Write(
      {{"", "server signing", "mandatory"}, {"finance", "smb encrypt", "bogus"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted) << r.status();
  EXPECT_EQ(ReadFile(global).value_or("<missing>"), global_before);
  EXPECT_EQ(ReadFile(finance).value_or("<missing>"), finance_before);
  EXPECT_THAT(StagingLeftovers(l), ::testing::IsEmpty());
  EXPECT_EQ(Verdict(l, "finance", {}), "ok");
  EXPECT_FALSE(Collect(l).server().require_signing());
}

TEST(SambaApplyTest, MultiFileChangeLandsAsAWhole) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  auto applier = ApplierFor(l);
  auto r = applier->Apply({Change("server.requireSigning", "true"),
                           Change("share.encryptData", "true", "finance"),
                           Change("share.encryptData", "true", "demo")});
  ASSERT_TRUE(r.ok()) << r.status();
  v1::Posture p = Collect(l);
  EXPECT_TRUE(p.server().require_signing());
  for (const auto& share : p.shares()) {
    if (share.name() == "finance" || share.name() == "demo") {
      EXPECT_TRUE(share.encrypt_data()) << share.name();
    }
  }
  EXPECT_EQ(Verdict(l, "demo", {"-mSMB3", "--option=client smb encrypt=required"}), "ok");
  EXPECT_THAT(StagingLeftovers(l), ::testing::IsEmpty());
}

TEST(SambaApplyTest, ConcurrentAppliesDoNotInterleave) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  // Two appliers (as two agents would be) over one smb.conf, each changing its own setting in the
  // same include file. Each apply states the value it left last time as expected_current: an
  // interleaved read-modify-write by the other would lose it and fail the precondition.
  auto a = ApplierFor(l);
  auto b = ApplierFor(l);
  auto loop = [&](SambaApplier* applier, const std::string& setting) {
    std::string last = "false";
    for (int i = 0; i < 6; ++i) {
      std::string next = last == "false" ? "true" : "false";
      v1::SettingChange c = Change(setting, next);
      c.set_expected_current(last);
      auto r = applier->Apply({c});
      EXPECT_TRUE(r.ok()) << setting << " " << i << ": " << r.status();
      last = next;
    }
  };
  std::thread ta(loop, a.get(), "server.requireSigning");
  std::thread tb(loop, b.get(), "client.requireSigning");
  ta.join();
  tb.join();
  v1::Posture p = Collect(l);
  EXPECT_EQ(p.probe_errors_size(), 0);
  EXPECT_FALSE(p.server().require_signing());  // six toggles from false
  EXPECT_FALSE(p.client().require_signing());
  EXPECT_THAT(StagingLeftovers(l), ::testing::IsEmpty());
  EXPECT_EQ(Verdict(l, "finance", {}), "ok");
}

// The agent's change executor over the real applier: an order applies and acks with before and
// after; a stale expected_current changes nothing.
TEST(SambaApplyTest, ChangeOrderThroughTheExecutor) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  auto applier = ApplierFor(l);
  agent::testing::FakeClock clock;
  agent::testing::FakeCollectorClient client(&clock);
  agent::testing::TestApprovals approvals;
  agent::ApproverTrust trust(approvals.Trust({"alice"}), l.dir() + "/approver-set.pb");
  agent::ChangeExecutorOptions options;
  options.trust = &trust;
  options.host = "fs01";
  options.changes.enforce = true;
  options.changes.allow = {"share.encryptData"};
  options.changes.journal_dir = l.dir() + "/journal";
  agent::ChangeExecutor executor(options, applier.get(), &client, &clock);
  ASSERT_TRUE(executor.Open().ok());

  auto order = [&approvals](const std::string& id, const std::string& expected) {
    v1::ChangeOrder o;
    o.set_change_id(id);
    o.set_version(1);
    *o.add_settings() = Change("share.encryptData", "true", "finance");
    o.mutable_settings(0)->set_expected_current(expected);
    return approvals.Sign(
        o, agent::testing::TestApprovals::PayloadOf(o, {"fs01"}, absl::Now() + absl::Hours(1)),
        {"alice"});
  };
  std::string conf_before = ReadFile(l.smb_conf()).value_or("<missing>");
  std::string finance_before =
      ReadFile(l.managed_dir() + "/share-finance.conf").value_or("<missing>");
  executor.Submit(order("stale", "true"));  // the share is not encrypted
  executor.Drain();
  ASSERT_EQ(client.acks().size(), 1u);
  EXPECT_EQ(client.acks()[0].result(), v1::AckChangeRequest::RESULT_PRECONDITION_FAILED);
  EXPECT_THAT(client.acks()[0].message(),
              HasSubstr("expected current value 'true', found 'false'"));
  EXPECT_EQ(ReadFile(l.smb_conf()).value_or(""), conf_before);
  EXPECT_EQ(ReadFile(l.managed_dir() + "/share-finance.conf").value_or("<missing>"),
            finance_before);

  executor.Submit(order("encrypt-finance", "false"));
  executor.Drain();
  ASSERT_EQ(client.acks().size(), 2u);
  const v1::AckChangeRequest ack = client.acks()[1];
  EXPECT_EQ(ack.result(), v1::AckChangeRequest::RESULT_APPLIED) << ack.message();
  ASSERT_EQ(ack.before_size(), 1);
  EXPECT_EQ(ack.before(0).value(), "false");
  ASSERT_EQ(ack.after_size(), 1);
  EXPECT_EQ(ack.after(0).value(), "true");
  EXPECT_EQ(Verdict(l, "finance", {"-mSMB2_10"}), "NT_STATUS_ACCESS_DENIED");
}

}  // namespace
}  // namespace smbfleet::testing

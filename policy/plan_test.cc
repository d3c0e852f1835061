#include "policy/plan.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "policy/cost/compression_row_testing.h"
#include "policy/evaluate.h"

namespace smbfleet::policy {
namespace {

using smbfleet::v1::AffectedClient;
using smbfleet::v1::Posture;
using smbfleet::v1::RemediationPlan;

const absl::Time kNow = absl::FromUnixSeconds(1796000000);

Policy Baseline() {
  std::ifstream in(std::string(SMBFLEET_SOURCE_DIR) + "/policy/policies/baseline.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  auto p = ParsePolicy("baseline.yaml", ss.str());
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// Server 2022 with SMB1 on, signing not required, an unencrypted Finance share and clients
// that would break.
Posture LegacyWindows() {
  Posture p;
  auto* h = p.mutable_host();
  h->set_hostname("fs01");
  h->set_fqdn("fs01.corp.example");
  h->set_platform(smbfleet::v1::PLATFORM_WINDOWS);
  h->set_os_version("10.0.20348");
  auto* s = p.mutable_server();
  s->set_smb1_enabled(true);
  s->set_audit_smb1_access(false);
  s->set_require_signing(false);
  s->set_encrypt_data(false);
  s->set_reject_unencrypted_access(true);
  s->set_name_hardening_level(0);
  s->set_null_session_shares_known(true);
  auto* c = p.mutable_client();
  c->set_smb1_enabled(false);
  c->set_require_signing(true);
  c->set_enable_insecure_guest_logons(false);
  auto* fin = p.add_shares();
  fin->set_name("Finance");
  fin->set_path("D:\\Finance");
  fin->set_encrypt_data(false);
  auto* pub = p.add_shares();
  pub->set_name("Public");
  pub->set_encrypt_data(false);

  auto* smb1 = p.add_sessions();
  smb1->set_session_id("101");
  smb1->set_client_address("10.0.0.50");
  smb1->set_client_name("SCANNER01");
  smb1->set_user("CORP\\scan");
  smb1->set_dialect(smbfleet::v1::DIALECT_SMB1);
  auto* guest = p.add_sessions();
  guest->set_session_id("102");
  guest->set_client_address("10.0.0.51");
  guest->set_client_name("KIOSK");
  guest->set_user("Guest");
  guest->set_guest(true);
  guest->set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
  auto* old = p.add_sessions();
  old->set_session_id("103");
  old->set_client_address("10.0.0.52");
  old->set_client_name("WIN7-ACCT");
  old->set_user("CORP\\ann");
  old->set_dialect(smbfleet::v1::DIALECT_SMB_2_1);
  auto* modern = p.add_sessions();
  modern->set_session_id("104");
  modern->set_client_address("10.0.0.53");
  modern->set_client_name("WS-NEW");
  modern->set_user("CORP\\bob");
  modern->set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
  auto* of = p.add_open_files();
  of->set_session_id("103");
  of->set_share_name("Finance");
  of->set_path("D:\\Finance\\q3.xlsx");

  auto* ev = p.add_events();
  ev->set_event_id(3021);
  ev->set_channel("Microsoft-Windows-SMBServer/Audit");
  ev->set_kind("client_no_signing");
  ev->set_client_address("10.0.0.60");
  ev->set_client_name("NAS-BACKUP");
  ev->mutable_time()->set_seconds(1795990000);
  return p;
}

std::vector<const AffectedClient*> For(const RemediationPlan& plan, const std::string& setting) {
  std::vector<const AffectedClient*> out;
  for (const auto& c : plan.impact().clients()) {
    if (c.setting() == setting) out.push_back(&c);
  }
  return out;
}

bool Names(const std::vector<const AffectedClient*>& cs, const std::string& name) {
  for (const auto* c : cs) {
    if (c->client_name() == name) return true;
  }
  return false;
}

TEST(PlanTest, StepsAreOrderedAuditProtectRequireDisable) {
  Policy policy = Baseline();
  Posture p = LegacyWindows();
  auto eval = EvaluateHost(policy, p, {}, kNow);
  RemediationPlan plan = PlanRemediation(policy, p, eval, {}, kNow);
  std::vector<std::string> order;
  for (const auto& s : plan.steps()) {
    order.push_back(s.share().empty() ? s.setting() : s.setting() + "[" + s.share() + "]");
  }
  // auditClientDoesNotSupport* are not reported on Server 2022: not planned. Reject is on.
  std::vector<std::string> want = {"server.auditSmb1Access", "share.encryptData[Finance]",
                                   "server.requireSigning", "server.smb1Enabled"};
  EXPECT_EQ(order, want);
  for (int i = 0; i < plan.steps_size(); ++i) EXPECT_EQ(plan.steps(i).order(), i + 1u);
  const auto& sign = plan.steps(2);
  EXPECT_EQ(sign.expected_current(), "false");
  EXPECT_EQ(sign.value(), "true");
  EXPECT_EQ(sign.rollback_value(), "false");
  EXPECT_EQ(sign.phase(), smbfleet::v1::PLAN_PHASE_REQUIRE);
  EXPECT_EQ(sign.rule_ids(0), "server-signing-required");
  // Both share rules are fixed by one encryptData step.
  EXPECT_EQ(plan.steps(1).rule_ids_size(), 2);
  // SPN hardening has no typed setting, and old clients must be upgraded: a person does it.
  ASSERT_EQ(plan.not_remediable_size(), 2);
  EXPECT_EQ(plan.not_remediable(0), "no-sessions-below-3-0");
  EXPECT_EQ(plan.not_remediable(1), "spn-name-hardening");
  for (const auto& s : plan.steps()) {
    EXPECT_TRUE(LookupSetting(s.setting()).ok()) << s.setting();
  }
}

TEST(PlanTest, ImpactNamesTheClientsThatWouldBreak) {
  Policy policy = Baseline();
  Posture p = LegacyWindows();
  auto eval = EvaluateHost(policy, p, {}, kNow);
  PeerConnection unsigned_peer{"ws17", {}};
  unsigned_peer.connection.set_server_name("FS01.corp.example");
  unsigned_peer.connection.set_share_name("Public");
  unsigned_peer.connection.set_user("CORP\\carl");
  unsigned_peer.connection.set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
  unsigned_peer.connection.set_signed_(false);
  unsigned_peer.connection.set_encrypted(false);
  PeerConnection other_server{"ws18", {}};
  other_server.connection.set_server_name("fs02");
  other_server.connection.set_signed_(false);
  std::vector<PeerConnection> all = {unsigned_peer, other_server};
  auto towards = PeerConnectionsTowards(p.host(), all);
  ASSERT_EQ(towards.size(), 1u);
  RemediationPlan plan = PlanRemediation(policy, p, eval, towards, kNow);

  auto smb1 = For(plan, "server.smb1Enabled");
  ASSERT_EQ(smb1.size(), 1u);
  EXPECT_EQ(smb1[0]->client_name(), "SCANNER01");
  EXPECT_EQ(smb1[0]->client_address(), "10.0.0.50");
  EXPECT_EQ(smb1[0]->user(), "CORP\\scan");
  EXPECT_EQ(smb1[0]->source(), smbfleet::v1::IMPACT_SOURCE_SESSION);

  auto sign = For(plan, "server.requireSigning");
  EXPECT_TRUE(Names(sign, "KIOSK"));       // guest session
  EXPECT_TRUE(Names(sign, "SCANNER01"));   // SMB1 unsigned
  EXPECT_TRUE(Names(sign, "NAS-BACKUP"));  // audit event 3021
  EXPECT_TRUE(Names(sign, "ws17"));        // unsigned connection another agent reported
  EXPECT_FALSE(Names(sign, "WS-NEW"));     // SMB 3.1.1 signs fine
  for (const auto* c : sign) {
    if (c->client_name() == "ws17") {
      EXPECT_EQ(c->source(), smbfleet::v1::IMPACT_SOURCE_PEER_CONNECTION);
      EXPECT_EQ(c->reporter(), "ws17");
      EXPECT_NE(c->evidence().find("signed=false"), std::string::npos) << c->evidence();
    }
    if (c->client_name() == "NAS-BACKUP") {
      EXPECT_NE(c->evidence().find("event 3021"), std::string::npos) << c->evidence();
    }
  }

  auto enc = For(plan, "share.encryptData[Finance]");
  EXPECT_TRUE(Names(enc, "WIN7-ACCT"));  // SMB 2.1 on Finance (from its open files)
  EXPECT_FALSE(Names(enc, "WS-NEW"));
  EXPECT_FALSE(Names(enc, "KIOSK"));
  EXPECT_EQ(plan.impact().refused_clients(), 5u);
  EXPECT_EQ(plan.impact().refused_sessions(), 3u);
  EXPECT_FALSE(plan.impact().cost().summary().empty());
}

TEST(PlanTest, ImpactSaysWhenEachClientWasSeen) {
  Policy policy = Baseline();
  Posture p = LegacyWindows();
  p.mutable_collected_at()->set_seconds(1796000000);
  for (auto& s : *p.mutable_sessions()) s.set_seconds_exists(600);
  // NAS-BACKUP was refused twice: the span runs from the first event to the last.
  auto* again = p.add_events();
  *again = p.events(0);
  again->mutable_time()->set_seconds(1795993600);
  auto* earlier = p.add_events();
  *earlier = p.events(0);
  earlier->mutable_time()->set_seconds(1795980000);
  auto eval = EvaluateHost(policy, p, {}, kNow);
  RemediationPlan plan = PlanRemediation(policy, p, eval, {}, kNow);

  int checked = 0;
  for (const auto* c : For(plan, "server.requireSigning")) {
    if (c->client_name() == "NAS-BACKUP") {
      EXPECT_EQ(c->first_seen().seconds(), 1795980000);
      EXPECT_EQ(c->last_seen().seconds(), 1795993600);
      ++checked;
    }
    if (c->client_name() == "KIOSK") {  // a live session: from its connect to the report
      EXPECT_EQ(c->first_seen().seconds(), 1796000000 - 600);
      EXPECT_EQ(c->last_seen().seconds(), 1796000000);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);  // each client listed once, however many events name it
}

TEST(PlanTest, MinDialectImpactAndCompliantHostHasNoPlan) {
  Policy policy = Baseline();
  Posture samba;
  samba.mutable_host()->set_hostname("nas1");
  samba.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  samba.mutable_server()->set_min_dialect(smbfleet::v1::DIALECT_SMB_2_0_2);
  auto* s = samba.add_sessions();
  s->set_session_id("7");
  s->set_client_address("127.0.0.1");
  s->set_user("probeuser");
  s->set_dialect(smbfleet::v1::DIALECT_SMB_3_0);
  auto eval = EvaluateHost(policy, samba, {}, kNow);
  RemediationPlan plan = PlanRemediation(policy, samba, eval, {}, kNow);
  auto min = For(plan, "server.minDialect");
  ASSERT_EQ(min.size(), 1u);
  EXPECT_EQ(min[0]->session_id(), "7");
  EXPECT_NE(min[0]->reason().find("SMB_3_0 below SMB_3_1_1"), std::string::npos);

  // A waived failure is not planned.
  Posture p = LegacyWindows();
  smbfleet::v1::Waiver w;
  w.set_id("W-9");
  w.set_rule_id("*");
  w.set_host("fs01");
  w.set_justification("decommissioned next week");
  w.set_approved_by("ciso");
  w.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(kNow + absl::Hours(48)));
  eval = EvaluateHost(policy, p, {w}, kNow);
  plan = PlanRemediation(policy, p, eval, {}, kNow);
  EXPECT_EQ(plan.steps_size(), 0);
  EXPECT_EQ(plan.impact().clients_size(), 0);
}

TEST(PlanTest, SambaShareEncryptionDoesNotPlanAGlobalReject) {
  Policy policy = Baseline();
  Posture samba;
  samba.mutable_host()->set_hostname("nas1");
  samba.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  samba.mutable_server()->set_encrypt_data(false);
  samba.mutable_server()->set_reject_unencrypted_access(false);
  auto* sh = samba.add_shares();
  sh->set_name("backup");
  sh->set_path("/srv/backup");
  sh->set_encrypt_data(false);
  auto* s = samba.add_sessions();
  s->set_session_id("9");
  s->set_client_address("127.0.0.1");
  s->set_dialect(smbfleet::v1::DIALECT_SMB_2_1);
  s->add_shares()->set_name("backup");
  auto eval = EvaluateHost(policy, samba, {}, kNow);
  RemediationPlan plan = PlanRemediation(policy, samba, eval, {}, kNow);
  bool share_step = false;
  for (const auto& st : plan.steps()) {
    EXPECT_NE(st.setting(), "server.rejectUnencryptedAccess");
    share_step = share_step || (st.setting() == "share.encryptData" && st.share() == "backup");
  }
  EXPECT_TRUE(share_step);
  auto enc = For(plan, "share.encryptData[backup]");
  ASSERT_EQ(enc.size(), 1u);
  EXPECT_EQ(enc[0]->session_id(), "9");
}

TEST(PlanTest, SambaDesiredShareGetsRequired) {
  Policy policy = Baseline();
  Posture samba;
  samba.mutable_host()->set_hostname("nas1");
  samba.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  samba.mutable_server()->set_encrypt_data(false);
  samba.mutable_server()->set_reject_unencrypted_access(false);
  auto* sh = samba.add_shares();
  sh->set_name("finance");
  sh->set_encrypt_data(true);  // smb encrypt = desired
  (*sh->mutable_raw())["server smb encrypt"] = "desired";
  auto eval = EvaluateHost(policy, samba, {}, kNow);
  RemediationPlan plan = PlanRemediation(policy, samba, eval, {}, kNow);
  const smbfleet::v1::PlanStep* step = nullptr;
  for (const auto& st : plan.steps()) {
    if (st.setting() == "share.encryptData") step = &st;
  }
  ASSERT_NE(step, nullptr) << plan.DebugString();
  EXPECT_EQ(step->expected_current(), "true");
  EXPECT_EQ(step->rule_ids(0), "classified-shares-reject-unencrypted");
  // Once it is required, nothing is planned for the share.
  (*sh->mutable_raw())["server smb encrypt"] = "required";
  eval = EvaluateHost(policy, samba, {}, kNow);
  plan = PlanRemediation(policy, samba, eval, {}, kNow);
  for (const auto& st : plan.steps()) EXPECT_NE(st.setting(), "share.encryptData");
}

// A Windows client as Get-SmbConnection and its client channels show it: an old NAS that does
// not sign (two shares), an SMB 2.1 appliance, an Azure Files share that encrypts (and so shows
// Signed=false), a domain controller that signs; client audit events naming the NAS.
Posture WindowsClient() {
  Posture p;
  p.mutable_host()->set_hostname("ws17");
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_WINDOWS);
  p.mutable_host()->set_os_version("10.0.26100");
  p.mutable_collected_at()->set_seconds(1796000000);
  p.mutable_client()->set_require_signing(false);
  p.mutable_client()->set_require_encryption(false);
  p.mutable_client()->set_min_dialect(smbfleet::v1::DIALECT_SMB_2_0_2);
  auto conn = [&](const std::string& server, const std::string& share, smbfleet::v1::Dialect d,
                  const std::string& raw, bool is_signed, bool encrypted) {
    auto* c = p.add_connections();
    c->set_server_name(server);
    c->set_share_name(share);
    c->set_user("CORP\\ann");
    c->set_dialect(d);
    c->set_dialect_raw(raw);
    c->set_signed_(is_signed);
    c->set_encrypted(encrypted);
  };
  conn("nas01", "backup", smbfleet::v1::DIALECT_SMB_3_0_2, "3.0.2", false, false);
  conn("NAS01", "scans", smbfleet::v1::DIALECT_SMB_3_0_2, "3.0.2", false, false);
  conn("printer-box", "drop", smbfleet::v1::DIALECT_SMB_2_1, "2.1", true, false);
  conn("contosofiles.file.core.windows.net", "archive", smbfleet::v1::DIALECT_SMB_3_1_1, "3.1.1",
       false, true);
  conn("dc01", "SYSVOL", smbfleet::v1::DIALECT_SMB_3_1_1, "3.1.1", true, false);
  auto event = [&](uint32_t id, const std::string& kind, const std::string& server, int64_t at) {
    auto* e = p.add_events();
    e->set_event_id(id);
    e->set_channel(id == 31998 || id == 31999 ? "Microsoft-Windows-SMBClient/Audit"
                                              : "Microsoft-Windows-SMBClient/Security");
    e->set_kind(kind);
    e->set_client_name(server);  // client events name the server here
    e->set_client_address("10.0.5.20");
    e->mutable_time()->set_seconds(at);
  };
  event(31998, "server_no_signing", "\\\\NAS01", 1795990000);
  event(31998, "server_no_signing", "\\\\NAS01", 1795900000);
  event(31998, "server_no_signing", "\\\\NAS01", 1795950000);
  event(31022, "guest_logon", "\\\\KIOSK-NAS", 1795970000);
  return p;
}

smbfleet::v1::PlanStep Step(const std::string& setting, const std::string& value) {
  smbfleet::v1::PlanStep s;
  s.set_setting(setting);
  s.set_value(value);
  return s;
}

std::vector<const AffectedClient*> Of(const smbfleet::v1::Impact& impact,
                                      smbfleet::v1::ImpactSource source) {
  std::vector<const AffectedClient*> out;
  for (const auto& c : impact.clients()) {
    if (c.source() == source) out.push_back(&c);
  }
  return out;
}

TEST(PlanTest, RequiringClientSigningNamesTheUnsignedServerOnce) {
  Posture p = WindowsClient();
  smbfleet::v1::Impact impact = PlanImpact(p, {Step("client.requireSigning", "true")}, {});
  auto conns = Of(impact, smbfleet::v1::IMPACT_SOURCE_OWN_CONNECTION);
  ASSERT_EQ(conns.size(), 1u) << impact.DebugString();  // nas01 and NAS01 are one server
  EXPECT_EQ(conns[0]->client_name(), "nas01");
  EXPECT_EQ(conns[0]->setting(), "client.requireSigning");
  EXPECT_NE(conns[0]->evidence().find("\\\\nas01\\backup"), std::string::npos);
  EXPECT_NE(conns[0]->evidence().find("\\\\NAS01\\scans"), std::string::npos);
  EXPECT_NE(conns[0]->evidence().find("signed=false"), std::string::npos);
  EXPECT_EQ(conns[0]->last_seen().seconds(), 1796000000);
  // Encrypted (so Signed=false) and signed connections are not named.
  EXPECT_FALSE(Names(conns, "contosofiles.file.core.windows.net"));
  EXPECT_FALSE(Names(conns, "dc01"));
  // The guest logon to KIOSK-NAS cannot sign either.
  auto events = Of(impact, smbfleet::v1::IMPACT_SOURCE_EVENT);
  EXPECT_TRUE(Names(events, "KIOSK-NAS"));
  EXPECT_TRUE(Names(events, "NAS01"));
}

TEST(PlanTest, ClientAuditEventsGiveFirstAndLastSeenPerServer) {
  Posture p = WindowsClient();
  smbfleet::v1::Impact impact = PlanImpact(p, {Step("client.requireSigning", "true")}, {});
  int nas = 0;
  for (const auto* c : Of(impact, smbfleet::v1::IMPACT_SOURCE_EVENT)) {
    if (c->client_name() != "NAS01") continue;
    ++nas;
    EXPECT_EQ(c->first_seen().seconds(), 1795900000);
    EXPECT_EQ(c->last_seen().seconds(), 1795990000);
    EXPECT_EQ(c->client_address(), "10.0.5.20");
    EXPECT_NE(c->reason().find("does not support signing"), std::string::npos);
    EXPECT_NE(c->evidence().find("event 31998"), std::string::npos);
  }
  EXPECT_EQ(nas, 1);  // three events, one entry
  // Signing events say nothing about encryption.
  impact = PlanImpact(p, {Step("client.requireEncryption", "true")}, {});
  for (const auto* c : Of(impact, smbfleet::v1::IMPACT_SOURCE_EVENT)) {
    EXPECT_NE(c->client_name(), "NAS01");
  }
}

TEST(PlanTest, RaisingTheClientMinimumDialectNamesTheOlderServers) {
  Posture p = WindowsClient();
  smbfleet::v1::Impact impact = PlanImpact(p, {Step("client.minDialect", "SMB_3_1_1")}, {});
  auto conns = Of(impact, smbfleet::v1::IMPACT_SOURCE_OWN_CONNECTION);
  ASSERT_EQ(conns.size(), 2u) << impact.DebugString();
  EXPECT_TRUE(Names(conns, "nas01"));
  EXPECT_TRUE(Names(conns, "printer-box"));
  for (const auto* c : conns) {
    if (c->client_name() == "printer-box") {
      EXPECT_EQ(c->dialect(), smbfleet::v1::DIALECT_SMB_2_1);
      EXPECT_NE(c->reason().find("SMB_2_1 below SMB_3_1_1"), std::string::npos);
    }
  }
  // SMB 3.0 admits the 3.0.2 NAS: only the 2.1 appliance is cut off.
  impact = PlanImpact(p, {Step("client.minDialect", "SMB_3_0")}, {});
  conns = Of(impact, smbfleet::v1::IMPACT_SOURCE_OWN_CONNECTION);
  ASSERT_EQ(conns.size(), 1u);
  EXPECT_EQ(conns[0]->client_name(), "printer-box");
}

TEST(PlanTest, RequiringClientEncryptionAndRefusingGuestsNameTheirServers) {
  Posture p = WindowsClient();
  smbfleet::v1::Impact impact = PlanImpact(p, {Step("client.requireEncryption", "true")}, {});
  auto conns = Of(impact, smbfleet::v1::IMPACT_SOURCE_OWN_CONNECTION);
  EXPECT_TRUE(Names(conns, "nas01"));
  EXPECT_TRUE(Names(conns, "printer-box"));
  EXPECT_TRUE(Names(conns, "dc01"));  // signed but not encrypted
  EXPECT_FALSE(Names(conns, "contosofiles.file.core.windows.net"));
  for (const auto* c : conns) {
    if (c->client_name() == "printer-box") {
      EXPECT_NE(c->reason().find("cannot encrypt (needs SMB 3.0+)"), std::string::npos);
    }
  }
  impact = PlanImpact(p, {Step("client.enableInsecureGuestLogons", "false")}, {});
  ASSERT_EQ(impact.clients_size(), 1);
  EXPECT_EQ(impact.clients(0).client_name(), "KIOSK-NAS");
  EXPECT_EQ(impact.clients(0).first_seen().seconds(), 1795970000);
  // Turning the client settings the other way refuses nobody.
  EXPECT_EQ(PlanImpact(p, {Step("client.requireSigning", "false")}, {}).clients_size(), 0);
  EXPECT_EQ(PlanImpact(p, {Step("client.enableInsecureGuestLogons", "true")}, {}).clients_size(),
            0);
}

TEST(PlanTest, CompressionStepCarriesPredictedGainAndCpu) {
  Posture p = LegacyWindows();
  (*p.mutable_host()->mutable_labels())["link"] = "wan";
  (*p.mutable_host()->mutable_labels())["link_speed"] = "100Mbit";
  p.mutable_host()->set_logical_cores(8);
  p.mutable_server()->set_request_compression(false);
  *p.add_compression_benchmarks() =
      cost::CompressionRow(smbfleet::v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 2.4, 300e6, 1000e6);
  auto* backup = p.add_shares();
  backup->set_name("VMBackup");
  backup->set_compress_data(false);
  backup->set_classification("backup");

  std::vector<smbfleet::v1::PlanStep> steps(1);
  steps[0].set_setting("share.compressData");
  steps[0].set_share("VMBackup");
  steps[0].set_value("true");
  smbfleet::v1::Impact impact = PlanImpact(p, steps, {});
  const smbfleet::v1::PredictedCost& cost = impact.cost();
  EXPECT_DOUBLE_EQ(cost.compression_ratio(), 2.4);
  EXPECT_EQ(cost.compression_ratio_source(), "vm-disk benchmark (backup share)");
  // 100 Mbit, RTT 30 ms (WAN default): latency-bound, so the window carries 2.4x the payload.
  EXPECT_NEAR(cost.throughput_ratio(), 2.4, 0.05);
  EXPECT_GT(cost.cpu_ratio(), 1);
  EXPECT_GT(cost.cpu_change_points(), 0);
  EXPECT_TRUE(cost.known());
  EXPECT_NE(cost.summary().find("enabling compression XPRESS Huffman (ratio 2.4, vm-disk "
                                "benchmark (backup share)) on fs01: ~+140% throughput"),
            std::string::npos)
      << cost.summary();
  EXPECT_NE(cost.summary().find("(compression of traffic on VMBackup only)"), std::string::npos)
      << cost.summary();

  // Unknown data: the cost says so instead of guessing a ratio.
  backup->clear_classification();
  smbfleet::v1::PredictedCost unknown = PlanImpact(p, steps, {}).cost();
  EXPECT_FALSE(unknown.known());
  EXPECT_EQ(unknown.throughput_ratio(), 0);
  EXPECT_EQ(unknown.summary(),
            "enabling compression: cost unknown, no compression ratio (VMBackup: not sampled)");

  // With a signing step as well, the signing is still priced and the compression named.
  steps.emplace_back();
  steps.back().set_setting("server.requireSigning");
  steps.back().set_value("true");
  smbfleet::v1::PredictedCost both = PlanImpact(p, steps, {}).cost();
  EXPECT_FALSE(both.known());
  EXPECT_NE(both.summary().find("enabling signing AES-128-CMAC on fs01: "), std::string::npos)
      << both.summary();
  EXPECT_NE(both.summary().find("; enabling compression: cost unknown, no compression ratio"),
            std::string::npos)
      << both.summary();
}

// One plan that switches compression on for a compressible share and off for an incompressible
// one prices the one switched on and names the other.
TEST(PlanTest, CompressionOnAndOffInOnePlanPricesTheGain) {
  Posture p = LegacyWindows();
  p.mutable_server()->set_request_compression(false);
  cost::AddSampledShare(&p, "Logs", false, 3.8);
  cost::AddSampledShare(&p, "Video", true, 1.02);
  std::vector<smbfleet::v1::PlanStep> steps(2);
  steps[0].set_setting("share.compressData");
  steps[0].set_share("Video");
  steps[0].set_value("false");
  steps[1].set_setting("share.compressData");
  steps[1].set_share("Logs");
  steps[1].set_value("true");
  smbfleet::v1::PredictedCost cost = PlanImpact(p, steps, {}).cost();
  EXPECT_DOUBLE_EQ(cost.compression_ratio(), 3.8);
  EXPECT_NE(cost.summary().find("enabling compression XPRESS Huffman (ratio 3.8, sampled"),
            std::string::npos)
      << cost.summary();
  EXPECT_NE(cost.summary().find("(compression of traffic on Logs only; off for Video)"),
            std::string::npos)
      << cost.summary();

  steps.pop_back();  // only the incompressible share: CPU saved, throughput unchanged
  smbfleet::v1::PredictedCost off = PlanImpact(p, steps, {}).cost();
  EXPECT_NE(off.summary().find("disabling compression XPRESS Huffman (ratio 1.02"),
            std::string::npos)
      << off.summary();
  EXPECT_LT(off.cpu_ratio(), 1);
  EXPECT_NEAR(off.throughput_ratio(), 1, 0.03);
}

// A posture read from a file has no classifications: the plan prices the backup share by the
// one the evaluation gave it.
TEST(PlanTest, CompressionCostUsesTheEvaluationsClassification) {
  Posture p = LegacyWindows();
  (*p.mutable_host()->mutable_labels())["link"] = "wan";
  p.mutable_server()->set_request_compression(false);
  *p.add_compression_benchmarks() =
      cost::CompressionRow(smbfleet::v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 2.2, 300e6, 1000e6);
  auto* backup = p.add_shares();
  backup->set_name("backup-vms");
  backup->set_compress_data(false);
  ASSERT_TRUE(backup->classification().empty());
  Policy policy = Baseline();
  smbfleet::v1::HostEvaluation e = EvaluateHost(policy, p, {}, kNow);
  RemediationPlan plan = PlanRemediation(policy, p, e, {}, kNow);
  EXPECT_DOUBLE_EQ(plan.impact().cost().compression_ratio(), 2.2);
  EXPECT_EQ(plan.impact().cost().compression_ratio_source(), "vm-disk benchmark (backup share)");
}

TEST(PlanTest, BaselinePlanForAWanHostTurnsCompressionOnForCompressibleShares) {
  Posture p = LegacyWindows();
  (*p.mutable_host()->mutable_labels())["link"] = "wan";
  p.mutable_server()->set_request_compression(false);
  cost::AddSampledShare(&p, "Logs", false, 3.8);
  Policy policy = Baseline();
  smbfleet::v1::HostEvaluation e = EvaluateHost(policy, p, {}, kNow);
  RemediationPlan plan = PlanRemediation(policy, p, e, {}, kNow);
  bool found = false;
  for (const auto& s : plan.steps()) {
    if (s.setting() == "share.compressData" && s.share() == "Logs") {
      found = true;
      EXPECT_EQ(s.value(), "true");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_DOUBLE_EQ(plan.impact().cost().compression_ratio(), 3.8);
  EXPECT_NE(plan.impact().cost().summary().find("compression XPRESS Huffman (ratio 3.8, sampled"),
            std::string::npos)
      << plan.impact().cost().summary();
}

}  // namespace
}  // namespace smbfleet::policy

#include "policy/evaluate.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "policy/cost/compression_row_testing.h"

namespace smbfleet::policy {
namespace {

using google::protobuf::util::TimeUtil;
using smbfleet::v1::ComplianceStatus;
using smbfleet::v1::HostEvaluation;
using smbfleet::v1::Posture;
using smbfleet::v1::RuleResult;

const absl::Time kNow = absl::FromUnixSeconds(1796000000);  // 2026-11-30

Policy Baseline() {
  std::ifstream in(std::string(SMBFLEET_SOURCE_DIR) + "/policy/policies/baseline.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  auto p = ParsePolicy("baseline.yaml", ss.str());
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// A Windows Server host that satisfies the baseline.
Posture GoodWindows(const std::string& build = "20348") {
  Posture p;
  auto* h = p.mutable_host();
  h->set_hostname("fs01");
  h->set_fqdn("fs01.corp.example");
  h->set_platform(smbfleet::v1::PLATFORM_WINDOWS);
  h->set_os_version("10.0." + build);
  auto* s = p.mutable_server();
  s->set_smb1_enabled(false);
  s->set_require_signing(true);
  s->set_encrypt_data(false);
  s->set_reject_unencrypted_access(true);
  s->set_name_hardening_level(1);
  s->set_null_session_shares_known(true);
  s->set_request_compression(false);
  s->set_enable_signing(true);
  s->set_auto_disconnect_timeout_minutes(15);
  s->set_enable_forced_logoff(true);
  s->set_null_session_pipes_known(true);
  s->set_restrict_null_session_access(true);
  auto* c = p.mutable_client();
  c->set_smb1_enabled(false);
  c->set_require_signing(true);
  c->set_enable_signing(true);
  c->set_enable_insecure_guest_logons(false);
  c->set_enable_plain_text_password(false);
  for (const char* path : {"\\\\*\\NETLOGON", "\\\\*\\SYSVOL"}) {
    auto* h = c->add_hardened_paths();
    h->set_path(path);
    h->set_require_mutual_authentication(true);
    h->set_require_integrity(true);
    h->set_require_privacy(build == "26100");
  }
  if (build == "26100") {
    s->set_min_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
    s->set_audit_client_does_not_support_encryption(true);
    s->set_audit_client_does_not_support_signing(true);
    s->set_audit_insecure_guest_logon(true);
    s->set_enable_auth_rate_limiter(true);
    s->set_invalid_authentication_delay_ms(2000);
    c->set_min_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
    c->set_require_encryption(true);
    c->set_audit_insecure_guest_logon(true);
    c->set_audit_server_does_not_support_encryption(true);
    c->set_audit_server_does_not_support_signing(true);
  }
  auto* fin = p.add_shares();
  fin->set_name("Finance");
  fin->set_path("D:\\Shares\\Finance");
  fin->set_encrypt_data(true);
  auto* pub = p.add_shares();
  pub->set_name("Public");
  pub->set_path("D:\\Shares\\Public");
  pub->set_encrypt_data(false);
  auto* ipc = p.add_shares();
  ipc->set_name("IPC$");
  ipc->set_special(true);
  return p;
}

const RuleResult* Find(const HostEvaluation& e, absl::string_view rule,
                       absl::string_view share = "") {
  for (const RuleResult& r : e.results()) {
    if (r.rule_id() == rule && r.share() == share) return &r;
  }
  return nullptr;
}

ComplianceStatus StatusOf(const HostEvaluation& e, absl::string_view rule,
                          absl::string_view share = "") {
  const RuleResult* r = Find(e, rule, share);
  return r == nullptr ? smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED : r->status();
}

TEST(EvaluateTest, CompliantWindows2022HostHasNoFailures) {
  Policy policy = Baseline();
  HostEvaluation e = EvaluateHost(policy, GoodWindows(), {}, kNow);
  EXPECT_EQ(e.policy_version(), policy.version);
  EXPECT_EQ(e.non_compliant(), 0u);
  for (const RuleResult& r : e.results()) {
    EXPECT_NE(r.status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT) << r.rule_id();
  }
  EXPECT_EQ(StatusOf(e, "server-signing-required"), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  EXPECT_EQ(StatusOf(e, "classified-shares-encrypted", "Finance"),
            smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  // Server 2022 cannot mandate a dialect; the session rule applies instead.
  EXPECT_EQ(StatusOf(e, "min-dialect-3-1-1"), smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);
  EXPECT_EQ(StatusOf(e, "no-sessions-below-3-0"), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  EXPECT_EQ(StatusOf(e, "audit-client-no-signing"), smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);
  // Every setting a rule reads is reported: nothing is left unknown.
  EXPECT_EQ(e.unknown(), 0u);
  // Counters add up to the results.
  EXPECT_EQ(e.compliant() + e.non_compliant() + e.unknown() + e.not_applicable() + e.waived() +
                e.errors(),
            static_cast<uint32_t>(e.results_size()));
}

TEST(EvaluateTest, CompliantWindows2025HostHasNoFailuresAndNothingUnknown) {
  HostEvaluation e = EvaluateHost(Baseline(), GoodWindows("26100"), {}, kNow);
  for (const RuleResult& r : e.results()) {
    EXPECT_TRUE(r.status() == smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT ||
                r.status() == smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE)
        << r.rule_id() << ": " << r.message();
  }
  EXPECT_EQ(StatusOf(e, "client-encryption-required"), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  EXPECT_EQ(StatusOf(e, "hardened-unc-paths-privacy"), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  EXPECT_EQ(StatusOf(e, "hardened-unc-paths"), smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);
}

// subsetOf and includes compare names without regard to case; exceptHostLabels excludes hosts.
TEST(EvaluateTest, ListMatchersAndExcludedLabels) {
  auto policy = ParsePolicy("t.yaml", R"(apiVersion: smbfleet/policy/v1
name: t
version: "1"
rules:
  - id: pipes
    title: Pipes
    appliesTo: {exceptHostLabels: {role: "domain-*"}}
    expect:
      server.nullSessionPipes: {subsetOf: [BROWSER]}
  - id: netlogon
    title: Netlogon
    expect:
      client.hardenedUncNetlogon: {includes: [integrity, MUTUALAUTHENTICATION]}
)");
  ASSERT_TRUE(policy.ok()) << policy.status();
  Posture p;
  p.mutable_host()->set_hostname("fs01");
  p.mutable_server()->set_null_session_pipes_known(true);
  p.mutable_client()->set_hardened_paths_known(true);
  HostEvaluation e = EvaluateHost(*policy, p, {}, kNow);
  EXPECT_EQ(StatusOf(e, "pipes"), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);  // none at all
  EXPECT_EQ(StatusOf(e, "netlogon"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(Find(e, "netlogon")->evidence(0).expected(),
            "includes [integrity, MUTUALAUTHENTICATION]");

  p.mutable_server()->add_null_session_pipes(" browser ");
  auto* h = p.mutable_client()->add_hardened_paths();
  h->set_path("\\\\*\\NETLOGON");
  h->set_require_integrity(true);
  e = EvaluateHost(*policy, p, {}, kNow);
  EXPECT_EQ(StatusOf(e, "pipes"), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  EXPECT_EQ(StatusOf(e, "netlogon"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(Find(e, "netlogon")->message(),
            "client.hardenedUncNetlogon is [integrity], expected includes [integrity, "
            "MUTUALAUTHENTICATION]");

  p.mutable_server()->add_null_session_pipes("SAMR");
  h->set_require_mutual_authentication(true);
  e = EvaluateHost(*policy, p, {}, kNow);
  const RuleResult* pipes = Find(e, "pipes");
  EXPECT_EQ(pipes->status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(pipes->evidence(0).observed(), "[ browser , SAMR]");
  EXPECT_EQ(pipes->evidence(0).expected(), "only [BROWSER]");
  EXPECT_EQ(StatusOf(e, "netlogon"), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);

  (*p.mutable_host()->mutable_labels())["role"] = "domain-controller";
  e = EvaluateHost(*policy, p, {}, kNow);
  EXPECT_EQ(StatusOf(e, "pipes"), smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);
  (*p.mutable_host()->mutable_labels())["role"] = "file-server";
  e = EvaluateHost(*policy, p, {}, kNow);
  EXPECT_EQ(StatusOf(e, "pipes"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
}

TEST(EvaluateTest, NonCompliantSettingCarriesEvidence) {
  Posture p = GoodWindows();
  p.mutable_server()->set_require_signing(false);
  HostEvaluation e = EvaluateHost(Baseline(), p, {}, kNow);
  const RuleResult* r = Find(e, "server-signing-required");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  ASSERT_EQ(r->evidence_size(), 1);
  EXPECT_EQ(r->evidence(0).field(), "server.requireSigning");
  EXPECT_EQ(r->evidence(0).observed(), "false");
  EXPECT_EQ(r->evidence(0).expected(), "true");
  EXPECT_EQ(r->cis().ws2022(), "2.3.9.2");
  EXPECT_EQ(r->message(), "server.requireSigning is false, expected true");
}

TEST(EvaluateTest, UnsetIsUnknownAndFailedProbeIsError) {
  Posture p = GoodWindows();
  p.mutable_server()->clear_name_hardening_level();
  HostEvaluation e = EvaluateHost(Baseline(), p, {}, kNow);
  EXPECT_EQ(StatusOf(e, "spn-name-hardening"), smbfleet::v1::COMPLIANCE_STATUS_UNKNOWN);

  p.mutable_client()->Clear();
  auto* err = p.add_probe_errors();
  err->set_probe("Get-SmbClientConfiguration");
  err->set_code("TIMEOUT");
  err->set_message("no output after 30s");
  e = EvaluateHost(Baseline(), p, {}, kNow);
  const RuleResult* r = Find(e, "client-signing-required");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status(), smbfleet::v1::COMPLIANCE_STATUS_ERROR);
  EXPECT_NE(r->evidence(0).note().find("TIMEOUT"), std::string::npos) << r->evidence(0).note();
}

TEST(EvaluateTest, DialectRulesFollowThePlatform) {
  Policy policy = Baseline();
  // Server 2025 must mandate 3.1.1.
  Posture p25 = GoodWindows("26100");
  p25.mutable_server()->set_min_dialect(smbfleet::v1::DIALECT_SMB_3_0);
  HostEvaluation e = EvaluateHost(policy, p25, {}, kNow);
  EXPECT_EQ(StatusOf(e, "min-dialect-3-1-1"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(StatusOf(e, "no-sessions-below-3-0"), smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);

  // Server 2022: an SMB 2.1 session is a violation naming the client.
  Posture p22 = GoodWindows();
  auto* s = p22.add_sessions();
  s->set_session_id("8813272891");
  s->set_client_address("10.1.2.3");
  s->set_client_name("OLD-XP");
  s->set_user("CORP\\scanner");
  s->set_dialect(smbfleet::v1::DIALECT_SMB_2_1);
  auto* ok = p22.add_sessions();
  ok->set_session_id("2");
  ok->set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
  e = EvaluateHost(policy, p22, {}, kNow);
  const RuleResult* r = Find(e, "no-sessions-below-3-0");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  bool named = false;
  for (const auto& ev : r->evidence()) {
    if (ev.session_id() == "8813272891") {
      named = true;
      EXPECT_EQ(ev.client_name(), "OLD-XP");
      EXPECT_EQ(ev.observed(), "SMB_2_1");
      EXPECT_EQ(ev.expected(), ">= SMB_3_0");
    }
    EXPECT_NE(ev.session_id(), "2");
  }
  EXPECT_TRUE(named);

  // Samba: min dialect applies, Windows-only rules do not.
  Posture samba;
  samba.mutable_host()->set_hostname("nas1");
  samba.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  samba.mutable_server()->set_min_dialect(smbfleet::v1::DIALECT_SMB_2_0_2);
  e = EvaluateHost(policy, samba, {}, kNow);
  EXPECT_EQ(StatusOf(e, "min-dialect-3-1-1"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(StatusOf(e, "spn-name-hardening"), smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);

  // Windows without a build number: build-dependent rules are UNKNOWN, not guessed.
  Posture nobuild = GoodWindows();
  nobuild.mutable_host()->clear_os_version();
  e = EvaluateHost(policy, nobuild, {}, kNow);
  EXPECT_EQ(StatusOf(e, "min-dialect-3-1-1"), smbfleet::v1::COMPLIANCE_STATUS_UNKNOWN);
  EXPECT_EQ(StatusOf(e, "server-signing-required"), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
}

TEST(EvaluateTest, SessionLatencyJudgesTheLowestRoundTripTime) {
  Policy policy = Baseline();
  Posture samba;
  samba.mutable_host()->set_hostname("nas1");
  samba.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  auto* far = samba.add_sessions();
  far->set_session_id("41");
  far->set_client_address("198.51.100.7");
  far->set_client_name("BRANCH-PC");
  far->set_rtt_us(61000);
  far->set_min_rtt_us(23400);
  // Idle on a LAN: the smoothed time holds the client's delayed ACKs, the lowest does not.
  auto* idle = samba.add_sessions();
  idle->set_session_id("42");
  idle->set_rtt_us(8900);
  idle->set_min_rtt_us(12);
  auto* unmeasured = samba.add_sessions();  // closed before sock_diag, or the read failed
  unmeasured->set_session_id("43");

  HostEvaluation e = EvaluateHost(policy, samba, {}, kNow);
  const RuleResult* r = Find(e, "session-latency");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(r->severity(), smbfleet::v1::SEVERITY_INFO);
  EXPECT_EQ(r->message(), "1 of 3 sessions violate: lowest round-trip time <= 10.0 ms");
  int named = 0;
  for (const auto& ev : r->evidence()) {
    if (ev.session_id().empty()) continue;
    ++named;
    EXPECT_EQ(ev.session_id(), "41");
    EXPECT_EQ(ev.client_address(), "198.51.100.7");
    EXPECT_EQ(ev.client_name(), "BRANCH-PC");
    EXPECT_EQ(ev.field(), "session.minRttUs");
    EXPECT_EQ(ev.observed(), "23.4 ms");
    EXPECT_EQ(ev.expected(), "<= 10.0 ms");
  }
  EXPECT_EQ(named, 1);

  // Without a measurement there is no finding; the evidence says what was not measured.
  samba.mutable_sessions()->DeleteSubrange(0, 1);
  e = EvaluateHost(policy, samba, {}, kNow);
  r = Find(e, "session-latency");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status(), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  ASSERT_GT(r->evidence_size(), 0);
  EXPECT_EQ(r->evidence(0).note(), "1 sessions without a measured round-trip time");

  // Exactly at the bound is fine.
  samba.mutable_sessions(0)->set_min_rtt_us(10000);
  EXPECT_EQ(StatusOf(EvaluateHost(policy, samba, {}, kNow), "session-latency"),
            smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
}

TEST(EvaluateTest, SessionLatencyJudgesWindowsSessionsToo) {
  Policy policy = Baseline();
  Posture windows = GoodWindows();
  windows.clear_sessions();
  // Windows reports whole milliseconds (TCP extended statistics): a LAN client reads 0.
  auto* lan = windows.add_sessions();
  lan->set_session_id("9007199254740993");
  lan->set_client_address("10.2.0.15");
  lan->set_min_rtt_us(0);
  auto* branch = windows.add_sessions();
  branch->set_session_id("9007199254741001");
  branch->set_client_address("10.8.0.80");
  branch->set_min_rtt_us(23000);
  // No client port from the cmdlets and two connections from this client: not measured.
  auto* shared = windows.add_sessions();
  shared->set_session_id("18446744073709551557");
  shared->set_client_address("10.2.0.77");

  HostEvaluation e = EvaluateHost(policy, windows, {}, kNow);
  const RuleResult* r = Find(e, "session-latency");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(r->message(), "1 of 3 sessions violate: lowest round-trip time <= 10.0 ms");
  std::vector<std::string> named;
  for (const auto& ev : r->evidence()) {
    if (!ev.session_id().empty()) named.push_back(ev.session_id() + " " + ev.observed());
  }
  EXPECT_EQ(named, std::vector<std::string>{"9007199254741001 23.0 ms"});

  // Sessions without a measurement (a failed tcp_estats read) leave the rule compliant, noted.
  for (auto& s : *windows.mutable_sessions()) s.clear_min_rtt_us();
  e = EvaluateHost(policy, windows, {}, kNow);
  r = Find(e, "session-latency");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status(), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  ASSERT_GT(r->evidence_size(), 0);
  EXPECT_EQ(r->evidence(0).note(), "3 sessions without a measured round-trip time");
}

TEST(EvaluateTest, ShareRulesYieldOneResultPerClassifiedShare) {
  Posture p = GoodWindows();
  auto* hr = p.add_shares();
  hr->set_name("HR");
  hr->set_path("E:\\HR");
  hr->set_encrypt_data(false);
  auto* bk = p.add_shares();
  bk->set_name("data");
  bk->set_path("E:\\Backup\\nightly");
  bk->set_encrypt_data(false);
  HostEvaluation e = EvaluateHost(Baseline(), p, {}, kNow);
  EXPECT_EQ(StatusOf(e, "classified-shares-encrypted", "Finance"),
            smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  const RuleResult* r = Find(e, "classified-shares-encrypted", "HR");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(r->classification(), "pii");
  EXPECT_EQ(r->evidence(0).share(), "HR");
  r = Find(e, "classified-shares-encrypted", "data");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->classification(), "backup");
  // Public and IPC$ are not classified shares: no result for them.
  EXPECT_EQ(Find(e, "classified-shares-encrypted", "Public"), nullptr);
  EXPECT_EQ(Find(e, "classified-shares-encrypted", "IPC$"), nullptr);
}

TEST(EvaluateTest, ClassificationPrecedence) {
  auto policy = ParsePolicy("t.yaml", R"(apiVersion: smbfleet/policy/v1
name: t
version: "1"
classification:
  classes: [general, pii, backup, confidential]
  default: general
  rules:
    - {name: by-name, classification: pii, shareNames: ["hr*"]}
    - {name: by-path, classification: backup, paths: ["*/backup/*"]}
    - {name: by-label, classification: confidential, hostLabels: {dept: "legal*"}}
  overrides:
    - {host: "fs0?", share: "hr-public", classification: general, name: hr-public-is-open}
rules:
  - {id: a, title: A, expect: {server.requireSigning: true}}
)");
  ASSERT_TRUE(policy.ok()) << policy.status();
  Posture p;
  p.mutable_host()->set_hostname("fs01");
  (*p.mutable_host()->mutable_labels())["dept"] = "legal-emea";
  struct {
    const char* name;
    const char* path;
    const char* cls;
    const char* rule;
  } cases[] = {
      {"HR-2024", "/srv/hr", "pii", "by-name"},
      {"hr-public", "/srv/hr-public", "general", "hr-public-is-open"},
      {"nightly", "/srv/backup/nightly", "backup", "by-path"},
      {"contracts", "/srv/contracts", "confidential", "by-label"},
  };
  for (const auto& c : cases) {
    auto* s = p.add_shares();
    s->set_name(c.name);
    s->set_path(c.path);
  }
  auto classes = ClassifyShares(*policy, p);
  ASSERT_EQ(classes.size(), 4u);
  for (size_t i = 0; i < classes.size(); ++i) {
    EXPECT_EQ(classes[i].classification(), cases[i].cls) << cases[i].name;
    EXPECT_EQ(classes[i].rule(), cases[i].rule) << cases[i].name;
  }
  // Without the label, "contracts" falls to the default.
  p.mutable_host()->mutable_labels()->clear();
  EXPECT_EQ(ClassifyShares(*policy, p)[3].rule(), "default");
}

smbfleet::v1::Waiver MakeWaiver(const std::string& id, const std::string& rule,
                                const std::string& host, absl::Time expires) {
  smbfleet::v1::Waiver w;
  w.set_id(id);
  w.set_rule_id(rule);
  w.set_host(host);
  w.set_justification("scanner firmware cannot sign until Q1");
  w.set_approved_by("ciso@example");
  w.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(expires));
  return w;
}

TEST(EvaluateTest, WaiversApplyUntilTheyExpire) {
  Posture p = GoodWindows();
  p.mutable_server()->set_require_signing(false);
  Policy policy = Baseline();
  std::vector<smbfleet::v1::Waiver> waivers = {
      MakeWaiver("W-1", "server-signing-required", "FS01", kNow + absl::Hours(24))};
  HostEvaluation e = EvaluateHost(policy, p, waivers, kNow);
  const RuleResult* r = Find(e, "server-signing-required");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status(), smbfleet::v1::COMPLIANCE_STATUS_WAIVED);
  EXPECT_EQ(r->unwaived_status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(r->waiver_id(), "W-1");
  EXPECT_EQ(e.waived(), 1u);

  // A day later the same waiver no longer applies.
  e = EvaluateHost(policy, p, waivers, kNow + absl::Hours(25));
  EXPECT_EQ(StatusOf(e, "server-signing-required"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);

  // Other host, other rule: no effect.
  waivers = {MakeWaiver("W-2", "server-signing-required", "fs02", kNow + absl::Hours(24)),
             MakeWaiver("W-3", "client-signing-required", "fs01", kNow + absl::Hours(24))};
  e = EvaluateHost(policy, p, waivers, kNow);
  EXPECT_EQ(StatusOf(e, "server-signing-required"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
}

TEST(EvaluateTest, LabelAndShareScopedWaivers) {
  Posture p = GoodWindows();
  (*p.mutable_host()->mutable_labels())["site"] = "plant-7";
  p.mutable_shares(0)->set_encrypt_data(false);  // Finance
  auto* legal = p.add_shares();
  legal->set_name("Legal");
  legal->set_encrypt_data(false);
  smbfleet::v1::Waiver by_share =
      MakeWaiver("W-S", "classified-shares-encrypted", "fs01", kNow + absl::Hours(1));
  by_share.set_share("finance");
  smbfleet::v1::Waiver by_label = MakeWaiver("W-L", "*", "", kNow + absl::Hours(1));
  by_label.set_label_key("site");
  by_label.set_label_value("plant-9");
  HostEvaluation e = EvaluateHost(Baseline(), p, {by_share, by_label}, kNow);
  EXPECT_EQ(StatusOf(e, "classified-shares-encrypted", "Finance"),
            smbfleet::v1::COMPLIANCE_STATUS_WAIVED);
  EXPECT_EQ(StatusOf(e, "classified-shares-encrypted", "Legal"),
            smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  by_label.set_label_value("plant-7");
  e = EvaluateHost(Baseline(), p, {by_label}, kNow);
  EXPECT_EQ(StatusOf(e, "classified-shares-encrypted", "Legal"),
            smbfleet::v1::COMPLIANCE_STATUS_WAIVED);
}

TEST(EvaluateTest, IncompleteWaiversNeverApply) {
  Posture p = GoodWindows();
  p.mutable_server()->set_require_signing(false);
  smbfleet::v1::Waiver w =
      MakeWaiver("W-1", "server-signing-required", "fs01", kNow + absl::Hours(1));
  w.clear_approved_by();
  EXPECT_FALSE(ValidateWaiver(w).ok());
  EXPECT_NE(ValidateWaiver(w).message().find("approvedBy"), std::string::npos);
  HostEvaluation e = EvaluateHost(Baseline(), p, {w}, kNow);
  EXPECT_EQ(StatusOf(e, "server-signing-required"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  smbfleet::v1::Waiver no_expiry = MakeWaiver("W-2", "*", "fs01", kNow);
  no_expiry.clear_expires_at();
  EXPECT_FALSE(ValidateWaiver(no_expiry).ok());
  EXPECT_FALSE(WaiverApplies(no_expiry, "server-signing-required", p, "", kNow));
}

TEST(EvaluateTest, WindowsBuildFromEitherField) {
  smbfleet::v1::HostInfo h;
  EXPECT_EQ(WindowsBuild(h), 0u);
  h.set_os_version("10.0.26100");
  EXPECT_EQ(WindowsBuild(h), 26100u);
  h.set_os_build("20348.2113");
  EXPECT_EQ(WindowsBuild(h), 20348u);
}

// GoodWindows behind a WAN link with a benchmarked CPU: a backup share (vm-disk benchmark,
// 2.4:1), a sampled share of logs (3.8:1) and a sampled share of video (1.02:1).
Posture WanWindows() {
  Posture p = GoodWindows();
  (*p.mutable_host()->mutable_labels())["link"] = "wan";
  *p.add_compression_benchmarks() =
      cost::CompressionRow(smbfleet::v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 2.4, 300e6, 1000e6);
  auto* backup = p.add_shares();
  backup->set_name("VMBackup");
  backup->set_path("E:\\Backups\\VM");
  backup->set_compress_data(false);
  cost::AddSampledShare(&p, "Logs", false, 3.8);
  cost::AddSampledShare(&p, "Video", true, 1.02);
  return p;
}

TEST(EvaluateTest, CompressionIsAdvisedWhereDataCompressesAndAgainstWhereItDoesNot) {
  Policy policy = Baseline();
  HostEvaluation e = EvaluateHost(policy, WanWindows(), {}, kNow);
  EXPECT_EQ(StatusOf(e, "wan-compression", "VMBackup"),
            smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(StatusOf(e, "wan-compression", "Logs"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  // Unknown ratios (Finance, Public: not sampled, not backup) and incompressible video are not
  // selected.
  EXPECT_EQ(Find(e, "wan-compression", "Finance"), nullptr);
  EXPECT_EQ(Find(e, "wan-compression", "Video"), nullptr);
  EXPECT_EQ(StatusOf(e, "incompressible-share-compression", "Video"),
            smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(Find(e, "incompressible-share-compression", "Logs"), nullptr);
  EXPECT_EQ(StatusOf(e, "busy-cpu-compression"), smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);

  // A busy CPU: no advice to compress, and server-wide compression is advised against.
  Posture busy = WanWindows();
  (*busy.mutable_host()->mutable_labels())["cpu"] = "busy";
  busy.mutable_server()->set_request_compression(true);
  HostEvaluation b = EvaluateHost(policy, busy, {}, kNow);
  EXPECT_EQ(StatusOf(b, "wan-compression"), smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);
  EXPECT_EQ(StatusOf(b, "busy-cpu-compression"), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);

  // Not behind a WAN link: nothing to advise for compressible data.
  Posture lan = WanWindows();
  lan.mutable_host()->mutable_labels()->erase("link");
  HostEvaluation l = EvaluateHost(policy, lan, {}, kNow);
  EXPECT_EQ(StatusOf(l, "wan-compression"), smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);
}

// EvaluateHostInto reuses the messages of the evaluation it is given: whatever the previous
// host left there (more results, evidence with session fields, a waiver, a message, labels,
// a collection time) must not leak into the next host's evaluation.
TEST(EvaluateTest, ReusedEvaluationEqualsAFreshOne) {
  Policy policy = Baseline();
  std::vector<Posture> hosts;
  hosts.push_back(GoodWindows());
  hosts.push_back(GoodWindows("26100"));
  {
    Posture p = GoodWindows();  // failing, with violating sessions, labels and a waiver
    p.mutable_host()->set_hostname("fs02");
    (*p.mutable_host()->mutable_labels())["link"] = "wan";
    p.mutable_server()->set_require_signing(false);
    p.mutable_server()->set_smb1_enabled(true);
    *p.mutable_collected_at() = TimeUtil::SecondsToTimestamp(1795990000);
    for (int i = 0; i < 14; ++i) {
      auto* s = p.add_sessions();
      s->set_session_id(absl::StrCat(100 + i));
      s->set_client_address(absl::StrCat("10.0.0.", i));
      s->set_client_name(absl::StrCat("PC", i));
      s->set_user("CORP\\someone");
      s->set_dialect(i % 2 == 0 ? smbfleet::v1::DIALECT_SMB_2_1 : smbfleet::v1::DIALECT_SMB_3_0);
      s->set_anonymous(i == 3);
    }
    p.mutable_server()->add_null_session_pipes("LSARPC");
    p.mutable_client()->mutable_hardened_paths(0)->set_require_integrity(false);
    auto* hr = p.add_shares();
    hr->set_name("HR");
    hr->set_path("E:\\HR");
    hosts.push_back(p);
  }
  {
    Posture p = GoodWindows();  // probe failures: ERROR results with notes
    p.mutable_host()->set_hostname("fs03");
    p.mutable_client()->Clear();
    p.clear_shares();
    auto* err = p.add_probe_errors();
    err->set_probe("Get-SmbClientConfiguration");
    err->set_code("TIMEOUT");
    err = p.add_probe_errors();
    err->set_probe("Get-SmbShare");
    err->set_message("access denied");
    hosts.push_back(p);
  }
  {
    Posture p;  // Samba, few fields
    p.mutable_host()->set_hostname("nas1");
    p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
    p.mutable_server()->set_min_dialect(smbfleet::v1::DIALECT_SMB_2_0_2);
    p.mutable_server()->set_guest_access_allowed(true);
    auto* s = p.add_sessions();
    s->set_session_id("1");
    s->set_guest(true);
    hosts.push_back(p);
  }
  {
    Posture p = GoodWindows();  // no build number
    p.mutable_host()->set_hostname("fs04");
    p.mutable_host()->clear_os_version();
    hosts.push_back(p);
  }
  std::vector<smbfleet::v1::Waiver> waivers = {
      MakeWaiver("W-1", "server-signing-required", "fs02", kNow + absl::Hours(24))};

  std::vector<int> order;
  order.reserve(hosts.size());
  for (int i = 0; i < static_cast<int>(hosts.size()); ++i) order.push_back(i);
  std::vector<int> sequence = order;  // forwards, backwards, then each after every other
  sequence.insert(sequence.end(), order.rbegin(), order.rend());
  for (int a : order) {
    for (int b : order) {
      sequence.push_back(a);
      sequence.push_back(b);
    }
  }
  HostEvaluation reused;
  for (int i : sequence) {
    EvaluateHostInto(policy, hosts[static_cast<size_t>(i)], waivers, kNow, &reused);
    HostEvaluation fresh = EvaluateHost(policy, hosts[static_cast<size_t>(i)], waivers, kNow);
    std::string diff;
    google::protobuf::util::MessageDifferencer d;
    d.ReportDifferencesToString(&diff);
    EXPECT_TRUE(d.Compare(fresh, reused))
        << "host " << hosts[static_cast<size_t>(i)].host().hostname() << ": " << diff;
  }
}

}  // namespace
}  // namespace smbfleet::policy

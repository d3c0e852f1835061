// The baseline policy over the real-shaped Windows capture folders (tests/fixtures/windows),
// read through the agent's own capture source: what an operator gets from
// `smbfleet-agent collect --once --source=windows-capture:DIR` piped into `policy eval`.

#include "agent/platform/windows/windows_source.h"
#include "gtest/gtest.h"
#include "policy/evaluate.h"
#include "policy/plan.h"
#include "tests/policy/baseline_for_test.h"

namespace smbfleet::policy {
namespace {

using smbfleet::v1::ComplianceStatus;
using smbfleet::v1::HostEvaluation;
using smbfleet::v1::Posture;

Posture Capture(const std::string& name) {
  auto source = smbfleet::agent::windows::NewWindowsCaptureSource(
      std::string(SMBFLEET_SOURCE_DIR) + "/tests/fixtures/windows/" + name);
  auto p = source->Collect();
  EXPECT_TRUE(p.ok()) << name << ": " << p.status();
  return p.ok() ? *p : Posture();
}

ComplianceStatus StatusOf(const HostEvaluation& e, const std::string& rule,
                          const std::string& share = "") {
  const auto* r = FindResult(e, rule, share);
  return r == nullptr ? smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED : r->status();
}

struct Expect {
  const char* rule;
  const char* share;
  ComplianceStatus status;
};

struct Case {
  const char* capture;
  std::vector<Expect> expect;
};

TEST(WindowsCapturesTest, BaselineJudgesEachBuild) {
  const Case cases[] = {
      {"ws2016",
       {{"smb1-server-disabled", "", kBad},
        {"server-signing-required", "", kBad},
        {"client-insecure-guest-logons-disabled", "", kBad},
        {"spn-name-hardening", "", kBad},
        {"min-dialect-3-1-1", "", kNa},
        {"audit-client-no-signing", "", kNa},
        {"no-sessions-below-3-0", "", kOk},
        {"server-guest-access-disabled", "", kNa}}},
      {"ws2019",
       {{"smb1-server-disabled", "", kBad},
        {"classified-shares-encrypted", "Finance", kOk},
        {"classified-shares-reject-unencrypted", "Finance", kOk},
        {"spn-name-hardening", "", kOk},
        {"no-sessions-below-3-0", "", kBad}}},
      {"ws2022",
       {{"smb1-server-disabled", "", kOk},
        {"server-signing-required", "", kOk},
        {"client-signing-required", "", kBad},
        {"classified-shares-encrypted", "HR", kOk},
        {"no-sessions-below-3-0", "", kBad},
        {"min-dialect-3-1-1", "", kNa}}},
      {"ws2025",
       {{"min-dialect-3-1-1", "", kOk},
        {"server-signing-required", "", kBad},
        {"client-signing-required", "", kOk},
        {"audit-client-no-signing", "", kOk},
        {"no-sessions-below-3-0", "", kNa},
        {"spn-name-hardening", "", kOk}}},
  };
  Policy policy = LoadBaseline();
  for (const Case& c : cases) {
    Posture p = Capture(c.capture);
    HostEvaluation e = EvaluateHost(policy, p, {}, kNow);
    EXPECT_EQ(e.policy_version(), policy.version);
    for (const Expect& x : c.expect) {
      EXPECT_EQ(StatusOf(e, x.rule, x.share), x.status)
          << c.capture << " " << x.rule << " [" << x.share << "]: "
          << (FindResult(e, x.rule, x.share) ? FindResult(e, x.rule, x.share)->message()
                                             : "no result");
    }
    // Every share gets exactly one classification, hostile names included.
    EXPECT_EQ(e.classifications_size(), p.shares_size()) << c.capture;
  }
}

// The CIS items the cmdlets and the registry capture files feed, per build: each value as the
// capture has it, a registry file the build's capture lacks (ws2016, ws2019) stays UNKNOWN, and
// the 26100 items do not apply before Windows Server 2025.
TEST(WindowsCapturesTest, CisItemsOnEachBuild) {
  const Case cases[] = {
      {"ws2016",
       {{"client-signing-enabled", "", kOk},
        {"server-signing-enabled", "", kBad},
        {"server-idle-session-timeout", "", kOk},
        {"server-forced-logoff", "", kOk},
        {"null-session-pipes-member-server", "", kOk},
        {"null-session-pipes-domain-controller", "", kNa},
        {"restrict-anonymous-access", "", kUnknown},
        {"client-plaintext-password-disabled", "", kUnknown},
        {"hardened-unc-paths", "", kUnknown},
        {"auth-rate-limiter-enabled", "", kNa},
        {"client-min-dialect-3-1-1", "", kNa}}},
      {"ws2019",
       {{"server-idle-session-timeout", "", kBad},
        {"server-forced-logoff", "", kBad},
        {"null-session-pipes-member-server", "", kBad}}},
      {"ws2022",
       {{"client-plaintext-password-disabled", "", kBad},
        {"restrict-anonymous-access", "", kBad},
        {"hardened-unc-paths", "", kOk},
        {"hardened-unc-paths-privacy", "", kNa},
        {"client-encryption-required", "", kNa}}},
      {"ws2025",
       {{"client-plaintext-password-disabled", "", kOk},
        {"restrict-anonymous-access", "", kOk},
        {"hardened-unc-paths", "", kNa},
        {"hardened-unc-paths-privacy", "", kOk},
        {"auth-rate-limiter-enabled", "", kOk},
        {"auth-rate-limiter-delay", "", kOk},
        {"client-audit-insecure-guest-logon", "", kOk},
        {"client-audit-server-no-encryption", "", kBad},
        {"client-audit-server-no-signing", "", kOk},
        {"client-min-dialect-3-1-1", "", kBad},
        {"client-encryption-required", "", kBad}}},
  };
  Policy policy = LoadBaseline();
  for (const Case& c : cases) {
    HostEvaluation e = EvaluateHost(policy, Capture(c.capture), {}, kNow);
    for (const Expect& x : c.expect) {
      const auto* r = FindResult(e, x.rule, x.share);
      ASSERT_NE(r, nullptr) << c.capture << " " << x.rule;
      EXPECT_EQ(r->status(), x.status) << c.capture << " " << x.rule << ": " << r->message();
    }
  }
  // The evidence names the pipes a member server should not open to anonymous users.
  HostEvaluation ws2019 = EvaluateHost(policy, Capture("ws2019"), {}, kNow);
  const auto* pipes = FindResult(ws2019, "null-session-pipes-member-server");
  ASSERT_NE(pipes, nullptr);
  ASSERT_GT(pipes->evidence_size(), 0);
  EXPECT_EQ(pipes->evidence(0).observed(), "[netlogon, samr, lsarpc]");
}

TEST(WindowsCapturesTest, Ws2019PlanNamesTheSmb1Scanner) {
  Policy policy = LoadBaseline();
  Posture p = Capture("ws2019");
  HostEvaluation e = EvaluateHost(policy, p, {}, kNow);
  const auto* legacy = FindResult(e, "no-sessions-below-3-0");
  ASSERT_NE(legacy, nullptr);
  bool scanner = false;
  for (const auto& ev : legacy->evidence()) {
    if (ev.client_address() == "10.1.9.7") {
      scanner = true;
      EXPECT_EQ(ev.observed(), "SMB1");
      EXPECT_EQ(ev.user(), "CORP\\scanner");
    }
  }
  EXPECT_TRUE(scanner) << legacy->DebugString();

  auto plan = PlanRemediation(policy, p, e, {}, kNow);
  bool smb1_off = false;
  for (const auto& s : plan.steps()) {
    if (s.setting() == "server.smb1Enabled") {
      smb1_off = true;
      EXPECT_EQ(s.expected_current(), "true");
      EXPECT_EQ(s.value(), "false");
      EXPECT_EQ(s.rollback_value(), "true");
    }
  }
  EXPECT_TRUE(smb1_off);
  bool named = false;
  for (const auto& c : plan.impact().clients()) {
    if (c.setting() == "server.smb1Enabled" && c.client_address() == "10.1.9.7") named = true;
  }
  EXPECT_TRUE(named) << plan.impact().DebugString();
}

TEST(WindowsCapturesTest, Ws2022HostileShareNameIsJustAName) {
  Policy policy = LoadBaseline();
  Posture p = Capture("ws2022");
  HostEvaluation e = EvaluateHost(policy, p, {}, kNow);
  bool found = false;
  for (const auto& c : e.classifications()) {
    if (c.share().find("Remove-Item") != std::string::npos) {
      found = true;
      EXPECT_EQ(c.classification(), "general");
    }
  }
  EXPECT_TRUE(found);
  const auto* legacy = FindResult(e, "no-sessions-below-3-0");
  ASSERT_NE(legacy, nullptr);
  bool dave = false;
  for (const auto& ev : legacy->evidence()) dave = dave || ev.user() == "CORP\\dave";
  EXPECT_TRUE(dave) << legacy->DebugString();
}

}  // namespace
}  // namespace smbfleet::policy

// The baseline on effective values that a registry-only check gets wrong, built from public
// Get-Smb*Configuration outputs (tests/fixtures/cis/), and on values nobody reported: those are
// UNKNOWN, never NON_COMPLIANT.

#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "policy/evaluate.h"
#include "tests/policy/baseline_for_test.h"

namespace smbfleet::policy {
namespace {

using smbfleet::v1::ComplianceStatus;
using smbfleet::v1::HostEvaluation;
using smbfleet::v1::Posture;

// "Name : Value" lines of a Format-List output (comments and the command line skipped).
std::map<std::string, std::string> FormatList(const std::string& file) {
  std::string text = ReadSourceFile("tests/fixtures/cis/" + file);
  EXPECT_FALSE(text.empty()) << file;
  std::map<std::string, std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    size_t colon = line.find(" :");
    if (absl::StartsWith(line, "#") || colon == absl::string_view::npos) continue;
    out[std::string(absl::StripAsciiWhitespace(line.substr(0, colon)))] =
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 2)));
  }
  return out;
}

// The properties the baseline reads, mapped as the agent maps them; a property the output does
// not show stays unset.
class Props {
 public:
  explicit Props(std::map<std::string, std::string> p) : p_(std::move(p)) {}
  template <typename Set>
  void Bool(const char* name, Set set) const {
    auto it = p_.find(name);
    if (it == p_.end()) return;
    EXPECT_TRUE(it->second == "True" || it->second == "False") << name << ": " << it->second;
    set(it->second == "True");
  }
  template <typename Set>
  void Uint(const char* name, Set set) const {
    auto it = p_.find(name);
    uint32_t v = 0;
    if (it != p_.end() && absl::SimpleAtoi(it->second, &v)) set(v);
  }
  // A comma-separated list; an empty value is the empty list (the setting was read).
  template <typename Add>
  bool List(const char* name, Add add) const {
    auto it = p_.find(name);
    if (it == p_.end()) return false;
    for (absl::string_view item : absl::StrSplit(it->second, ',', absl::SkipWhitespace())) {
      add(std::string(absl::StripAsciiWhitespace(item)));
    }
    return true;
  }
  // Smb2DialectMin: 0 = None, no minimum, i.e. SMB 2.0.2; 785 = 3.1.1.
  void DialectMin(smbfleet::v1::ClientConfig* c) const {
    Uint("Smb2DialectMin", [&](uint32_t v) {
      if (v == 0 || v == 514) c->set_min_dialect(smbfleet::v1::DIALECT_SMB_2_0_2);
      if (v == 785) c->set_min_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
    });
  }

 private:
  std::map<std::string, std::string> p_;
};

Posture WindowsHost(const std::string& name, const std::string& version) {
  Posture p;
  p.mutable_host()->set_hostname(name);
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_WINDOWS);
  p.mutable_host()->set_os_version(version);
  return p;
}

void ReadClient(const std::string& file, Posture* p) {
  Props props(FormatList(file));
  auto* c = p->mutable_client();
  props.Bool("RequireSecuritySignature", [&](bool v) { c->set_require_signing(v); });
  props.Bool("EnableSecuritySignature", [&](bool v) { c->set_enable_signing(v); });
  props.Bool("EnableInsecureGuestLogons", [&](bool v) { c->set_enable_insecure_guest_logons(v); });
  props.Bool("RequireEncryption", [&](bool v) { c->set_require_encryption(v); });
  props.DialectMin(c);
}

void ReadServer(const std::string& file, Posture* p) {
  Props props(FormatList(file));
  auto* s = p->mutable_server();
  props.Bool("RequireSecuritySignature", [&](bool v) { s->set_require_signing(v); });
  props.Bool("EnableSecuritySignature", [&](bool v) { s->set_enable_signing(v); });
  props.Bool("EnableSMB1Protocol", [&](bool v) { s->set_smb1_enabled(v); });
  props.Bool("EnableForcedLogoff", [&](bool v) { s->set_enable_forced_logoff(v); });
  props.Bool("EnableAuthRateLimiter", [&](bool v) { s->set_enable_auth_rate_limiter(v); });
  props.Uint("AutoDisconnectTimeout",
             [&](uint32_t v) { s->set_auto_disconnect_timeout_minutes(v); });
  props.Uint("SmbServerNameHardeningLevel", [&](uint32_t v) { s->set_name_hardening_level(v); });
  props.Uint("InvalidAuthenticationDelayTimeInMs",
             [&](uint32_t v) { s->set_invalid_authentication_delay_ms(v); });
  if (props.List("NullSessionPipes", [&](const std::string& v) { s->add_null_session_pipes(v); })) {
    s->set_null_session_pipes_known(true);
  }
  if (props.List("NullSessionShares",
                 [&](const std::string& v) { s->add_null_session_shares(v); })) {
    s->set_null_session_shares_known(true);
  }
}

struct Want {
  const char* rule;
  ComplianceStatus status;
  const char* observed;  // the first evidence's observed value; nullptr: not checked
};

void ExpectResults(const HostEvaluation& e, const std::vector<Want>& want) {
  for (const Want& w : want) {
    const auto* r = FindResult(e, w.rule);
    ASSERT_NE(r, nullptr) << w.rule;
    EXPECT_EQ(r->status(), w.status) << w.rule << ": " << r->message();
    if (w.observed != nullptr) {
      ASSERT_GT(r->evidence_size(), 0) << w.rule;
      EXPECT_EQ(r->evidence(0).observed(), w.observed) << w.rule;
    }
  }
}

// Windows 11 24H2 and later require client signing with no registry value: a registry check of
// W\RequireSecuritySignature fails the host, the effective value passes it.
TEST(CisHiddenValuesTest, Windows26200ClientRequiresSigningByDefault) {
  Posture p = WindowsHost("pc01", "10.0.26200");
  ReadClient("win11-26200.Get-SmbClientConfiguration.txt", &p);
  HostEvaluation e = EvaluateHost(LoadBaseline(), p, {}, kNow);
  ExpectResults(e, {
                       {"client-signing-required", kOk, "true"},                 // 2.3.8.1
                       {"client-signing-enabled", kOk, "true"},                  // 2.3.8.2
                       {"client-insecure-guest-logons-disabled", kOk, "false"},  // 18.6.8.5
                       // Smb2DialectMin 0 = no minimum: SMB 2.0.2 is still accepted.
                       {"client-min-dialect-3-1-1", kBad, "SMB_2_0_2"},  // 18.6.8.7
                       // Not in the output: unknown, not a failure.
                       {"client-encryption-required", kUnknown, "(unset)"},  // 18.6.8.8
                       {"client-plaintext-password-disabled", kUnknown, "(unset)"},
                       {"client-audit-server-no-signing", kUnknown, "(unset)"},
                       {"hardened-unc-paths-privacy", kUnknown, "(unset)"},
                       {"hardened-unc-paths", kNa, nullptr},  // the 2022 item, below 26100
                   });
}

// Windows Server 2025's documented defaults: the server does not require signing (only
// outbound signing became the default), idle sessions are suspended after 15 minutes, forced
// logoff is on and no pipe or share is open to anonymous users. The client output shows no
// signing property, so the client signing rules are UNKNOWN where a registry check would fail.
TEST(CisHiddenValuesTest, WindowsServer2025DocumentedDefaults) {
  Posture p = WindowsHost("fs25", "10.0.26100");
  ReadServer("ws2025.Get-SmbServerConfiguration.txt", &p);
  ReadClient("ws2025.Get-SmbClientConfiguration.txt", &p);
  HostEvaluation e = EvaluateHost(LoadBaseline(), p, {}, kNow);
  ExpectResults(e, {
                       {"server-signing-required", kBad, "false"},       // 2.3.9.2
                       {"server-signing-enabled", kBad, "false"},        // 2.3.9.3
                       {"server-idle-session-timeout", kOk, "15"},       // 2.3.9.1
                       {"server-forced-logoff", kOk, "true"},            // 2.3.9.4
                       {"spn-name-hardening", kBad, "0"},                // 2.3.9.5
                       {"null-session-pipes-member-server", kOk, "[]"},  // 2.3.10.7
                       {"null-session-pipes-domain-controller", kNa, nullptr},
                       {"no-null-session-shares", kOk, "[]"},  // 2.3.10.12
                       {"smb1-server-disabled", kOk, "false"},
                       // Shown by the cmdlet on later builds only: unknown here.
                       {"auth-rate-limiter-enabled", kUnknown, "(unset)"},  // 18.6.8.4
                       {"auth-rate-limiter-delay", kUnknown, "(unset)"},    // 18.6.7.6
                       {"restrict-anonymous-access", kUnknown, "(unset)"},  // registry only
                       {"client-signing-required", kUnknown, "(unset)"},
                       {"client-signing-enabled", kUnknown, "(unset)"},
                   });
}

// A host that reported nothing but its build: no rule fails, and every rule that expects a
// setting is UNKNOWN or does not apply (rules on sessions alone see no violating session).
TEST(CisHiddenValuesTest, NothingReportedIsUnknownNeverNonCompliant) {
  Policy policy = LoadBaseline();
  std::map<std::string, bool> expects_setting;
  for (const Rule& r : policy.rules) expects_setting[r.id] = !r.expect.empty();
  for (const char* version : {"10.0.14393", "10.0.17763", "10.0.20348", "10.0.26100"}) {
    Posture p = WindowsHost("bare", version);
    HostEvaluation e = EvaluateHost(policy, p, {}, kNow);
    EXPECT_EQ(e.non_compliant(), 0u) << version;
    EXPECT_GT(e.unknown(), 10u) << version;
    for (const auto& r : e.results()) {
      if (!expects_setting[r.rule_id()]) continue;
      EXPECT_TRUE(r.status() == kUnknown || r.status() == kNa)
          << version << " " << r.rule_id() << ": " << r.message();
    }
  }
}

// Hardened UNC Paths: an unread list is UNKNOWN; a read list without the entries, or with
// entries that lack a requirement, fails and says what the entry requires.
TEST(CisHiddenValuesTest, HardenedUncPaths) {
  Policy policy = LoadBaseline();
  Posture p = WindowsHost("fs22", "10.0.20348");
  EXPECT_EQ(FindResult(EvaluateHost(policy, p, {}, kNow), "hardened-unc-paths")->status(),
            kUnknown);

  p.mutable_client()->set_hardened_paths_known(true);
  ExpectResults(EvaluateHost(policy, p, {}, kNow), {{"hardened-unc-paths", kBad, "[]"}});

  for (const char* path : {"\\\\*\\NETLOGON", "\\\\*\\sysvol"}) {
    auto* h = p.mutable_client()->add_hardened_paths();
    h->set_path(path);
    h->set_require_mutual_authentication(true);
    h->set_require_integrity(true);
    h->set_value("RequireMutualAuthentication=1, RequireIntegrity=1");
  }
  ExpectResults(EvaluateHost(policy, p, {}, kNow),
                {{"hardened-unc-paths", kOk, "[mutualAuthentication, integrity]"}});

  // The same entries on Windows Server 2025: CIS there also asks for privacy.
  p.mutable_host()->set_os_version("10.0.26100");
  ExpectResults(EvaluateHost(policy, p, {}, kNow),
                {{"hardened-unc-paths", kNa, nullptr},
                 {"hardened-unc-paths-privacy", kBad, "[mutualAuthentication, integrity]"}});
  for (auto& h : *p.mutable_client()->mutable_hardened_paths()) h.set_require_privacy(true);
  ExpectResults(
      EvaluateHost(policy, p, {}, kNow),
      {{"hardened-unc-paths-privacy", kOk, "[mutualAuthentication, integrity, privacy]"}});

  // A path that is not \\*\NETLOGON (one server only) does not count.
  p.mutable_client()->mutable_hardened_paths(0)->set_path("\\\\dc01\\NETLOGON");
  ExpectResults(EvaluateHost(policy, p, {}, kNow), {{"hardened-unc-paths-privacy", kBad, "[]"}});
}

// Anonymous pipes: the member-server list for every Windows host, the domain-controller list for
// hosts labelled role=domain-controller (the posture does not know the role).
TEST(CisHiddenValuesTest, NullSessionPipesByRole) {
  Policy policy = LoadBaseline();
  Posture p = WindowsHost("fs22", "10.0.20348");
  EXPECT_EQ(
      FindResult(EvaluateHost(policy, p, {}, kNow), "null-session-pipes-member-server")->status(),
      kUnknown);
  auto* s = p.mutable_server();
  s->set_null_session_pipes_known(true);
  s->add_null_session_pipes("browser");  // names compare without regard to case
  ExpectResults(EvaluateHost(policy, p, {}, kNow),
                {{"null-session-pipes-member-server", kOk, "[browser]"},
                 {"null-session-pipes-domain-controller", kNa, nullptr}});
  s->add_null_session_pipes("LSARPC");
  ExpectResults(EvaluateHost(policy, p, {}, kNow),
                {{"null-session-pipes-member-server", kBad, "[browser, LSARPC]"}});
  (*p.mutable_host()->mutable_labels())["role"] = "domain-controller";
  ExpectResults(EvaluateHost(policy, p, {}, kNow),
                {{"null-session-pipes-member-server", kNa, nullptr},
                 {"spn-name-hardening", kNa, nullptr},  // 2.3.9.5 is a member-server item
                 {"null-session-pipes-domain-controller", kOk, "[browser, LSARPC]"}});
  s->add_null_session_pipes("COMNAP");
  ExpectResults(EvaluateHost(policy, p, {}, kNow),
                {{"null-session-pipes-domain-controller", kBad, "[browser, LSARPC, COMNAP]"}});
}

}  // namespace
}  // namespace smbfleet::policy

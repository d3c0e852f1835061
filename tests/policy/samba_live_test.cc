// The baseline against a real smbd on 127.0.0.1 with real smbclient sessions: the evaluation
// finds the unencrypted confidential share, the plan predicts which live client encryption
// would refuse, the Samba applier applies the plan's step, and a real client then proves the
// prediction: the SMB 2.1 client is refused, the SMB 3.1.1 client is not.

#include "absl/strings/match.h"
#include "agent/platform/samba/samba_applier.h"
#include "agent/platform/samba/samba_source.h"
#include "gtest/gtest.h"
#include "policy/evaluate.h"
#include "policy/plan.h"
#include "tests/policy/baseline_for_test.h"
#include "tests/samba/samba_lab.h"

namespace smbfleet::testing {
namespace {

using policy::FindResult;
using policy::Policy;
using smbfleet::v1::HostEvaluation;

TEST(SambaLiveTest, PlanPredictsTheClientThatEncryptionRefuses) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  // An old client on the confidential share, a modern one on the other.
  ASSERT_TRUE((*lab)->Hold("old", "finance", {"-mSMB2_10"}).ok());
  ASSERT_TRUE((*lab)->Hold("new", "demo").ok());

  auto source = agent::NewSambaSource((*lab)->Options(), (*lab)->runner());
  auto posture = source->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  ASSERT_EQ(posture->sessions_size(), 2) << posture->DebugString();
  posture->mutable_host()->set_hostname("samba-lab");

  Policy policy = policy::LoadBaseline();
  absl::Time now = absl::Now();
  HostEvaluation e = policy::EvaluateHost(policy, *posture, {}, now);
  const auto* enc = FindResult(e, "classified-shares-encrypted", "finance");
  ASSERT_NE(enc, nullptr);
  EXPECT_EQ(enc->status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT) << enc->DebugString();
  EXPECT_EQ(enc->classification(), "confidential");
  EXPECT_EQ(FindResult(e, "classified-shares-encrypted", "demo"), nullptr);  // general share
  const auto* min = FindResult(e, "min-dialect-3-1-1");
  ASSERT_NE(min, nullptr);
  EXPECT_EQ(min->status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
  EXPECT_EQ(FindResult(e, "spn-name-hardening")->status(),
            smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE);
  // Loopback: both sessions have a measured lowest round-trip time, far below 10 ms.
  const auto* latency = FindResult(e, "session-latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_EQ(latency->status(), smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT) << latency->DebugString();
  for (const auto& s : posture->sessions()) EXPECT_TRUE(s.has_min_rtt_us()) << s.DebugString();
  // The CIS items Samba has an equivalent for, on the lab's real testparm output (defaults:
  // client min protocol = SMB2_02, client smb encrypt = default, client/server signing =
  // default, client plaintext auth = No, restrict anonymous = 0, deadtime = 10080); the
  // Windows-only ones do not apply.
  struct {
    const char* rule;
    smbfleet::v1::ComplianceStatus status;
  } const cis[] = {
      {"smb1-client-disabled", policy::kOk},
      {"client-signing-enabled", policy::kOk},
      {"server-signing-enabled", policy::kOk},
      {"client-min-dialect-3-1-1", policy::kBad},
      {"client-encryption-required", policy::kBad},
      {"client-plaintext-password-disabled", policy::kOk},
      {"restrict-anonymous-access", policy::kBad},
      {"server-idle-session-timeout", policy::kBad},
      {"server-forced-logoff", policy::kNa},
      {"null-session-pipes-member-server", policy::kNa},
      {"hardened-unc-paths", policy::kNa},
      {"auth-rate-limiter-enabled", policy::kNa},
      {"client-audit-server-no-signing", policy::kNa},
  };
  for (const auto& c : cis) {
    const auto* r = FindResult(e, c.rule);
    ASSERT_NE(r, nullptr) << c.rule;
    EXPECT_EQ(r->status(), c.status) << c.rule << ": " << r->DebugString();
  }

  auto plan = policy::PlanRemediation(policy, *posture, e, {}, now);
  const smbfleet::v1::PlanStep* step = nullptr;
  for (const auto& s : plan.steps()) {
    if (s.setting() == "share.encryptData" && s.share() == "finance") step = &s;
    EXPECT_NE(s.setting(), "server.rejectUnencryptedAccess");  // Windows only
  }
  ASSERT_NE(step, nullptr) << plan.DebugString();
  EXPECT_EQ(step->expected_current(), "false");
  std::vector<const smbfleet::v1::AffectedClient*> refused;
  for (const auto& c : plan.impact().clients()) {
    if (c.setting() == "share.encryptData[finance]") refused.push_back(&c);
  }
  ASSERT_EQ(refused.size(), 1u) << plan.impact().DebugString();
  EXPECT_EQ(refused[0]->client_address(), "127.0.0.1");
  EXPECT_EQ(refused[0]->dialect(), smbfleet::v1::DIALECT_SMB_2_1);
  EXPECT_EQ(refused[0]->source(), smbfleet::v1::IMPACT_SOURCE_SESSION);
  EXPECT_FALSE(refused[0]->user().empty());

  // Apply the planned step as the agent would.
  agent::samba::SambaApplier applier({(*lab)->Options(), (*lab)->managed_dir()}, (*lab)->runner());
  smbfleet::v1::SettingChange change;
  change.set_setting(step->setting());
  change.set_share(step->share());
  change.set_expected_current(step->expected_current());
  change.set_value(step->value());
  change.set_rollback_value(step->rollback_value());
  auto applied = applier.Apply({change});
  ASSERT_TRUE(applied.ok()) << applied.status();

  // The prediction holds: a new SMB 2.1 client is refused on finance, SMB 3.1.1 is not.
  auto old_client = (*lab)->Connect("finance", {"-mSMB2_10"});
  ASSERT_TRUE(old_client.ok()) << old_client.status();
  EXPECT_NE(old_client->exit_code, 0);
  EXPECT_TRUE(absl::StrContains(old_client->stdout_data + old_client->stderr_data,
                                "NT_STATUS_ACCESS_DENIED"))
      << old_client->stdout_data << old_client->stderr_data;
  auto new_client = (*lab)->Connect("finance");
  ASSERT_TRUE(new_client.ok()) << new_client.status();
  EXPECT_EQ(new_client->exit_code, 0) << new_client->stdout_data << new_client->stderr_data;

  // And the policy now sees the share encrypted with unencrypted access rejected.
  auto after = source->Collect();
  ASSERT_TRUE(after.ok()) << after.status();
  after->mutable_host()->set_hostname("samba-lab");
  HostEvaluation e2 = policy::EvaluateHost(policy, *after, {}, now);
  EXPECT_EQ(FindResult(e2, "classified-shares-encrypted", "finance")->status(),
            smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
  EXPECT_EQ(FindResult(e2, "classified-shares-reject-unencrypted", "finance")->status(),
            smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT);
}

}  // namespace
}  // namespace smbfleet::testing

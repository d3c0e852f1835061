// A failed Windows probe reaches policy as the sections it leaves unknown: the rules reading
// them are ERROR with a note, whatever the probe is called.

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/platform/windows/testing/fake_powershell_runner.h"
#include "agent/platform/windows/windows_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/evaluate.h"
#include "policy/policy.h"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;
using ::testing::ElementsAre;

policy::Policy Baseline() {
  std::ifstream in(std::string(SMBFLEET_SOURCE_DIR) + "/policy/policies/baseline.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  auto p = policy::ParsePolicy("baseline.yaml", ss.str());
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

v1::ComplianceStatus StatusOf(const v1::HostEvaluation& e, const std::string& rule) {
  for (const auto& r : e.results()) {
    if (r.rule_id() == rule) return r.status();
  }
  return v1::COMPLIANCE_STATUS_UNSPECIFIED;
}

TEST(ProbeSectionsTest, FailedClientProbeMakesClientRulesErrorByItsSection) {
  testing::FakePowerShellRunner runner(
      absl::StrCat(SMBFLEET_SOURCE_DIR, "/tests/fixtures/windows/ws2022"));
  runner.SetError("Get-SmbClientConfiguration", absl::DeadlineExceededError("no output after 60s"));
  auto posture = NewWindowsLiveSource({}, &runner)->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  ASSERT_EQ(posture->probe_errors_size(), 1);
  v1::ProbeError* error = posture->mutable_probe_errors(0);
  EXPECT_EQ(error->code(), "TIMEOUT");
  EXPECT_THAT(error->sections(), ElementsAre(v1::POSTURE_SECTION_CLIENT));

  const policy::Policy baseline = Baseline();
  const absl::Time now = absl::FromUnixSeconds(1796000000);
  auto status = [&] {
    return StatusOf(policy::EvaluateHost(baseline, *posture, {}, now), "client-signing-required");
  };
  EXPECT_EQ(status(), v1::COMPLIANCE_STATUS_ERROR);
  // The section decides, not the name.
  error->set_probe("probe-7");
  EXPECT_EQ(status(), v1::COMPLIANCE_STATUS_ERROR);
  error->clear_sections();
  EXPECT_NE(status(), v1::COMPLIANCE_STATUS_ERROR);
}

}  // namespace
}  // namespace smbfleet::agent::windows

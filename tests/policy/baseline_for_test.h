#ifndef SMBFLEET_TESTS_POLICY_BASELINE_FOR_TEST_H_
#define SMBFLEET_TESTS_POLICY_BASELINE_FOR_TEST_H_

// What the policy suites share: files of the source tree, the baseline policy as shipped, one
// rule's result in an evaluation, and short names for the statuses.

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "policy/evaluate.h"

namespace smbfleet::policy {

inline constexpr smbfleet::v1::ComplianceStatus kOk = smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT;
inline constexpr smbfleet::v1::ComplianceStatus kBad =
    smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT;
inline constexpr smbfleet::v1::ComplianceStatus kUnknown = smbfleet::v1::COMPLIANCE_STATUS_UNKNOWN;
inline constexpr smbfleet::v1::ComplianceStatus kNa =
    smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE;

// "Now" for evaluations whose waivers and timestamps do not matter.
inline const absl::Time kNow = absl::FromUnixSeconds(1796083200);  // 2026-12-01

// A file of the source tree by its path from the top ("policy/policies/baseline.yaml"); empty
// when it cannot be read.
inline std::string ReadSourceFile(const std::string& relative) {
  std::ifstream in(std::string(SMBFLEET_SOURCE_DIR) + "/" + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Policy LoadBaseline() {
  auto p = ParsePolicy("baseline.yaml", ReadSourceFile("policy/policies/baseline.yaml"));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : Policy{};
}

// The result of `rule` (for `share`, or the host's), or null.
inline const smbfleet::v1::RuleResult* FindResult(const smbfleet::v1::HostEvaluation& e,
                                                  const std::string& rule,
                                                  const std::string& share = "") {
  for (const auto& r : e.results()) {
    if (r.rule_id() == rule && r.share() == share) return &r;
  }
  return nullptr;
}

}  // namespace smbfleet::policy

#endif  // SMBFLEET_TESTS_POLICY_BASELINE_FOR_TEST_H_

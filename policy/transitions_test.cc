#include "policy/transitions.h"

#include "gtest/gtest.h"

namespace smbfleet::policy {
namespace {

using smbfleet::v1::ComplianceStatus;
using smbfleet::v1::HostEvaluation;

constexpr ComplianceStatus kOk = smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT;
constexpr ComplianceStatus kBad = smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT;
constexpr ComplianceStatus kWaived = smbfleet::v1::COMPLIANCE_STATUS_WAIVED;
constexpr ComplianceStatus kNone = smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED;

HostEvaluation Eval(const std::vector<std::tuple<std::string, std::string, ComplianceStatus>>& rs) {
  HostEvaluation e;
  e.set_hostname("fs01");
  e.set_policy_version("2");
  e.mutable_evaluated_at()->set_seconds(1796000000);
  for (auto& [rule, share, st] : rs) {
    auto* r = e.add_results();
    r->set_rule_id(rule);
    r->set_share(share);
    r->set_status(st);
    if (!share.empty()) r->set_classification("pii");
  }
  return e;
}

TEST(TransitionsTest, FirstEvaluationRecordsEveryKey) {
  auto t = ComputeTransitions({}, Eval({{"b", "", kBad}, {"a", "HR", kOk}}));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].rule_id(), "a");  // sorted
  EXPECT_EQ(t[0].share(), "HR");
  EXPECT_EQ(t[0].classification(), "pii");
  EXPECT_EQ(t[0].from_status(), kNone);
  EXPECT_EQ(t[0].to_status(), kOk);
  EXPECT_EQ(t[1].to_status(), kBad);
  EXPECT_EQ(t[1].policy_version(), "2");
  EXPECT_EQ(t[1].at().seconds(), 1796000000);
  EXPECT_EQ(t[1].hostname(), "fs01");
}

TEST(TransitionsTest, OnlyChangesAreRecorded) {
  std::vector<StoredResult> prev = {
      {"a", "", "1", kBad}, {"b", "", "1", kOk}, {"c", "HR", "2", kBad}, {"gone", "", "2", kBad}};
  auto t = ComputeTransitions(prev, Eval({{"a", "", kBad},       // same status, older version
                                          {"b", "", kBad},       // changed
                                          {"c", "HR", kWaived},  // waived now
                                          {"d", "", kOk}}));     // new rule
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].rule_id(), "b");
  EXPECT_EQ(t[0].from_status(), kOk);
  EXPECT_EQ(t[0].to_status(), kBad);
  EXPECT_EQ(t[1].rule_id(), "c");
  EXPECT_EQ(t[1].to_status(), kWaived);
  EXPECT_EQ(t[2].rule_id(), "d");
  EXPECT_EQ(t[2].from_status(), kNone);
  EXPECT_EQ(t[3].rule_id(), "gone");
  EXPECT_EQ(t[3].from_status(), kBad);
  EXPECT_EQ(t[3].to_status(), kNone);
}

TEST(TransitionsTest, UnchangedEvaluationYieldsNothing) {
  std::vector<StoredResult> prev = {{"a", "", "2", kOk}, {"c", "HR", "2", kBad}};
  EXPECT_TRUE(ComputeTransitions(prev, Eval({{"a", "", kOk}, {"c", "HR", kBad}})).empty());
}

}  // namespace
}  // namespace smbfleet::policy

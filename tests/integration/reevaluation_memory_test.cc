// The re-evaluation suite (reevaluation_conformance.h) against the in-memory stores.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/store/memory/memory_store.h"
#include "tests/integration/reevaluation_conformance.h"

namespace smbfleet::collector {
namespace {

using store_testing::ReevaluationConformanceTest;
using store_testing::ReevaluationFactory;
using store_testing::ReevaluationUnderTest;

ReevaluationUnderTest MakeMemory() {
  ReevaluationUnderTest out;
  auto hosts = std::make_unique<MemoryHostStore>();
  auto compliance = std::make_unique<MemoryComplianceStore>(hosts.get());
  MemoryComplianceStore* store = compliance.get();
  out.transitions = [store](const std::string& host) {
    std::vector<std::string> lines;
    for (const auto& t : store->transitions(host)) {
      lines.push_back(absl::StrCat(
          t.policy_version(), " ", t.rule_id(), " ", t.share(), " ", t.classification(), " ",
          smbfleet::v1::ComplianceStatus_Name(t.from_status()), " ",
          smbfleet::v1::ComplianceStatus_Name(t.to_status()), " ", t.at().seconds()));
    }
    return lines;
  };
  out.compliance = std::move(compliance);
  out.hosts = std::move(hosts);
  out.claims = NewLocalJobClaims();
  return out;
}

INSTANTIATE_TEST_SUITE_P(Memory, ReevaluationConformanceTest,
                         ::testing::Values(ReevaluationFactory{"memory", MakeMemory}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace smbfleet::collector

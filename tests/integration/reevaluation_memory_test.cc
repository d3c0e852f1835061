// The re-evaluation suite (reevaluation_conformance.h) against the in-memory stores.
#include <memory>

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
  out.compliance = std::make_unique<MemoryComplianceStore>(hosts.get());
  out.hosts = std::move(hosts);
  out.claims = NewLocalJobClaims();
  return out;
}

INSTANTIATE_TEST_SUITE_P(Memory, ReevaluationConformanceTest,
                         ::testing::Values(ReevaluationFactory{"memory", MakeMemory}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace smbfleet::collector

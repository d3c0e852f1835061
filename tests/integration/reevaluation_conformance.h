#ifndef SMBFLEET_TESTS_INTEGRATION_REEVALUATION_CONFORMANCE_H_
#define SMBFLEET_TESTS_INTEGRATION_REEVALUATION_CONFORMANCE_H_

// The re-evaluation of stored postures after a policy change (collector/ingest/reevaluate.h) as
// one parameterised suite every backend runs: hosts reported and evaluated under policy A, then
// re-evaluated under policy B from the store alone, with no report; the listing of evaluation
// states it pages through; and the job's claim, one holder at a time.

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "collector/store/compliance_store.h"
#include "collector/store/host_store.h"
#include "collector/store/job_claims.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::store_testing {

struct ReevaluationUnderTest {
  std::string skip;  // non-empty: the backend is not available here
  std::unique_ptr<HostStore> hosts;
  std::unique_ptr<ComplianceStore> compliance;  // over `hosts`; destroyed first
  std::unique_ptr<JobClaims> claims;
  // What a second collector process on the same database claims through; null: `claims`.
  std::unique_ptr<JobClaims> other_process_claims;
  // Each stored transition of `host` as one line (version, rule, share, classification, from,
  // to, time), in the order they were written.
  std::function<std::vector<std::string>(const std::string& host)> transitions;
};

struct ReevaluationFactory {
  std::string name;
  std::function<ReevaluationUnderTest()> make;
};

inline std::ostream& operator<<(std::ostream& os, const ReevaluationFactory& f) {
  return os << f.name;
}

class ReevaluationConformanceTest : public ::testing::TestWithParam<ReevaluationFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  ReevaluationUnderTest under_test_;
};

}  // namespace smbfleet::collector::store_testing

#endif  // SMBFLEET_TESTS_INTEGRATION_REEVALUATION_CONFORMANCE_H_

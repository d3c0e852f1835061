#ifndef SMBFLEET_TESTS_INTEGRATION_CHANGE_STORE_CONFORMANCE_H_
#define SMBFLEET_TESTS_INTEGRATION_CHANGE_STORE_CONFORMANCE_H_

// The ChangeStore contract (collector/store/change_store.h) as one parameterised suite that
// every implementation runs. An implementation's test adds change_store_conformance.cc to its
// sources (gtest registers the tests from that file) and instantiates the suite with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(Memory, ChangeStoreConformanceTest,
//                            ::testing::Values(ChangeStoreFactory{"memory", [] { ... }}));

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "collector/store/change_store.h"
#include "collector/store/compliance_store.h"
#include "collector/store/host_store.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::store_testing {

struct ChangeStoreUnderTest {
  // Non-empty: the backend is not available here and the test is skipped with this reason.
  std::string skip;
  // The same backend's ComplianceStore, for ActiveWaivers; destroyed after `changes`.
  std::unique_ptr<ComplianceStore> compliance;
  std::unique_ptr<ChangeStore> changes;
  // The same backend's hosts (whose platform ListMeasuredChangeHosts joins), owned by
  // `compliance` or by `owned_hosts`.
  std::unique_ptr<HostStore> owned_hosts;
  HostStore* hosts = nullptr;
};

struct ChangeStoreFactory {
  std::string name;
  std::function<ChangeStoreUnderTest()> make;  // a fresh, empty store each call
};

inline std::ostream& operator<<(std::ostream& os, const ChangeStoreFactory& f) {
  return os << f.name;
}

class ChangeStoreConformanceTest : public ::testing::TestWithParam<ChangeStoreFactory> {
 protected:
  void SetUp() override;

  ChangeStoreUnderTest under_test_;
  ChangeStore* store_ = nullptr;
};

}  // namespace smbfleet::collector::store_testing

#endif  // SMBFLEET_TESTS_INTEGRATION_CHANGE_STORE_CONFORMANCE_H_

#ifndef SMBFLEET_TESTS_INTEGRATION_FLEET_STORE_CONFORMANCE_H_
#define SMBFLEET_TESTS_INTEGRATION_FLEET_STORE_CONFORMANCE_H_

// What the console reads from HostStore and ComplianceStore (HostStore::FindHosts,
// ComplianceStore::GetFleetOverview) as one parameterised suite that every backend runs on the
// same hand-built fleet: the same filters, pages and aggregates from memory and from SQL.

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "collector/store/compliance_store.h"
#include "collector/store/enrollment_store.h"
#include "collector/store/host_store.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::store_testing {

struct FleetStoreUnderTest {
  std::string skip;  // non-empty: the backend is not available here
  // The trusted labels (host_labels); the host store must see them for the label filter.
  std::unique_ptr<EnrollmentStore> enrollment;
  std::unique_ptr<HostStore> hosts;
  std::unique_ptr<ComplianceStore> compliance;  // over `hosts`; destroyed first
};

struct FleetStoreFactory {
  std::string name;
  std::function<FleetStoreUnderTest()> make;
};

inline std::ostream& operator<<(std::ostream& os, const FleetStoreFactory& f) {
  return os << f.name;
}

class FleetStoreConformanceTest : public ::testing::TestWithParam<FleetStoreFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  FleetStoreUnderTest under_test_;
};

}  // namespace smbfleet::collector::store_testing

#endif  // SMBFLEET_TESTS_INTEGRATION_FLEET_STORE_CONFORMANCE_H_

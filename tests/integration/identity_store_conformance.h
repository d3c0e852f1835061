#ifndef SMBFLEET_TESTS_INTEGRATION_IDENTITY_STORE_CONFORMANCE_H_
#define SMBFLEET_TESTS_INTEGRATION_IDENTITY_STORE_CONFORMANCE_H_

// The IdentityStore contract as one parameterised suite (as approver_key_store_conformance.h):
// an implementation's test compiles identity_store_conformance.cc and instantiates
// IdentityStoreConformanceTest with a factory.

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "collector/store/identity_store.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::store_testing {

struct IdentityStoreUnderTest {
  std::string skip;  // non-empty: the backend is not available here
  std::unique_ptr<IdentityStore> store;
};

struct IdentityStoreFactory {
  std::string name;
  std::function<IdentityStoreUnderTest()> make;  // a fresh, empty store each call
};

inline std::ostream& operator<<(std::ostream& os, const IdentityStoreFactory& f) {
  return os << f.name;
}

class IdentityStoreConformanceTest : public ::testing::TestWithParam<IdentityStoreFactory> {
 protected:
  void SetUp() override;

  IdentityStoreUnderTest under_test_;
  IdentityStore* store_ = nullptr;
};

}  // namespace smbfleet::collector::store_testing

#endif  // SMBFLEET_TESTS_INTEGRATION_IDENTITY_STORE_CONFORMANCE_H_

#ifndef SMBFLEET_TESTS_INTEGRATION_APPROVER_KEY_STORE_CONFORMANCE_H_
#define SMBFLEET_TESTS_INTEGRATION_APPROVER_KEY_STORE_CONFORMANCE_H_

// The ApproverKeyStore contract as one parameterised suite (as change_store_conformance.h):
// an implementation's test compiles approver_key_store_conformance.cc and instantiates
// ApproverKeyStoreConformanceTest with a factory.

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "collector/store/approver_key_store.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::store_testing {

struct ApproverKeyStoreUnderTest {
  std::string skip;  // non-empty: the backend is not available here
  std::unique_ptr<ApproverKeyStore> keys;
};

struct ApproverKeyStoreFactory {
  std::string name;
  std::function<ApproverKeyStoreUnderTest()> make;  // a fresh, empty store each call
};

inline std::ostream& operator<<(std::ostream& os, const ApproverKeyStoreFactory& f) {
  return os << f.name;
}

class ApproverKeyStoreConformanceTest : public ::testing::TestWithParam<ApproverKeyStoreFactory> {
 protected:
  void SetUp() override;

  ApproverKeyStoreUnderTest under_test_;
  ApproverKeyStore* store_ = nullptr;
};

}  // namespace smbfleet::collector::store_testing

#endif  // SMBFLEET_TESTS_INTEGRATION_APPROVER_KEY_STORE_CONFORMANCE_H_

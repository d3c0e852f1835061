#ifndef SMBFLEET_TESTS_INTEGRATION_ENROLLMENT_STORE_CONFORMANCE_H_
#define SMBFLEET_TESTS_INTEGRATION_ENROLLMENT_STORE_CONFORMANCE_H_

// The EnrollmentStore contract as one parameterised suite (as approver_key_store_conformance.h):
// an implementation's test compiles enrollment_store_conformance.cc and instantiates
// EnrollmentStoreConformanceTest with a factory.

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "collector/store/enrollment_store.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::store_testing {

struct EnrollmentStoreUnderTest {
  std::string skip;  // non-empty: the backend is not available here
  std::unique_ptr<EnrollmentStore> store;
};

struct EnrollmentStoreFactory {
  std::string name;
  std::function<EnrollmentStoreUnderTest()> make;  // a fresh, empty store each call
};

inline std::ostream& operator<<(std::ostream& os, const EnrollmentStoreFactory& f) {
  return os << f.name;
}

class EnrollmentStoreConformanceTest : public ::testing::TestWithParam<EnrollmentStoreFactory> {
 protected:
  void SetUp() override;

  EnrollmentStoreUnderTest under_test_;
  EnrollmentStore* store_ = nullptr;
};

}  // namespace smbfleet::collector::store_testing

#endif  // SMBFLEET_TESTS_INTEGRATION_ENROLLMENT_STORE_CONFORMANCE_H_

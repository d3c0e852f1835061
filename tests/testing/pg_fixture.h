#ifndef SMBFLEET_TESTS_TESTING_PG_FIXTURE_H_
#define SMBFLEET_TESTS_TESTING_PG_FIXTURE_H_

// A fresh database per test on the private PostgreSQL that deploy/test.sh starts
// (SMBFLEET_TEST_PG_DSN names a role that may create databases).

#include <cstdlib>
#include <string>

namespace smbfleet::testing {

// Empty when SMBFLEET_TEST_PG_DSN is not set.
std::string AdminDsn();

// Creates a new, empty database and returns its connection string.
std::string CreateTestDatabase();

// Runs a query that returns one value, as text.
std::string QueryValue(const std::string& dsn, const std::string& sql);

// Generates a dev CA and certificates with deploy/ca.sh into a new temporary directory:
// ca.pem, collector.pem, operator-admin.pem and agent-<host>.pem for each host.
std::string MakeCertificates(const std::string& hosts);

std::string MakeTempDir(const std::string& prefix);

}  // namespace smbfleet::testing

#define SMBFLEET_REQUIRE_PG()                                                        \
  do {                                                                               \
    if (::smbfleet::testing::AdminDsn().empty()) {                                   \
      if (std::getenv("CI") != nullptr) FAIL() << "SMBFLEET_TEST_PG_DSN is not set"; \
      GTEST_SKIP() << "SMBFLEET_TEST_PG_DSN is not set: run through deploy/test.sh"; \
    }                                                                                \
  } while (0)

#endif  // SMBFLEET_TESTS_TESTING_PG_FIXTURE_H_

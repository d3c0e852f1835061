// The re-evaluation suite (reevaluation_conformance.h) against PostgreSQL: the stores of one
// migrated database, and two processes' claims on it (each its own connection).
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "collector/store/postgres/job_claims.h"
#include "collector/store/postgres/pg_store.h"
#include "tests/integration/reevaluation_conformance.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

using store_testing::ReevaluationConformanceTest;
using store_testing::ReevaluationFactory;
using store_testing::ReevaluationUnderTest;

ReevaluationUnderTest MakePg() {
  ReevaluationUnderTest out;
  if (::smbfleet::testing::AdminDsn().empty()) {
    out.skip = "SMBFLEET_TEST_PG_DSN is not set: run through deploy/test.sh";
    return out;
  }
  const std::string dsn = ::smbfleet::testing::CreateTestDatabase();
  absl::Status migrated = ApplyMigrations(dsn, BuiltinMigrations());
  EXPECT_TRUE(migrated.ok()) << migrated;
  auto stores = NewPgStore(dsn, 4);
  EXPECT_TRUE(stores.ok()) << stores.status();
  if (!stores.ok()) return out;
  out.hosts = std::move(stores->hosts);
  out.compliance = std::move(stores->compliance);
  out.claims = std::move(stores->claims);
  out.other_process_claims = NewPgJobClaims(dsn);
  out.transitions = [dsn](const std::string& host) {
    pqxx::connection conn(dsn);
    pqxx::read_transaction tx(conn);
    std::vector<std::string> lines;
    for (const auto& r : tx.exec_params(
             "SELECT concat_ws(' ', t.policy_version, t.rule_id, t.share_name, t.classification, "
             "t.from_status, t.to_status, extract(epoch FROM t.at)::bigint, t.labels::text) "
             "FROM compliance_transitions t JOIN hosts h ON h.id = t.host_id WHERE h.name = $1 "
             "ORDER BY t.id",
             host)) {
      lines.push_back(r[0].as<std::string>());
    }
    return lines;
  };
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pg, ReevaluationConformanceTest,
                         ::testing::Values(ReevaluationFactory{"postgres", MakePg}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace smbfleet::collector

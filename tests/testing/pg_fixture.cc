#include "tests/testing/pg_fixture.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <pqxx/pqxx>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/testing/temp_dir.h"

namespace smbfleet::testing {

std::string AdminDsn() {
  const char* dsn = std::getenv("SMBFLEET_TEST_PG_DSN");
  return dsn == nullptr ? "" : dsn;
}

std::string CreateTestDatabase() {
  static std::atomic<int> counter{0};
  std::string name = absl::StrCat("smbfleet_t_", ::getpid(), "_", counter++, "_", std::rand());
  pqxx::connection admin(AdminDsn());
  pqxx::nontransaction tx(admin);
  tx.exec(absl::StrCat("DROP DATABASE IF EXISTS ", name));
  tx.exec(absl::StrCat("CREATE DATABASE ", name));
  std::string dsn = AdminDsn();
  size_t slash = dsn.rfind('/');
  return absl::StrCat(dsn.substr(0, slash + 1), name);
}

std::string QueryValue(const std::string& dsn, const std::string& sql) {
  pqxx::connection c(dsn);
  pqxx::nontransaction tx(c);
  pqxx::result r = tx.exec(sql);
  if (r.empty() || r[0][0].is_null()) return "";
  return r[0][0].as<std::string>();
}

std::string MakeTempDir(const std::string& prefix) { return MakeTestDir(prefix); }

std::string MakeCertificates(const std::string& hosts) {
  std::string dir = MakeTempDir("smbfleet-certs");
  std::string cmd = absl::StrCat("bash ", SMBFLEET_SOURCE_DIR, "/deploy/ca.sh dev ", dir, "/pki ",
                                 hosts, " >/dev/null");
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("deploy/ca.sh failed");
  return dir + "/pki";
}

}  // namespace smbfleet::testing

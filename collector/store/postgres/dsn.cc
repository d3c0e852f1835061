#include "collector/store/postgres/dsn.h"

#include <libpq-fe.h>

#include <pqxx/pqxx>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smbfleet::collector {

std::string RedactDsn(const std::string& dsn) {
  char* err = nullptr;
  PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &err);
  if (options == nullptr) {
    if (err != nullptr) PQfreemem(err);
    return "(unparsable connection string)";
  }
  std::vector<std::string> parts;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val == nullptr || o->val[0] == '\0') continue;
    std::string key = o->keyword;
    if (key == "password" || key == "sslpassword") continue;
    if (key == "host" || key == "hostaddr" || key == "port" || key == "dbname" || key == "user" ||
        key == "sslmode") {
      parts.push_back(absl::StrCat(key, "=", o->val));
    }
  }
  PQconninfoFree(options);
  return absl::StrJoin(parts, " ");
}

absl::Status MapPgException(const std::string& dsn, absl::string_view what) {
  try {
    throw;
  } catch (const pqxx::broken_connection& e) {
    return absl::UnavailableError(
        absl::StrCat(what, ": PostgreSQL at ", RedactDsn(dsn), " is not reachable: ", e.what()));
  } catch (const pqxx::sql_error& e) {
    return absl::InternalError(absl::StrCat(what, ": database error: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

}  // namespace smbfleet::collector

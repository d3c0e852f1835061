#include "collector/store/postgres/dsn.h"

#include <libpq-fe.h>

#include <map>
#include <pqxx/pqxx>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smbfleet::collector {
namespace {

// A conninfo value in single quotes, with \ and ' escaped as libpq reads them.
std::string Quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\\' || c == '\'') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

// SQLSTATEs after which the same call can succeed later: the server is shutting down or
// starting (class 57P), cancelled a statement that ran past statement_timeout (57014), lost the
// connection (class 08) or is out of connections or memory (class 53).
bool RetryableSqlState(const std::string& state) {
  return absl::StartsWith(state, "08") || absl::StartsWith(state, "53") ||
         absl::StartsWith(state, "57");
}

}  // namespace

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

absl::StatusOr<std::string> WithSessionLimits(const std::string& dsn, const SessionLimits& limits) {
  char* err = nullptr;
  PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &err);
  if (options == nullptr) {
    std::string why = err != nullptr ? err : "out of memory";
    if (err != nullptr) PQfreemem(err);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return absl::InvalidArgumentError(absl::StrCat("database.dsn: ", why));
  }
  std::map<std::string, std::string> values;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr && o->val[0] != '\0') values[o->keyword] = o->val;
  }
  PQconninfoFree(options);
  auto set_default = [&values](const std::string& key, int64_t value) {
    values.try_emplace(key, absl::StrCat(value));
  };
  // libpq takes whole seconds and treats 1 as 2.
  set_default("connect_timeout",
              std::max<int64_t>(2, absl::ToInt64Seconds(limits.connect_timeout)));
  set_default("keepalives", 1);
  set_default("keepalives_idle",
              std::max<int64_t>(1, absl::ToInt64Seconds(limits.keepalives_idle)));
  set_default("keepalives_interval",
              std::max<int64_t>(1, absl::ToInt64Seconds(limits.keepalives_interval)));
  set_default("keepalives_count", std::max(1, limits.keepalives_count));
  std::string& server_options = values["options"];
  if (!absl::StrContains(server_options, "statement_timeout")) {
    absl::StrAppend(&server_options, server_options.empty() ? "" : " ",
                    "-c statement_timeout=", absl::ToInt64Milliseconds(limits.statement_timeout));
  }
  std::vector<std::string> parts;
  for (const auto& [key, value] : values) parts.push_back(absl::StrCat(key, "=", Quote(value)));
  return absl::StrJoin(parts, " ");
}

bool InFlightMeansUnreachable() {
  try {
    throw;
  } catch (const pqxx::broken_connection&) {
    return true;
  } catch (const DatabaseUnreachable&) {
    return true;
  } catch (const pqxx::sql_error& e) {
    // The server going down mid-call (57P01 admin_shutdown, 57P03 cannot_connect_now).
    return absl::StartsWith(e.sqlstate(), "57P") || absl::StartsWith(e.sqlstate(), "08");
  } catch (...) {
    return false;
  }
}

absl::Status MapPgException(const std::string& dsn, absl::string_view what) {
  try {
    throw;
  } catch (const DatabaseBusy& e) {
    return absl::UnavailableError(absl::StrCat(what, ": database busy: ", e.what()));
  } catch (const DatabaseUnreachable& e) {
    return absl::UnavailableError(absl::StrCat(what, ": ", e.what()));
  } catch (const pqxx::broken_connection& e) {
    return absl::UnavailableError(
        absl::StrCat(what, ": PostgreSQL at ", RedactDsn(dsn), " is not reachable: ", e.what()));
  } catch (const pqxx::in_doubt_error& e) {
    return absl::UnavailableError(
        absl::StrCat(what, ": connection to PostgreSQL lost during commit: ", e.what()));
  } catch (const pqxx::sql_error& e) {
    if (RetryableSqlState(e.sqlstate())) {
      return absl::UnavailableError(absl::StrCat(what, ": PostgreSQL at ", RedactDsn(dsn),
                                                 " cannot serve it now: ", e.what()));
    }
    return absl::InternalError(absl::StrCat(what, ": database error: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

}  // namespace smbfleet::collector

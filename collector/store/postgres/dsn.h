#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_DSN_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_DSN_H_

#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace smbfleet::collector {

// The connection string with any password removed, for messages.
std::string RedactDsn(const std::string& dsn);

// Bounds every connection of the collector carries, so that a database that stops answering
// fails calls instead of parking the threads that make them (docs/collector.md "database").
struct SessionLimits {
  absl::Duration connect_timeout = absl::Seconds(5);     // libpq connect_timeout (whole seconds)
  absl::Duration statement_timeout = absl::Seconds(30);  // the server's statement_timeout
  // TCP keepalives: a peer that vanished is noticed after idle + interval * count.
  absl::Duration keepalives_idle = absl::Seconds(30);
  absl::Duration keepalives_interval = absl::Seconds(10);
  int keepalives_count = 3;
};

// The connection string (keywords or URI) rewritten as libpq keywords with `limits` added,
// each only where the string does not set it itself; statement_timeout goes into `options`.
// The string is parsed by libpq and every value re-quoted, never pasted in as text.
absl::StatusOr<std::string> WithSessionLimits(const std::string& dsn, const SessionLimits& limits);

// Thrown by the connection pool when no connection became free within its wait: UNAVAILABLE
// "database busy".
class DatabaseBusy : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by the connection pool while the server is known to be unreachable and another call is
// already finding out whether it is back: UNAVAILABLE at once instead of a connect_timeout each.
class DatabaseUnreachable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Maps the exception in flight to a Status: UNAVAILABLE when the server cannot be reached,
// stopped answering, is shutting down or cancelled a statement that ran too long (naming the
// server, without the password); INTERNAL otherwise. Call only inside a catch block.
absl::Status MapPgException(const std::string& dsn, absl::string_view what);

// True when the exception in flight means the server is unreachable (not a refusal of one
// statement): the connection is then broken and the other idle ones likely too.
bool InFlightMeansUnreachable();

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_DSN_H_

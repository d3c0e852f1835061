#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_DSN_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_DSN_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace smbfleet::collector {

// The connection string with any password removed, for messages.
std::string RedactDsn(const std::string& dsn);

// Maps the exception in flight to a Status: UNAVAILABLE when the server cannot be reached
// (naming it, without the password), INTERNAL otherwise. Call only inside a catch block.
absl::Status MapPgException(const std::string& dsn, absl::string_view what);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_DSN_H_

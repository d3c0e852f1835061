#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_SQL_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_SQL_H_

// Small helpers shared by the PostgreSQL stores: timestamps in and out, status names, and
// array parameters for statements over many rows. Values are always bound as parameters, never
// pasted into a statement's text.

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "google/protobuf/timestamp.pb.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet::collector::pg {

std::string Rfc3339(absl::Time t);
// "" for an unset timestamp (NULLIF($n, '')::timestamptz in SQL).
std::string TimestampText(const google::protobuf::Timestamp& ts);
// From an EXTRACT(EPOCH FROM ...)::float8 column; NULL leaves ts unset.
void SetTimestamp(const pqxx::field& f, google::protobuf::Timestamp* ts);
// From a `(EXTRACT(EPOCH FROM col) * 1000000)::bigint` column: whole microseconds, as
// PostgreSQL keeps them (a float8 epoch would round them). NULL leaves ts unset.
void SetTimestampFromMicros(const pqxx::field& f, google::protobuf::Timestamp* ts);

// The number of hosts, from the count kept per writing connection (migration 0018): a few
// rows, whatever the number of hosts.
uint32_t HostCount(pqxx::transaction_base& tx);

// The schema's short status name ("NON_COMPLIANT"); nullopt for UNSPECIFIED (SQL NULL).
std::optional<std::string> StatusText(smbfleet::v1::ComplianceStatus s);
smbfleet::v1::ComplianceStatus StatusFromText(const std::string& text);

// Array parameters (`$1::text[]`, `$1::bigint[]`, `$1::bool[]`) in PostgreSQL's array input
// syntax, for unnest(): one statement over many rows, the values still bound, never pasted
// into the SQL text.
std::string TextArray(const std::vector<std::string>& values);
// A text[] whose unset values are NULL.
std::string NullableTextArray(const std::vector<std::optional<std::string>>& values);
std::string BigintArray(const std::vector<int64_t>& values);
std::string BoolArray(const std::vector<bool>& values);
// A bool[] whose unknown values are NULL.
std::string NullableBoolArray(const std::vector<std::optional<bool>>& values);
// A float8[] (shortest text that reads back the same value).
std::string DoubleArray(const std::vector<double>& values);

}  // namespace smbfleet::collector::pg

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_SQL_H_

#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_SQL_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_SQL_H_

// Small helpers shared by the PostgreSQL stores: timestamps in and out, status names, and
// multi-row INSERTs.

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

// SQL literals for InsertBatch rows.
std::string Literal(const pqxx::transaction_base& tx, const std::string& text);
std::string Literal(const pqxx::transaction_base& tx, const std::optional<std::string>& text);
std::string Literal(std::optional<bool> b);
std::string Literal(int64_t n);
std::string Literal(double d);

// Array parameters (`$1::text[]`, `$1::bigint[]`, `$1::bool[]`) in PostgreSQL's array input
// syntax, for unnest(): one statement over many rows, the values still bound, never pasted
// into the SQL text.
std::string TextArray(const std::vector<std::string>& values);
std::string BigintArray(const std::vector<int64_t>& values);
std::string BoolArray(const std::vector<bool>& values);
// A bool[] whose unknown values are NULL.
std::string NullableBoolArray(const std::vector<std::optional<bool>>& values);
// A float8[] (shortest text that reads back the same value).
std::string DoubleArray(const std::vector<double>& values);

// Rows of one INSERT sent a few hundred at a time instead of one round trip each. Values are
// SQL literals (Literal() above, optionally with a ::cast).
class InsertBatch {
 public:
  // head: "INSERT INTO t (a, b)"; tail: e.g. "ON CONFLICT DO NOTHING" or "".
  InsertBatch(pqxx::transaction_base& tx, std::string head, std::string tail);
  void Add(const std::vector<std::string>& values);
  // Sends what is pending; must be called before the transaction commits.
  void Flush();

 private:
  static constexpr size_t kRowsPerStatement = 500;
  pqxx::transaction_base& tx_;
  const std::string head_;
  const std::string tail_;
  std::string values_;
  size_t rows_ = 0;
};

}  // namespace smbfleet::collector::pg

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_SQL_H_

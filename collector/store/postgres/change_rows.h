#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_CHANGE_ROWS_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_CHANGE_ROWS_H_

// Rows of the change-management tables (migration 0004) to and from their protobuf messages:
// changes, change_hosts, change_approvals, host_change_status, audit_log and waivers. Writes are
// column names with values bound as parameters, so that one kind of row serves an INSERT of one
// or many rows (InsertRows) or an UPDATE (UpdateRow) with no value in the statement's text;
// reads go by column name over the *Columns select lists.

#include <map>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "smbfleet/v1/change.pb.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet::collector::pg {

// How a column's value, bound as text, is read in SQL.
enum class ColumnType {
  kText,
  kBigint,
  kBool,
  kTimestamptz,
  kTimestamptzOrNow,  // NULL is the transaction's now()
  kJsonb,
  kHexBytea,  // bytes written as hex digits
};

// One row to write: its columns, each with its type and its value as text (nullopt: NULL).
struct RowValues {
  struct Column {
    std::string name;
    ColumnType type;
    std::optional<std::string> value;
  };
  std::vector<Column> columns;

  void Add(std::string name, ColumnType type, std::optional<std::string> value);
  // "a = EXCLUDED.a, ..." for every column but those named in `key`.
  std::string ExcludedAssignments(const std::vector<std::string>& key) const;
};

// `rows` (each with the same columns) in one INSERT INTO `table`, each column one text[]
// parameter read through unnest() in the rows' order, with `tail` (e.g. an ON CONFLICT clause)
// after it.
void InsertRows(pqxx::transaction_base& tx, const std::string& table,
                const std::vector<RowValues>& rows, const std::string& tail = "");
// `rows` (each with the same columns) in one UPDATE of `table`, each column one text[] parameter
// read through unnest(): each row sets its columns but those named in `keys` on the row whose
// `keys` columns equal its own.
void UpdateRows(pqxx::transaction_base& tx, const std::string& table,
                const std::vector<RowValues>& rows, const std::vector<std::string>& keys);
// UPDATE `table` SET every column of `row` but those named in `skip` WHERE `where`, whose
// parameters $1, $2, ... are `keys`.
void UpdateRow(pqxx::transaction_base& tx, const std::string& table, const RowValues& row,
               const std::vector<std::string>& skip, const std::string& where,
               const std::vector<std::string>& keys);

// The short names the schema stores ('ROLLING_OUT', 'DISPATCHED', ...); "" for UNSPECIFIED.
std::string ChangeStateText(smbfleet::v1::ChangeState s);
std::string HostStateText(smbfleet::v1::HostChangeState s);
std::string WaiverStateText(smbfleet::v1::WaiverState s);

// JSON columns of host rows (steps, impact, more, before and after values) parsed or printed
// once per read or write: the hosts of one change mostly carry the same steps and impact (one
// setting, fleet-wide), and protobuf's JSON parser and printer are most of the cost of reading
// and writing them. Keep one for the rows of one read or write.
struct HostJsonCache {
  static constexpr size_t kMaxTexts = 4096;  // distinct values kept; later ones go alone
  std::map<std::string, std::unique_ptr<google::protobuf::Message>> parsed;  // by column, text
  std::map<std::string, std::string> printed;  // JSON by column, serialized message
};

// changes: every column but seq. Hosts and approvals have rows of their own.
RowValues ChangeRow(const smbfleet::v1::Change& change);
// change_hosts; `position` is the host's index in Change.hosts. The counter columns (migration
// 0012) only `with_counters`: a workflow step leaves them as they are.
// `cache` may be null: then each JSON column is printed.
RowValues HostRow(const std::string& change_id, int position, const smbfleet::v1::ChangeHost& host,
                  bool with_counters, HostJsonCache* cache = nullptr);
// The columns of `now` whose value differs from `was` (a row of the same table with the same
// columns) and the columns named in `keys`, which are always kept, in `now`'s order; the keys
// alone when no other column differs.
RowValues ChangedColumns(const RowValues& was, const RowValues& now,
                         const std::vector<std::string>& keys);
// The counter columns of change_hosts: each window serialised, measured as JSON; NULL for unset.
RowValues HostCounterRow(const smbfleet::v1::ChangeHost& host);
// change_approvals; the row carries the change's proposer for the four-eyes constraint.
RowValues ApprovalRow(const smbfleet::v1::Change& change, int position,
                      const smbfleet::v1::ChangeApproval& approval);
// audit_log: every column but seq; `at` defaults to the transaction's now().
RowValues AuditRow(const smbfleet::v1::AuditEntry& entry);
// waivers; approved_by is NULL until someone approves.
RowValues WaiverRow(const smbfleet::v1::Waiver& waiver);

// Select lists for `FROM changes c`, `change_hosts h`, `change_approvals a`, `audit_log l`,
// `host_change_status s` and `waivers w` (or the waivers_active view as w).
extern const char kChangeColumns[];
extern const char kHostColumns[];
extern const char kApprovalColumns[];
extern const char kAuditColumns[];
extern const char kHostStatusColumns[];
extern const char kWaiverColumns[];
// The counter columns (migration 0012), for `FROM change_hosts h`.
extern const char kHostCounterColumns[];

// Without hosts and approvals. A stored value that no longer parses is an error naming the
// change and the column.
absl::StatusOr<smbfleet::v1::Change> ChangeFromRow(const pqxx::row& r);
// `cache` may be null: then each column is parsed.
absl::StatusOr<smbfleet::v1::ChangeHost> HostFromRow(const pqxx::row& r,
                                                     HostJsonCache* cache = nullptr);
// Sets `host`'s counters from a row read with kHostCounterColumns (and h.host, for errors).
absl::Status MergeHostCounters(const pqxx::row& r, smbfleet::v1::ChangeHost* host);
smbfleet::v1::ChangeApproval ApprovalFromRow(const pqxx::row& r);
smbfleet::v1::AuditEntry AuditFromRow(const pqxx::row& r);
smbfleet::v1::HostChangeStatus HostStatusFromRow(const pqxx::row& r);
smbfleet::v1::Waiver WaiverFromRow(const pqxx::row& r);

}  // namespace smbfleet::collector::pg

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_CHANGE_ROWS_H_

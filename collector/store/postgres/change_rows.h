#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_CHANGE_ROWS_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_CHANGE_ROWS_H_

// Rows of the change-management tables (migration 0004) to and from their protobuf messages:
// changes, change_hosts, change_approvals, host_change_status, audit_log and waivers. Writes are
// column names with SQL literals, so that one row serves an INSERT, a multi-row INSERT
// (InsertBatch) or an UPDATE; reads go by column name over the *Columns select lists.

#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "smbfleet/v1/change.pb.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet::collector::pg {

// One row to write: column names and their SQL literals, in the same order.
struct RowValues {
  std::vector<std::string> columns;
  std::vector<std::string> values;

  void Add(std::string column, std::string literal);
  std::string ColumnList() const;  // "(a, b, c)"
  std::string ValueList() const;   // "(1, 'x', NULL)"
  // "a = EXCLUDED.a, ..." for every column but those named in `key`.
  std::string ExcludedAssignments(const std::vector<std::string>& key) const;
  // "a = 1, b = 'x'" for every column but those named in `key`.
  std::string Assignments(const std::vector<std::string>& key) const;
};

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
  std::map<std::string, std::string> printed;  // SQL literal by column, serialized message
};

// changes: every column but seq. Hosts and approvals have rows of their own.
RowValues ChangeRow(const pqxx::transaction_base& tx, const smbfleet::v1::Change& change);
// change_hosts; `position` is the host's index in Change.hosts. The counter columns (migration
// 0012) only `with_counters`: a workflow step leaves them as they are.
// `cache` may be null: then each JSON column is printed.
RowValues HostRow(const pqxx::transaction_base& tx, const std::string& change_id, int position,
                  const smbfleet::v1::ChangeHost& host, bool with_counters,
                  HostJsonCache* cache = nullptr);
// The counter columns of change_hosts: each window serialised, measured as JSON; NULL for unset.
RowValues HostCounterRow(const pqxx::transaction_base& tx, const smbfleet::v1::ChangeHost& host);
// change_approvals; the row carries the change's proposer for the four-eyes constraint.
RowValues ApprovalRow(const pqxx::transaction_base& tx, const smbfleet::v1::Change& change,
                      int position, const smbfleet::v1::ChangeApproval& approval);
// audit_log: every column but seq; `at` defaults to the transaction's now().
RowValues AuditRow(const pqxx::transaction_base& tx, const smbfleet::v1::AuditEntry& entry);
// waivers; approved_by is NULL until someone approves.
RowValues WaiverRow(const pqxx::transaction_base& tx, const smbfleet::v1::Waiver& waiver);

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

#include "collector/store/postgres/change_store.h"

#include <algorithm>
#include <map>
#include <pqxx/pqxx>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "collector/store/postgres/change_rows.h"
#include "collector/store/postgres/dsn.h"
#include "collector/store/postgres/sql.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "google/protobuf/util/message_differencer.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::MessageDifferencer;

// Hosts looked up per statement at most.
constexpr size_t kHostsPerQuery = 1000;

bool IsAckResult(v1::HostChangeState s) {
  return s == v1::HOST_CHANGE_STATE_APPLIED || s == v1::HOST_CHANGE_STATE_FAILED ||
         s == v1::HOST_CHANGE_STATE_PRECONDITION_FAILED || s == v1::HOST_CHANGE_STATE_REFUSED ||
         s == v1::HOST_CHANGE_STATE_ROLLED_BACK;
}

std::string FirstLine(const char* text) {
  absl::string_view s = text;
  absl::ConsumePrefix(&s, "ERROR:  ");
  return std::string(s.substr(0, s.find('\n')));
}

// Whether the change's own row (everything but hosts and approvals) differs; without copying
// the hosts, which may be many.
bool RowDiffers(const v1::Change& a, const v1::Change& b) {
  MessageDifferencer d;
  d.IgnoreField(v1::Change::descriptor()->FindFieldByName("hosts"));
  d.IgnoreField(v1::Change::descriptor()->FindFieldByName("approvals"));
  return !d.Compare(a, b);
}

// What a write that failed on a constraint meant, in the workflow's words. `changes` are those
// the transaction wrote (for naming the approver or the change). Call only inside a catch block.
absl::Status MapWriteError(ConnectionPool& pool, absl::string_view what,
                           const std::vector<const v1::Change*>& changes) {
  try {
    throw;
  } catch (const pqxx::check_violation& e) {
    if (absl::StrContains(e.what(), "change_approvals_four_eyes")) {
      for (const v1::Change* c : changes) {
        for (const auto& a : c->approvals()) {
          if (a.approver() == c->proposed_by()) {
            return absl::FailedPreconditionError(absl::StrCat(c->proposed_by(), " proposed change ",
                                                              c->id(), " and cannot approve it"));
          }
        }
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", FirstLine(e.what())));
  } catch (const pqxx::unique_violation& e) {
    if (absl::StrContains(e.what(), "change_approvals_pkey")) {
      for (const v1::Change* c : changes) {
        std::set<std::string> seen;
        for (const auto& a : c->approvals()) {
          if (!seen.insert(a.approver()).second) {
            return absl::FailedPreconditionError(
                absl::StrCat(a.approver(), " already approved change ", c->id()));
          }
        }
      }
    }
    return absl::AlreadyExistsError(absl::StrCat(what, ": ", FirstLine(e.what())));
  } catch (const pqxx::foreign_key_violation& e) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", FirstLine(e.what())));
  } catch (const pqxx::not_null_violation& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", FirstLine(e.what())));
  } catch (...) {
    return pool.Failed(DatabaseOperation::kWrite, what);
  }
}

absl::Status CheckChange(const v1::Change& c) {
  if (c.id().empty()) return absl::InvalidArgumentError("change: id is empty");
  if (c.state() == v1::CHANGE_STATE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat("change ", c.id(), ": state is unspecified"));
  }
  if (c.proposed_by().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("change ", c.id(), ": proposed_by is empty"));
  }
  std::set<std::string> hosts;
  for (const auto& h : c.hosts()) {
    if (!hosts.insert(h.host()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("change ", c.id(), ": host '", h.host(), "' appears twice"));
    }
    if (h.state() == v1::HOST_CHANGE_STATE_UNSPECIFIED) {
      return absl::InvalidArgumentError(
          absl::StrCat("change ", c.id(), ", host '", h.host(), "': state is unspecified"));
    }
  }
  return absl::OkStatus();
}

void InsertAudit(pqxx::transaction_base& tx, const std::vector<v1::AuditEntry>& entries) {
  std::vector<pg::RowValues> rows;
  rows.reserve(entries.size());
  for (const auto& e : entries) rows.push_back(pg::AuditRow(e));
  pg::InsertRows(tx, "audit_log", rows);
}

// Desired vs applied for the hosts whose state this write changed (`before` null for a new
// change): a host newly DISPATCHED (or dispatched anew, with a new nonce) is desired at the
// change's version; an ack result or a timeout is the host's last result, and APPLIED is where
// the host now is.
void WriteHostStatuses(pqxx::transaction_base& tx, const v1::Change* before,
                       const v1::Change& after) {
  using Type = pg::ColumnType;
  std::vector<pg::RowValues> desired, acked, timed_out, applied;
  const std::string version = absl::StrCat(static_cast<int64_t>(after.version()));
  auto target = [&](const std::string& host, const char* id_column, const char* version_column) {
    pg::RowValues row;
    row.Add("host", Type::kText, host);
    row.Add(id_column, Type::kText, after.id());
    row.Add(version_column, Type::kBigint, version);
    return row;
  };
  std::map<absl::string_view, const v1::ChangeHost*> old_hosts;
  if (before != nullptr) {
    for (const auto& h : before->hosts()) old_hosts[h.host()] = &h;
  }
  for (const auto& h : after.hosts()) {
    auto found = old_hosts.find(h.host());
    const v1::ChangeHost* old = found == old_hosts.end() ? nullptr : found->second;
    const bool state_changed = old == nullptr || old->state() != h.state();
    if (h.state() == v1::HOST_CHANGE_STATE_DISPATCHED &&
        (state_changed || old->nonce() != h.nonce())) {
      desired.push_back(target(h.host(), "desired_change_id", "desired_version"));
      continue;
    }
    if (!state_changed) continue;
    pg::RowValues result;
    result.Add("host", Type::kText, h.host());
    result.Add("last_result", Type::kText, pg::HostStateText(h.state()));
    result.Add("last_error", Type::kText,
               h.state() == v1::HOST_CHANGE_STATE_APPLIED ? "" : h.message());
    if (IsAckResult(h.state())) {
      const std::string at = pg::TimestampText(h.finished_at());
      result.Add("last_ack_at", Type::kTimestamptzOrNow,
                 at.empty() ? std::nullopt : std::optional<std::string>(at));
      acked.push_back(std::move(result));
    } else if (h.state() == v1::HOST_CHANGE_STATE_TIMED_OUT) {
      timed_out.push_back(std::move(result));
    }
    if (h.state() == v1::HOST_CHANGE_STATE_APPLIED) {
      applied.push_back(target(h.host(), "applied_change_id", "applied_version"));
    }
  }
  for (const auto* rows : {&desired, &acked, &timed_out, &applied}) {
    if (rows->empty()) continue;
    pg::InsertRows(tx, "host_change_status", *rows,
                   absl::StrCat("ON CONFLICT (host) DO UPDATE SET ",
                                rows->front().ExcludedAssignments({"host"})));
  }
}

class PgChangeStore : public ChangeStore {
 public:
  explicit PgChangeStore(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}

  absl::Status CreateChange(const v1::Change& change,
                            const std::vector<v1::AuditEntry>& audit) override;
  absl::StatusOr<std::optional<v1::Change>> GetChange(const std::string& id) override;
  absl::StatusOr<std::vector<v1::Change>> ListChanges(const ChangeQuery& query) override;
  absl::StatusOr<v1::Change> UpdateChange(const std::string& id, const StepFn& step) override;
  absl::Status UpdateChangeHosts(const std::string& id, const std::vector<std::string>& hosts,
                                 const HostsStepFn& step) override;
  absl::Status UpdateHostCounters(const std::string& change_id, const std::string& host,
                                  const CountersStepFn& step) override;
  absl::StatusOr<MeasuredChangeHosts> ListMeasuredChangeHosts(absl::Time since,
                                                              uint32_t limit) override;
  absl::StatusOr<int64_t> SaveCostModelCalibration(const v1::CostModelCalibration& calibration,
                                                   v1::AuditEntry audit) override;
  absl::StatusOr<std::vector<v1::CostModelCalibration>> ListCostModelCalibrations(
      uint32_t limit) override;
  absl::StatusOr<std::vector<v1::Change>> PendingForHost(const std::string& host,
                                                         absl::Time now) override;
  absl::StatusOr<std::map<std::string, std::vector<v1::Change>>> PendingForHosts(
      const std::vector<std::string>& hosts, absl::Time now) override;
  absl::StatusOr<std::vector<std::string>> LiveChangeIds() override;
  absl::StatusOr<std::map<std::string, v1::HostChangeStatus>> HostStatuses(
      const std::vector<std::string>& hosts) override;
  absl::StatusOr<Drift> DriftedHosts(uint32_t limit) override;
  absl::Status AppendAudit(const std::vector<v1::AuditEntry>& entries) override;
  absl::StatusOr<std::vector<v1::AuditEntry>> ListAudit(const AuditQuery& query) override;
  absl::Status CreateWaiver(const v1::Waiver& waiver, const v1::AuditEntry& audit) override;
  absl::StatusOr<v1::Waiver> UpdateWaiver(const std::string& id, const WaiverStepFn& step) override;
  absl::StatusOr<std::vector<v1::Waiver>> ListWaivers(bool include_inactive,
                                                      absl::Time now) override;

 private:
  // The change with its hosts and approvals; nullopt when there is none. `lock` takes the row
  // lock that orders workflow steps.
  static absl::StatusOr<std::optional<v1::Change>> ReadChange(pqxx::transaction_base& tx,
                                                              const std::string& id, bool lock);
  // Approvals of these changes, in the order they were given.
  static void AddApprovals(pqxx::transaction_base& tx, std::vector<v1::Change>& changes);
  static void InsertChange(pqxx::transaction_base& tx, const v1::Change& change);
  static void WriteHosts(pqxx::transaction_base& tx, const v1::Change& before,
                         const v1::Change& after);
  static void WriteApprovals(pqxx::transaction_base& tx, const v1::Change& before,
                             const v1::Change& after);

  std::shared_ptr<ConnectionPool> pool_;
};

absl::StatusOr<std::optional<v1::Change>> PgChangeStore::ReadChange(pqxx::transaction_base& tx,
                                                                    const std::string& id,
                                                                    bool lock) {
  pqxx::result rows =
      tx.exec_params(absl::StrCat("SELECT ", pg::kChangeColumns, " FROM changes c WHERE c.id = $1",
                                  lock ? " FOR UPDATE" : ""),
                     id);
  if (rows.empty()) return std::optional<v1::Change>();
  ASSIGN_OR_RETURN(v1::Change change, pg::ChangeFromRow(rows[0]));
  pqxx::result hosts = tx.exec_params(
      absl::StrCat("SELECT ", pg::kHostColumns,
                   " FROM change_hosts h WHERE h.change_id = $1 ORDER BY h.position"),
      id);
  pg::HostJsonCache parsed;
  for (const auto& r : hosts) {
    ASSIGN_OR_RETURN(*change.add_hosts(), pg::HostFromRow(r, &parsed));
  }
  std::vector<v1::Change> one = {std::move(change)};
  AddApprovals(tx, one);
  return std::optional<v1::Change>(std::move(one[0]));
}

void PgChangeStore::AddApprovals(pqxx::transaction_base& tx, std::vector<v1::Change>& changes) {
  if (changes.empty()) return;
  std::map<std::string, v1::Change*> by_id;
  std::vector<std::string> ids;
  for (auto& c : changes) {
    by_id[c.id()] = &c;
    ids.push_back(c.id());
  }
  pqxx::result rows =
      tx.exec_params(absl::StrCat("SELECT ", pg::kApprovalColumns,
                                  " FROM change_approvals a WHERE a.change_id = ANY($1::text[]) "
                                  "ORDER BY a.change_id, a.position"),
                     pg::TextArray(ids));
  for (const auto& r : rows) {
    *by_id[r["change_id"].as<std::string>()]->add_approvals() = pg::ApprovalFromRow(r);
  }
}

void PgChangeStore::InsertChange(pqxx::transaction_base& tx, const v1::Change& change) {
  pg::InsertRows(tx, "changes", {pg::ChangeRow(change)});
  std::vector<pg::RowValues> hosts;
  hosts.reserve(change.hosts_size());
  pg::HostJsonCache printed;
  for (int i = 0; i < change.hosts_size(); ++i) {
    hosts.push_back(pg::HostRow(change.id(), i, change.hosts(i), /*with_counters=*/true, &printed));
  }
  pg::InsertRows(tx, "change_hosts", hosts);
  // One row per statement: a duplicate or four-eyes violation then names its own row.
  for (int i = 0; i < change.approvals_size(); ++i) {
    pg::InsertRows(tx, "change_approvals", {pg::ApprovalRow(change, i, change.approvals(i))});
  }
  WriteHostStatuses(tx, nullptr, change);
}

namespace {

// A host row a step wrote: as it was stored (nullptr: a new host) and as it is now.
struct HostWrite {
  const v1::ChangeHost* was = nullptr;
  int was_position = 0;
  const v1::ChangeHost* now = nullptr;
  int position = 0;
};

// Writes host rows: a new one whole (an upsert), another by the columns that differ from how it
// was stored, the rows whose same columns differ in one UPDATE. A dispatch moves a host's
// state, wave, nonce and order time, an ack its state, times, message and values: its steps,
// impact and the rest are not parsed and stored again.
void WriteHostRows(pqxx::transaction_base& tx, const std::string& change_id,
                   const std::vector<HostWrite>& writes) {
  const std::vector<std::string> key = {"change_id", "host"};
  pg::HostJsonCache printed;
  std::vector<pg::RowValues> whole;
  std::map<std::string, std::vector<pg::RowValues>> by_columns;  // by the changed columns' names
  for (const HostWrite& w : writes) {
    pg::RowValues now =
        pg::HostRow(change_id, w.position, *w.now, /*with_counters=*/false, &printed);
    if (w.was == nullptr) {
      whole.push_back(std::move(now));
      continue;
    }
    pg::RowValues changed = pg::ChangedColumns(
        pg::HostRow(change_id, w.was_position, *w.was, /*with_counters=*/false, &printed), now,
        key);
    if (changed.columns.size() == key.size()) continue;  // only the counters differ
    std::vector<std::string> names;
    for (const pg::RowValues::Column& c : changed.columns) names.push_back(c.name);
    by_columns[absl::StrJoin(names, ",")].push_back(std::move(changed));
  }
  if (!whole.empty()) {
    pg::InsertRows(tx, "change_hosts", whole,
                   absl::StrCat("ON CONFLICT (change_id, host) DO UPDATE SET ",
                                whole[0].ExcludedAssignments(key)));
  }
  for (const auto& [unused, rows] : by_columns) pg::UpdateRows(tx, "change_hosts", rows, key);
}

}  // namespace

// Writes the host rows that are new or differ (fields or position) and deletes the hosts the
// step dropped.
void PgChangeStore::WriteHosts(pqxx::transaction_base& tx, const v1::Change& before,
                               const v1::Change& after) {
  std::map<std::string, std::pair<int, const v1::ChangeHost*>> old;
  for (int i = 0; i < before.hosts_size(); ++i) old[before.hosts(i).host()] = {i, &before.hosts(i)};
  std::vector<HostWrite> writes;
  for (int i = 0; i < after.hosts_size(); ++i) {
    const v1::ChangeHost& h = after.hosts(i);
    auto it = old.find(h.host());
    if (it == old.end()) {
      writes.push_back({nullptr, 0, &h, i});
      continue;
    }
    if (it->second.first != i || !MessageDifferencer::Equals(*it->second.second, h)) {
      writes.push_back({it->second.second, it->second.first, &h, i});
    }
    old.erase(it);
  }
  WriteHostRows(tx, after.id(), writes);
  if (!old.empty()) {
    std::vector<std::string> gone;
    gone.reserve(old.size());
    for (const auto& [host, unused] : old) gone.push_back(host);
    tx.exec_params("DELETE FROM change_hosts WHERE change_id = $1 AND host = ANY($2::text[])",
                   after.id(), pg::TextArray(gone));
  }
}

// Approvals are added by approver; one whose place or fields changed is rewritten, one the
// step dropped is deleted.
void PgChangeStore::WriteApprovals(pqxx::transaction_base& tx, const v1::Change& before,
                                   const v1::Change& after) {
  std::map<std::string, std::pair<int, const v1::ChangeApproval*>> old;
  for (int i = 0; i < before.approvals_size(); ++i) {
    old[before.approvals(i).approver()] = {i, &before.approvals(i)};
  }
  for (int i = 0; i < after.approvals_size(); ++i) {
    const v1::ChangeApproval& a = after.approvals(i);
    const pg::RowValues row = pg::ApprovalRow(after, i, a);
    auto it = old.find(a.approver());
    if (it == old.end()) {
      pg::InsertRows(tx, "change_approvals", {row});
      continue;
    }
    const bool same = it->second.first == i && MessageDifferencer::Equals(*it->second.second, a);
    old.erase(it);
    if (!same) {
      pg::UpdateRow(tx, "change_approvals", row, {"change_id", "approver", "proposed_by"},
                    "change_id = $1 AND approver = $2", {after.id(), a.approver()});
    }
  }
  for (const auto& [approver, unused] : old) {
    tx.exec_params("DELETE FROM change_approvals WHERE change_id = $1 AND approver = $2",
                   after.id(), approver);
  }
}

absl::Status PgChangeStore::CreateChange(const v1::Change& change,
                                         const std::vector<v1::AuditEntry>& audit) {
  RETURN_IF_ERROR(CheckChange(change));
  const std::string what = absl::StrCat("storing change ", change.id());
  try {
    ConnectionPool::Lease conn = pool_->Acquire();
    pqxx::work tx(*conn);
    if (!tx.exec_params("SELECT 1 FROM changes WHERE id = $1", change.id()).empty()) {
      return absl::AlreadyExistsError(absl::StrCat("change ", change.id(), " already exists"));
    }
    InsertChange(tx, change);
    InsertAudit(tx, audit);
    tx.commit();
    return absl::OkStatus();
  } catch (...) {
    return MapWriteError(*pool_, what, {&change});
  }
}

absl::StatusOr<std::optional<v1::Change>> PgChangeStore::GetChange(const std::string& id) {
  return pool_->Run<pqxx::read_transaction>(
      absl::StrCat("reading change ", id),
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::optional<v1::Change>> {
        ASSIGN_OR_RETURN(std::optional<v1::Change> change, ReadChange(tx, id, /*lock=*/false));
        if (!change.has_value()) return change;
        std::map<std::string, v1::ChangeHost*> by_host;
        for (auto& h : *change->mutable_hosts()) by_host[h.host()] = &h;
        pqxx::result rows = tx.exec_params(
            absl::StrCat("SELECT h.host, ", pg::kHostCounterColumns,
                         " FROM change_hosts h WHERE h.change_id = $1 AND (h.counters_before IS "
                         "NOT NULL OR h.counters_after IS NOT NULL OR h.measured IS NOT NULL)"),
            id);
        for (const auto& r : rows) {
          auto it = by_host.find(r["host"].as<std::string>());
          if (it != by_host.end()) RETURN_IF_ERROR(pg::MergeHostCounters(r, it->second));
        }
        return change;
      });
}

absl::Status PgChangeStore::UpdateHostCounters(const std::string& change_id,
                                               const std::string& host,
                                               const CountersStepFn& step) {
  const std::string what = absl::StrCat("storing the counters of change ", change_id, " on ", host);
  try {
    ConnectionPool::Lease conn = pool_->Acquire();
    pqxx::work tx(*conn);
    pqxx::result changes = tx.exec_params(
        absl::StrCat("SELECT ", pg::kChangeColumns, " FROM changes c WHERE c.id = $1"), change_id);
    if (changes.empty()) return absl::NotFoundError(absl::StrCat("no change ", change_id));
    ASSIGN_OR_RETURN(v1::Change change, pg::ChangeFromRow(changes[0]));
    // The host's row alone is locked: a workflow step on the change does not wait for it.
    pqxx::result hosts = tx.exec_params(
        absl::StrCat("SELECT ", pg::kHostColumns, ", ", pg::kHostCounterColumns,
                     " FROM change_hosts h WHERE h.change_id = $1 AND h.host = $2 FOR UPDATE"),
        change_id, host);
    if (hosts.empty()) {
      return absl::NotFoundError(absl::StrCat("change ", change_id, " has no host ", host));
    }
    ASSIGN_OR_RETURN(v1::ChangeHost h, pg::HostFromRow(hosts[0]));
    RETURN_IF_ERROR(pg::MergeHostCounters(hosts[0], &h));
    ASSIGN_OR_RETURN(HostCounters counters, step(change, h));
    if (counters.before.has_value()) *h.mutable_counters_before() = std::move(*counters.before);
    if (counters.after.has_value()) *h.mutable_counters_after() = std::move(*counters.after);
    if (counters.measured.has_value()) *h.mutable_measured() = std::move(*counters.measured);
    pg::UpdateRow(tx, "change_hosts", pg::HostCounterRow(h), {}, "change_id = $1 AND host = $2",
                  {change_id, host});
    tx.commit();
    return absl::OkStatus();
  } catch (...) {
    return MapWriteError(*pool_, what, {});
  }
}

absl::StatusOr<std::vector<v1::Change>> PgChangeStore::ListChanges(const ChangeQuery& query) {
  return pool_->Run<pqxx::read_transaction>(
      "listing changes",
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::Change>> {
        const std::string state = pg::ChangeStateText(query.state);
        pqxx::result rows = tx.exec_params(
            absl::StrCat("SELECT ", pg::kChangeColumns,
                         " FROM changes c WHERE ($1 = '' OR c.state = $1) ORDER BY c.seq DESC "
                         "LIMIT $2"),
            state, static_cast<int64_t>(query.limit));
        std::vector<v1::Change> out;
        out.reserve(rows.size());
        for (const auto& r : rows) {
          ASSIGN_OR_RETURN(out.emplace_back(), pg::ChangeFromRow(r));
        }
        AddApprovals(tx, out);
        return out;
      });
}

absl::StatusOr<v1::Change> PgChangeStore::UpdateChange(const std::string& id, const StepFn& step) {
  const std::string what = absl::StrCat("updating change ", id);
  std::vector<const v1::Change*> written;  // for naming what a violated constraint was about
  std::optional<ChangeUpdate> update;
  try {
    ConnectionPool::Lease conn = pool_->Acquire();
    pqxx::work tx(*conn);
    ASSIGN_OR_RETURN(std::optional<v1::Change> current, ReadChange(tx, id, /*lock=*/true));
    if (!current.has_value()) return absl::NotFoundError(absl::StrCat("no change ", id));
    ASSIGN_OR_RETURN(update, step(*current));
    if (update->change.id() != id) {
      return absl::InvalidArgumentError(
          absl::StrCat("change ", id, ": the step returned change '", update->change.id(), "'"));
    }
    RETURN_IF_ERROR(CheckChange(update->change));
    written.push_back(&update->change);
    if (update->created.has_value()) {
      RETURN_IF_ERROR(CheckChange(*update->created));
      if (!tx.exec_params("SELECT 1 FROM changes WHERE id = $1", update->created->id()).empty()) {
        return absl::AlreadyExistsError(absl::StrCat("change ", id, ": the change it makes, ",
                                                     update->created->id(), ", already exists"));
      }
      written.push_back(&*update->created);
      // First: the change row may name it (rolled_back_by).
      InsertChange(tx, *update->created);
    }
    if (RowDiffers(*current, update->change)) {
      pg::UpdateRow(tx, "changes", pg::ChangeRow(update->change), {"id"}, "id = $1", {id});
    }
    WriteHosts(tx, *current, update->change);
    WriteApprovals(tx, *current, update->change);
    WriteHostStatuses(tx, &*current, update->change);
    if (update->created.has_value()) WriteHostStatuses(tx, nullptr, *update->created);
    InsertAudit(tx, update->audit);
    tx.commit();
    return std::move(update->change);
  } catch (...) {
    return MapWriteError(*pool_, what, written);
  }
}

absl::Status PgChangeStore::UpdateChangeHosts(const std::string& id,
                                              const std::vector<std::string>& hosts,
                                              const HostsStepFn& step) {
  const std::string what = absl::StrCat("updating hosts of change ", id);
  try {
    ConnectionPool::Lease conn = pool_->Acquire();
    pqxx::work tx(*conn);
    pqxx::result rows = tx.exec_params(
        absl::StrCat("SELECT ", pg::kChangeColumns, " FROM changes c WHERE c.id = $1 FOR UPDATE"),
        id);
    if (rows.empty()) return absl::NotFoundError(absl::StrCat("no change ", id));
    ASSIGN_OR_RETURN(v1::Change current, pg::ChangeFromRow(rows[0]));

    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const std::string& h : hosts) {
      if (seen.insert(h).second) names.push_back(h);
    }
    std::map<std::string, std::pair<int, v1::ChangeHost>> found;  // by name: position, host
    pg::HostJsonCache parsed;
    for (size_t begin = 0; begin < names.size(); begin += kHostsPerQuery) {
      const size_t end = std::min(names.size(), begin + kHostsPerQuery);
      const std::vector<std::string> chunk(names.begin() + static_cast<std::ptrdiff_t>(begin),
                                           names.begin() + static_cast<std::ptrdiff_t>(end));
      pqxx::result host_rows = tx.exec_params(
          absl::StrCat("SELECT h.position, ", pg::kHostColumns,
                       " FROM change_hosts h WHERE h.change_id = $1 AND h.host = ANY($2::text[])"),
          id, pg::TextArray(chunk));
      for (const auto& r : host_rows) {
        ASSIGN_OR_RETURN(v1::ChangeHost h, pg::HostFromRow(r, &parsed));
        const std::string name = h.host();
        found[name] = {r["position"].as<int>(), std::move(h)};
      }
    }
    std::vector<v1::ChangeHost> mine;
    for (const std::string& name : names) {
      auto it = found.find(name);
      if (it != found.end()) mine.push_back(it->second.second);
    }

    // The other hosts, counted: each an index range of change_hosts_progress or
    // change_hosts_dispatched (migration 0014), never a read of every host.
    const std::string of_change =
        "FROM change_hosts WHERE change_id = $1 AND host <> ALL($3::text[])";
    const pqxx::row tally = tx.exec_params1(
        absl::StrCat(
            "SELECT EXISTS (SELECT 1 ", of_change,
            " AND state = 'PENDING' AND wave = $2) AS wave_pending, EXISTS (SELECT 1 ", of_change,
            " AND state = 'DISPATCHED' AND wave = $2) AS wave_dispatched, (SELECT count(*) ",
            of_change,
            " AND state = 'PRECONDITION_FAILED') AS precondition_failed, (SELECT "
            "(EXTRACT(EPOCH FROM min(dispatched_at)) * 1000000)::bigint ",
            of_change, " AND state = 'DISPATCHED') AS earliest_dispatched, EXISTS (SELECT 1 ",
            of_change, " AND state = 'DISPATCHED' AND dispatched_at IS NULL) AS undated"),
        id, current.current_wave(), pg::TextArray(names));
    OtherHosts others;
    others.wave_pending = tally["wave_pending"].as<bool>();
    others.wave_dispatched = tally["wave_dispatched"].as<bool>();
    others.precondition_failed = tally["precondition_failed"].as<uint32_t>();
    if (tally["undated"].as<bool>()) {
      others.earliest_dispatched = absl::InfinitePast();
    } else if (!tally["earliest_dispatched"].is_null()) {
      others.earliest_dispatched = absl::FromUnixMicros(tally["earliest_dispatched"].as<int64_t>());
    }

    ASSIGN_OR_RETURN(std::optional<HostsUpdate> update, step(current, mine, others));
    if (!update.has_value()) return absl::OkStatus();
    if (update->change.id() != id) {
      return absl::InvalidArgumentError(
          absl::StrCat("change ", id, ": the step returned change '", update->change.id(), "'"));
    }
    RETURN_IF_ERROR(CheckChange(update->change));
    v1::Change before, after;
    std::vector<HostWrite> changed;
    for (const v1::ChangeHost& h : update->hosts) {
      auto it = found.find(h.host());
      if (it == found.end()) {
        return absl::InvalidArgumentError(absl::StrCat("change ", id, ": the step returned host '",
                                                       h.host(), "', which it was not given"));
      }
      if (h.state() == v1::HOST_CHANGE_STATE_UNSPECIFIED) {
        return absl::InvalidArgumentError(
            absl::StrCat("change ", id, ", host '", h.host(), "': state is unspecified"));
      }
      *before.add_hosts() = it->second.second;
      *after.add_hosts() = h;
      if (!MessageDifferencer::Equals(it->second.second, h)) {
        changed.push_back({&it->second.second, it->second.first, &h, it->second.first});
      }
    }
    if (RowDiffers(current, update->change)) {
      pg::UpdateRow(tx, "changes", pg::ChangeRow(update->change), {"id"}, "id = $1", {id});
    }
    WriteHostRows(tx, id, changed);
    after.set_id(id);
    after.set_version(update->change.version());
    WriteHostStatuses(tx, &before, after);
    InsertAudit(tx, update->audit);
    tx.commit();
    return absl::OkStatus();
  } catch (...) {
    return MapWriteError(*pool_, what, {});
  }
}

absl::StatusOr<MeasuredChangeHosts> PgChangeStore::ListMeasuredChangeHosts(absl::Time since,
                                                                           uint32_t limit) {
  return pool_->Run<pqxx::read_transaction>(
      "listing the change hosts with a measured impact",
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<MeasuredChangeHosts> {
        // One more than the limit says whether it was reached; the windows are not read.
        pqxx::result rows = tx.exec_params(
            absl::StrCat("SELECT ", pg::kHostColumns,
                         ", NULL::text AS counters_before, NULL::text AS counters_after, "
                         "h.measured::text AS measured, x.platform AS platform "
                         "FROM change_hosts h LEFT JOIN hosts x ON x.name = h.host "
                         "WHERE h.measured IS NOT NULL AND h.finished_at >= $1::timestamptz "
                         "ORDER BY h.finished_at DESC, h.change_id, h.host LIMIT $2"),
            pg::Rfc3339(since), static_cast<int64_t>(limit) + 1);
        MeasuredChangeHosts out;
        for (const auto& r : rows) {
          if (out.hosts.size() == limit) {
            out.truncated = true;
            break;
          }
          MeasuredChangeHost m;
          m.change_id = r["change_id"].as<std::string>();
          ASSIGN_OR_RETURN(m.host, pg::HostFromRow(r));
          RETURN_IF_ERROR(pg::MergeHostCounters(r, &m.host));
          if (!r["platform"].is_null()) {
            v1::Platform_Parse(r["platform"].as<std::string>(), &m.platform);
          }
          out.hosts.push_back(std::move(m));
        }
        return out;
      });
}

absl::StatusOr<int64_t> PgChangeStore::SaveCostModelCalibration(
    const v1::CostModelCalibration& calibration, v1::AuditEntry audit) {
  if (calibration.saved_by().empty()) {
    return absl::InvalidArgumentError("calibration: saved_by is empty");
  }
  if (!calibration.has_since()) return absl::InvalidArgumentError("calibration: since is unset");
  v1::CostModelCalibration groups;
  *groups.mutable_groups() = calibration.groups();
  ASSIGN_OR_RETURN(std::string groups_json, ToJson(groups, /*pretty=*/false));
  const std::string what = "saving a cost model calibration";
  try {
    ConnectionPool::Lease conn = pool_->Acquire();
    pqxx::work tx(*conn);
    const std::string saved_at = pg::TimestampText(calibration.saved_at());
    const int64_t id =
        tx.exec_params1(
              "INSERT INTO cost_model_calibrations (saved_at, saved_by, since, truncated, "
              "input_count, groups) VALUES (COALESCE(NULLIF($1, '')::timestamptz, now()), $2, "
              "$3::timestamptz, $4, $5, $6::jsonb) RETURNING id",
              saved_at, calibration.saved_by(), pg::TimestampText(calibration.since()),
              calibration.truncated(), static_cast<int64_t>(calibration.input_count()),
              groups_json)[0]
            .as<int64_t>();
    using Type = pg::ColumnType;
    std::vector<pg::RowValues> inputs;
    for (const v1::CostModelCalibrationInput& in : calibration.inputs()) {
      ASSIGN_OR_RETURN(std::string measured, ToJson(in.measured(), /*pretty=*/false));
      pg::RowValues& row = inputs.emplace_back();
      row.Add("calibration_id", Type::kBigint, absl::StrCat(id));
      row.Add("change_id", Type::kText, in.change_id());
      row.Add("host", Type::kText, in.host());
      row.Add("platform", Type::kText, in.platform());
      row.Add("protection_before", Type::kText, in.protection_before());
      row.Add("protection_after", Type::kText, in.protection_after());
      row.Add("measured", Type::kJsonb, std::move(measured));
    }
    pg::InsertRows(tx, "cost_model_calibration_inputs", inputs);
    audit.set_detail(absl::StrCat(audit.detail(), " (calibration ", id, ")"));
    InsertAudit(tx, {audit});
    tx.commit();
    return id;
  } catch (...) {
    return MapWriteError(*pool_, what, {});
  }
}

absl::StatusOr<std::vector<v1::CostModelCalibration>> PgChangeStore::ListCostModelCalibrations(
    uint32_t limit) {
  return pool_->Run<pqxx::read_transaction>(
      "listing cost model calibrations",
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::CostModelCalibration>> {
        pqxx::result rows = tx.exec_params(
            "SELECT id, (EXTRACT(EPOCH FROM saved_at) * 1000000)::bigint AS saved_at, saved_by, "
            "(EXTRACT(EPOCH FROM since) * 1000000)::bigint AS since, truncated, input_count, "
            "groups::text AS groups FROM cost_model_calibrations ORDER BY id DESC LIMIT $1",
            static_cast<int64_t>(limit));
        std::vector<v1::CostModelCalibration> out;
        out.reserve(rows.size());
        for (const auto& r : rows) {
          v1::CostModelCalibration& c = out.emplace_back();
          const int64_t id = r["id"].as<int64_t>();
          RETURN_IF_ERROR(FromJson(r["groups"].as<std::string>(),
                                   absl::StrCat("calibration ", id, ", column groups"), &c,
                                   /*ignore_unknown=*/true));
          c.set_id(id);
          pg::SetTimestampFromMicros(r["saved_at"], c.mutable_saved_at());
          c.set_saved_by(r["saved_by"].as<std::string>());
          pg::SetTimestampFromMicros(r["since"], c.mutable_since());
          c.set_truncated(r["truncated"].as<bool>());
          c.set_input_count(r["input_count"].as<uint32_t>());
        }
        return out;
      });
}

absl::StatusOr<std::vector<v1::Change>> PgChangeStore::PendingForHost(const std::string& host,
                                                                      absl::Time now) {
  return pool_->Run<pqxx::read_transaction>(
      absl::StrCat("reading the pending orders of ", host),
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::Change>> {
        // The common answer (nothing) is one lookup on change_hosts (host, state).
        pqxx::result hosts = tx.exec_params(
            absl::StrCat("SELECT ", pg::kHostColumns,
                         " FROM change_hosts h WHERE h.host = $1 AND h.state = 'DISPATCHED' "
                         "AND h.order_not_after > $2::timestamptz"),
            host, pg::Rfc3339(now));
        std::vector<v1::Change> out;
        if (hosts.empty()) return out;
        std::map<std::string, v1::ChangeHost> by_change;
        std::vector<std::string> ids;
        for (const auto& r : hosts) {
          ASSIGN_OR_RETURN(v1::ChangeHost h, pg::HostFromRow(r));
          ids.push_back(r["change_id"].as<std::string>());
          by_change[ids.back()] = std::move(h);
        }
        pqxx::result changes = tx.exec_params(
            absl::StrCat("SELECT ", pg::kChangeColumns,
                         " FROM changes c WHERE c.id = ANY($1::text[]) ORDER BY c.seq"),
            pg::TextArray(ids));
        for (const auto& r : changes) {
          ASSIGN_OR_RETURN(v1::Change c, pg::ChangeFromRow(r));
          *c.add_hosts() = std::move(by_change[c.id()]);
          out.push_back(std::move(c));
        }
        AddApprovals(tx, out);
        return out;
      });
}

absl::StatusOr<std::map<std::string, std::vector<v1::Change>>> PgChangeStore::PendingForHosts(
    const std::vector<std::string>& hosts, absl::Time now) {
  using Pending = std::map<std::string, std::vector<v1::Change>>;
  return pool_->Run<pqxx::read_transaction>(
      absl::StrCat("reading the pending orders of ", hosts.size(), " hosts"),
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<Pending> {
        // The hosts' DISPATCHED rows, a chunk of hosts per lookup on change_hosts (host, state),
        // then each of their changes (with approvals) once.
        std::map<std::string, std::vector<v1::ChangeHost>> by_change;
        pg::HostJsonCache parsed;
        for (size_t begin = 0; begin < hosts.size(); begin += kHostsPerQuery) {
          const size_t end = std::min(hosts.size(), begin + kHostsPerQuery);
          std::vector<std::string> chunk(hosts.begin() + static_cast<std::ptrdiff_t>(begin),
                                         hosts.begin() + static_cast<std::ptrdiff_t>(end));
          pqxx::result rows = tx.exec_params(
              absl::StrCat("SELECT ", pg::kHostColumns,
                           " FROM change_hosts h WHERE h.host = ANY($1::text[]) AND h.state = "
                           "'DISPATCHED' AND h.order_not_after > $2::timestamptz"),
              pg::TextArray(chunk), pg::Rfc3339(now));
          for (const auto& r : rows) {
            ASSIGN_OR_RETURN(v1::ChangeHost h, pg::HostFromRow(r, &parsed));
            by_change[r["change_id"].as<std::string>()].push_back(std::move(h));
          }
        }
        Pending out;
        if (by_change.empty()) return out;
        std::vector<std::string> ids;
        ids.reserve(by_change.size());
        for (const auto& [id, unused] : by_change) ids.push_back(id);
        pqxx::result rows = tx.exec_params(
            absl::StrCat("SELECT ", pg::kChangeColumns,
                         " FROM changes c WHERE c.id = ANY($1::text[]) ORDER BY c.seq"),
            pg::TextArray(ids));
        std::vector<v1::Change> changes;
        changes.reserve(rows.size());
        for (const auto& r : rows) {
          ASSIGN_OR_RETURN(v1::Change c, pg::ChangeFromRow(r));
          changes.push_back(std::move(c));
        }
        AddApprovals(tx, changes);
        for (const v1::Change& c : changes) {  // oldest first
          for (v1::ChangeHost& h : by_change[c.id()]) {
            const std::string host = h.host();
            v1::Change& order = out[host].emplace_back(c);
            *order.add_hosts() = std::move(h);
          }
        }
        return out;
      });
}

absl::StatusOr<std::vector<std::string>> PgChangeStore::LiveChangeIds() {
  return pool_->Run<pqxx::read_transaction>(
      "listing live changes",
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<std::string>> {
        pqxx::result rows = tx.exec(
            "SELECT id FROM changes WHERE state IN ('APPROVED', 'ROLLING_OUT', 'HALTED') "
            "ORDER BY seq");
        std::vector<std::string> out;
        out.reserve(rows.size());
        for (const auto& r : rows) out.push_back(r["id"].as<std::string>());
        return out;
      });
}

absl::StatusOr<std::map<std::string, v1::HostChangeStatus>> PgChangeStore::HostStatuses(
    const std::vector<std::string>& hosts) {
  return pool_->Run<pqxx::read_transaction>(
      "reading the change status of hosts",
      [&](pqxx::read_transaction& tx)
          -> absl::StatusOr<std::map<std::string, v1::HostChangeStatus>> {
        std::map<std::string, v1::HostChangeStatus> out;
        for (size_t begin = 0; begin < hosts.size(); begin += kHostsPerQuery) {
          const size_t end = std::min(hosts.size(), begin + kHostsPerQuery);
          std::vector<std::string> chunk(hosts.begin() + static_cast<std::ptrdiff_t>(begin),
                                         hosts.begin() + static_cast<std::ptrdiff_t>(end));
          pqxx::result rows = tx.exec_params(
              absl::StrCat("SELECT ", pg::kHostStatusColumns,
                           " FROM host_change_status s WHERE s.host = ANY($1::text[])"),
              pg::TextArray(chunk));
          for (const auto& r : rows) out[r["host"].as<std::string>()] = pg::HostStatusFromRow(r);
        }
        return out;
      });
}

absl::StatusOr<ChangeStore::Drift> PgChangeStore::DriftedHosts(uint32_t limit) {
  return pool_->Run<pqxx::read_transaction>(
      "listing hosts whose applied change is not the desired one",
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<Drift> {
        Drift out;
        out.count = tx.exec1(
                          "SELECT count(*) FROM host_change_status "
                          "WHERE desired_change_id <> applied_change_id")[0]
                        .as<uint32_t>();
        for (const auto& r :
             tx.exec_params("SELECT host FROM host_change_status WHERE desired_change_id <> "
                            "applied_change_id ORDER BY host COLLATE \"C\" LIMIT $1",
                            static_cast<int64_t>(limit))) {
          out.hosts.push_back(r["host"].as<std::string>());
        }
        return out;
      });
}

absl::Status PgChangeStore::AppendAudit(const std::vector<v1::AuditEntry>& entries) {
  try {
    ConnectionPool::Lease conn = pool_->Acquire();
    pqxx::work tx(*conn);
    InsertAudit(tx, entries);
    tx.commit();
    return absl::OkStatus();
  } catch (...) {
    return MapWriteError(*pool_, "appending to the audit log", {});
  }
}

absl::StatusOr<std::vector<v1::AuditEntry>> PgChangeStore::ListAudit(const AuditQuery& query) {
  return pool_->Run<pqxx::read_transaction>(
      "reading the audit log",
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::AuditEntry>> {
        // An empty filter matches any entry.
        pqxx::result rows = tx.exec_params(
            absl::StrCat("SELECT ", pg::kAuditColumns,
                         " FROM audit_log l WHERE l.seq > $1 AND ($2::text = '' OR l.change_id = "
                         "$2::text) AND ($3::text = '' OR l.waiver_id = $3::text) "
                         "ORDER BY l.seq LIMIT $4"),
            query.after_seq, query.change_id, query.waiver_id, static_cast<int64_t>(query.limit));
        std::vector<v1::AuditEntry> out;
        out.reserve(rows.size());
        for (const auto& r : rows) out.push_back(pg::AuditFromRow(r));
        return out;
      });
}

absl::Status PgChangeStore::CreateWaiver(const v1::Waiver& waiver, const v1::AuditEntry& audit) {
  if (waiver.id().empty()) return absl::InvalidArgumentError("waiver: id is empty");
  if (!waiver.has_expires_at()) {
    return absl::InvalidArgumentError(absl::StrCat("waiver ", waiver.id(), ": no expires_at"));
  }
  v1::Waiver stored = waiver;
  if (stored.state() == v1::WAIVER_STATE_UNSPECIFIED) stored.set_state(v1::WAIVER_STATE_REQUESTED);
  const std::string what = absl::StrCat("storing waiver ", waiver.id());
  try {
    ConnectionPool::Lease conn = pool_->Acquire();
    pqxx::work tx(*conn);
    if (!tx.exec_params("SELECT 1 FROM waivers WHERE id = $1", waiver.id()).empty()) {
      return absl::AlreadyExistsError(absl::StrCat("waiver ", waiver.id(), " already exists"));
    }
    pg::InsertRows(tx, "waivers", {pg::WaiverRow(stored)});
    InsertAudit(tx, {audit});
    tx.commit();
    return absl::OkStatus();
  } catch (const pqxx::check_violation& e) {
    if (absl::StrContains(e.what(), "waivers_four_eyes")) {
      return absl::FailedPreconditionError(absl::StrCat(waiver.created_by(), " requested waiver ",
                                                        waiver.id(), " and cannot approve it"));
    }
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", FirstLine(e.what())));
  } catch (...) {
    return MapWriteError(*pool_, what, {});
  }
}

absl::StatusOr<v1::Waiver> PgChangeStore::UpdateWaiver(const std::string& id,
                                                       const WaiverStepFn& step) {
  const std::string what = absl::StrCat("updating waiver ", id);
  std::string created_by;
  try {
    ConnectionPool::Lease conn = pool_->Acquire();
    pqxx::work tx(*conn);
    pqxx::result rows = tx.exec_params(
        absl::StrCat("SELECT ", pg::kWaiverColumns, " FROM waivers w WHERE w.id = $1 FOR UPDATE"),
        id);
    if (rows.empty()) return absl::NotFoundError(absl::StrCat("no waiver ", id));
    const v1::Waiver current = pg::WaiverFromRow(rows[0]);
    created_by = current.created_by();
    ASSIGN_OR_RETURN(auto update, step(current));
    const v1::Waiver& next = update.first;
    if (next.id() != id) {
      return absl::InvalidArgumentError(
          absl::StrCat("waiver ", id, ": the step returned waiver '", next.id(), "'"));
    }
    created_by = next.created_by();
    pg::UpdateRow(tx, "waivers", pg::WaiverRow(next), {"id"}, "id = $1", {id});
    InsertAudit(tx, {update.second});
    tx.commit();
    return next;
  } catch (const pqxx::check_violation& e) {
    if (absl::StrContains(e.what(), "waivers_four_eyes")) {
      return absl::FailedPreconditionError(
          absl::StrCat(created_by, " requested waiver ", id, " and cannot approve it"));
    }
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", FirstLine(e.what())));
  } catch (...) {
    return MapWriteError(*pool_, what, {});
  }
}

absl::StatusOr<std::vector<v1::Waiver>> PgChangeStore::ListWaivers(bool include_inactive,
                                                                   absl::Time now) {
  return pool_->Run<pqxx::read_transaction>(
      "listing waivers",
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::Waiver>> {
        pqxx::result rows =
            tx.exec(absl::StrCat("SELECT ", pg::kWaiverColumns, " FROM waivers w ORDER BY w.id"));
        std::vector<v1::Waiver> out;
        for (const auto& r : rows) {
          v1::Waiver w = pg::WaiverFromRow(r);
          const absl::Time expires = absl::FromUnixSeconds(w.expires_at().seconds()) +
                                     absl::Nanoseconds(w.expires_at().nanos());
          if (w.state() == v1::WAIVER_STATE_APPROVED && expires <= now) {
            w.set_state(v1::WAIVER_STATE_EXPIRED);
          }
          if (!include_inactive && w.state() != v1::WAIVER_STATE_APPROVED) continue;
          out.push_back(std::move(w));
        }
        return out;
      });
}

}  // namespace

std::unique_ptr<ChangeStore> NewPgChangeStore(std::shared_ptr<ConnectionPool> pool) {
  return std::make_unique<PgChangeStore>(std::move(pool));
}

}  // namespace smbfleet::collector

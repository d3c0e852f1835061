#include "collector/store/postgres/history_store.h"

#include <functional>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/store/postgres/sql.h"

namespace smbfleet::collector {
namespace {

// Shares the advisory lock key space with the migrations' lock and the job claims.
constexpr char kHistoryLock[] = "smbfleet.history";

class PgHistoryStore : public HistoryStore {
 public:
  explicit PgHistoryStore(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}

  absl::StatusOr<HistoryPass> Maintain(absl::Time now, absl::Duration retention,
                                       int days_ahead) override {
    HistoryPass pass;
    const std::string at = pg::Rfc3339(now);
    absl::StatusOr<std::vector<std::string>> tables = pool_->Run<pqxx::read_transaction>(
        "listing the history tables",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<std::string>> {
          std::vector<std::string> out;
          for (const auto& r : tx.exec("SELECT table_name FROM history_tables ORDER BY 1")) {
            out.push_back(r[0].as<std::string>());
          }
          return out;
        });
    if (!tables.ok()) return tables.status();
    // Each partition in a transaction of its own. Attaching one locks its table's default
    // partition; holding those of several tables at once, while a reader holds some of them
    // and waits for another (reading a host reads postures, then host_benchmarks), deadlocked.
    for (const std::string& table : *tables) {
      for (int day = -1; day <= days_ahead; ++day) {
        absl::StatusOr<bool> locked =
            InPassTransaction("making a history partition", [&](pqxx::work& tx) {
              const pqxx::row made = tx.exec_params1(
                  "SELECT history_partition_create($1, "
                  "($2::timestamptz AT TIME ZONE 'UTC')::date + $3::integer), "
                  "$1 || '_p' || to_char(($2::timestamptz AT TIME ZONE 'UTC')::date "
                  "+ $3::integer, 'YYYYMMDD')",
                  table, at, day);
              if (made[0].as<bool>()) pass.created.push_back(made[1].as<std::string>());
            });
        if (!locked.ok()) return locked.status();
        if (!*locked) return pass;  // another collector's pass holds the lock: it goes on
        pass.ran = true;
      }
    }
    if (retention <= absl::ZeroDuration()) return pass;
    // Trimmed a table at a time, each in a transaction of its own, for the same reason
    // (migration 0020): dropping a day partition locks its table.
    std::vector<std::string> trimmed_tables = *tables;
    trimmed_tables.push_back("report_ids");
    for (const std::string& table : trimmed_tables) {
      absl::StatusOr<bool> locked = InPassTransaction("trimming the history", [&](pqxx::work& tx) {
        for (const auto& r :
             tx.exec_params("SELECT relation, outcome, COALESCE(rows, 0) FROM history_trim_table("
                            "$1, $2::timestamptz - make_interval(secs => $3))",
                            table, at, absl::ToDoubleSeconds(retention))) {
          const std::string outcome = r[1].as<std::string>();
          if (outcome == "dropped") {
            pass.dropped.push_back(r[0].as<std::string>());
          } else if (outcome == "kept") {
            pass.kept.push_back(r[0].as<std::string>());
          } else {
            pass.trimmed_rows += r[2].as<int64_t>();
          }
        }
      });
      if (!locked.ok()) return locked.status();
      if (!*locked) return pass;  // another collector's pass holds the lock: it goes on
    }
    return pass;
  }

 private:
  // Runs `step` in a transaction of its own under the pass's lock and commits it; false (and
  // `step` not run) when another collector's pass holds the lock.
  absl::StatusOr<bool> InPassTransaction(const char* what,
                                         const std::function<void(pqxx::work&)>& step) {
    return pool_->Run<pqxx::work>(what, [&](pqxx::work& tx) -> absl::StatusOr<bool> {
      if (!Lock(tx)) return false;
      step(tx);
      tx.commit();
      return true;
    });
  }

  // In a pass's transaction: its lock waits and time bounded, and the lock of the pass across
  // collectors taken; false when another collector holds it.
  static bool Lock(pqxx::work& tx) {
    // Dropping or attaching a partition waits for the readers and writers of its table, and
    // they queue behind it: give up soon rather than stall reports (the next pass tries again).
    tx.exec("SET LOCAL lock_timeout = '10s'");
    tx.exec("SET LOCAL statement_timeout = '10min'");
    return tx.exec_params1("SELECT pg_try_advisory_xact_lock(hashtext($1))", kHistoryLock)[0]
        .as<bool>();
  }

  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace

std::unique_ptr<HistoryStore> NewPgHistoryStore(std::shared_ptr<ConnectionPool> pool) {
  return std::make_unique<PgHistoryStore>(std::move(pool));
}

}  // namespace smbfleet::collector

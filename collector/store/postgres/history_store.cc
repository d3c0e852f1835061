#include "collector/store/postgres/history_store.h"

#include <pqxx/pqxx>
#include <utility>

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
    return pool_->Run<pqxx::work>(
        "maintaining the history partitions", [&](pqxx::work& tx) -> absl::StatusOr<HistoryPass> {
          HistoryPass pass;
          // Dropping a partition waits for the writers of its table, and writers queue behind
          // it: give up soon rather than stall reports (the next pass tries again).
          tx.exec("SET LOCAL lock_timeout = '10s'");
          tx.exec("SET LOCAL statement_timeout = '10min'");
          if (!tx.exec_params1("SELECT pg_try_advisory_xact_lock(hashtext($1))", kHistoryLock)[0]
                   .as<bool>()) {
            return pass;
          }
          pass.ran = true;
          const std::string at = pg::Rfc3339(now);
          for (const auto& r : tx.exec_params(
                   "SELECT history_partitions_ensure(($1::timestamptz AT TIME ZONE 'UTC')::date "
                   "- 1, $2)",
                   at, days_ahead + 2)) {
            pass.created.push_back(r[0].as<std::string>());
          }
          if (retention > absl::ZeroDuration()) {
            for (const auto& r :
                 tx.exec_params("SELECT relation, outcome, COALESCE(rows, 0) FROM history_trim("
                                "$1::timestamptz - make_interval(secs => $2))",
                                at, absl::ToDoubleSeconds(retention))) {
              const std::string outcome = r[1].as<std::string>();
              if (outcome == "dropped") {
                pass.dropped.push_back(r[0].as<std::string>());
              } else if (outcome == "kept") {
                pass.kept.push_back(r[0].as<std::string>());
              } else {
                pass.trimmed_rows += r[2].as<int64_t>();
              }
            }
          }
          tx.commit();
          return pass;
        });
  }

 private:
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace

std::unique_ptr<HistoryStore> NewPgHistoryStore(std::shared_ptr<ConnectionPool> pool) {
  return std::make_unique<PgHistoryStore>(std::move(pool));
}

}  // namespace smbfleet::collector

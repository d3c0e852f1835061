#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_CONNECTION_POOL_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_CONNECTION_POOL_H_

#include <atomic>
#include <deque>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/metrics/metrics.h"
#include "collector/store/postgres/dsn.h"

namespace smbfleet::collector {

// How long a call may wait for the pool and hold a connection (docs/collector.md "database").
struct PoolOptions {
  // Every connection is leased: the call fails UNAVAILABLE "database busy" after this wait.
  absl::Duration acquire_timeout = absl::Seconds(5);
  // A lease held longer has its socket shut down, so that a server that stopped answering
  // (where statement_timeout cannot fire) fails the call instead of parking its thread. Set it
  // above the server's statement_timeout.
  absl::Duration lease_limit = absl::Seconds(35);
};

// A few connections, handed out one at a time (libpqxx allows one transaction per connection
// at a time). A broken connection is dropped and replaced on the next lease; when the server is
// found unreachable every idle connection is dropped, one line is logged, and until a new
// connection opens again one call at a time tries while the others fail at once.
class ConnectionPool {
 public:
  ConnectionPool(std::string dsn, int size, PoolOptions options = {});
  ~ConnectionPool();

  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<pqxx::connection> c)
        : pool_(pool), conn_(std::move(c)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (conn_) pool_->Release(std::move(conn_));
    }
    pqxx::connection& operator*() { return *conn_; }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<pqxx::connection> conn_;
  };

  // Where the wait for a connection and failed calls are counted (not owned; null: nowhere).
  void SetMetrics(Metrics* metrics) { metrics_.store(metrics); }

  // Waits up to acquire_timeout while every connection is leased (then throws DatabaseBusy).
  // Throws what pqxx throws when a new connection cannot be opened, or DatabaseUnreachable.
  Lease Acquire();

  // In a catch block: counts the database error (as `operation`, or as a connection's when the
  // connection broke), notes an outage, and returns MapPgException's status for it.
  absl::Status Failed(DatabaseOperation operation, absl::string_view what);

  // Runs fn(tx) in a new Tx (pqxx::work, pqxx::read_transaction) on a leased connection and
  // returns what it returns (a Status or StatusOr); a database exception becomes a Status that
  // names `what`. A writing fn commits itself; an uncommitted work is rolled back.
  template <typename Tx, typename Fn>
  auto Run(absl::string_view what, Fn fn) -> decltype(fn(std::declval<Tx&>())) {
    try {
      Lease conn = Acquire();
      Tx tx(*conn);
      return fn(tx);
    } catch (...) {
      return Failed(std::is_same_v<Tx, pqxx::read_transaction> ? DatabaseOperation::kRead
                                                               : DatabaseOperation::kWrite,
                    what);
    }
  }
  // Runs fn(tx) on a pqxx::nontransaction, for one statement: PostgreSQL runs it as its own
  // transaction (all or nothing, committed before its answer), without the round trips of a
  // BEGIN and a COMMIT. `operation` is how a failure is counted; otherwise as Run.
  template <typename Fn>
  auto RunStatement(DatabaseOperation operation, absl::string_view what, Fn fn)
      -> decltype(fn(std::declval<pqxx::nontransaction&>())) {
    try {
      Lease conn = Acquire();
      pqxx::nontransaction tx(*conn);
      return fn(tx);
    } catch (...) {
      return Failed(operation, what);
    }
  }

  // Shutdown's last resort, at its deadline when the database is stuck: shuts down the socket of
  // every leased connection, so the calls on them fail UNAVAILABLE now, and fails every later
  // Acquire at once (a background job's next try must not wait connect_timeout on a server
  // that does not answer). Returns how many leases it cut.
  size_t Close();
  const std::string& dsn() const { return dsn_; }
  // Whether the last attempt found the server unreachable (for tests and readiness).
  bool unreachable() const;

 private:
  struct Leased {
    absl::Time since = absl::InfinitePast();
    bool cut = false;
    absl::Duration cut_after = absl::ZeroDuration();  // how long it had been held when cut
  };

  void Release(std::unique_ptr<pqxx::connection> c);
  std::unique_ptr<pqxx::connection> Open();
  void MarkReachable();
  void MarkUnreachable(const std::string& why);
  void WatchdogLoop();
  void CutLocked(pqxx::connection* conn, Leased* leased) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool CanLease() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || !idle_.empty() || open_ < capacity_;
  }

  const std::string dsn_;
  const int capacity_;
  const PoolOptions options_;
  std::atomic<Metrics*> metrics_{nullptr};
  mutable absl::Mutex mu_;
  std::deque<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<pqxx::connection*, Leased> leased_ ABSL_GUARDED_BY(mu_);
  // The outage: since when, why, how many calls failed, and whether a call is trying a new
  // connection right now.
  bool unreachable_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time unreachable_since_ ABSL_GUARDED_BY(mu_);
  std::string unreachable_why_ ABSL_GUARDED_BY(mu_);
  int64_t failed_in_outage_ ABSL_GUARDED_BY(mu_) = 0;
  bool probing_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;  // by Close(), for good
  std::thread watchdog_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_CONNECTION_POOL_H_

#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_CONNECTION_POOL_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_CONNECTION_POOL_H_

#include <atomic>
#include <deque>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "collector/metrics/metrics.h"
#include "collector/store/postgres/dsn.h"

namespace smbfleet::collector {

// A few connections, handed out one at a time (libpqxx allows one transaction per connection
// at a time); a broken connection is dropped and replaced on the next lease.
class ConnectionPool {
 public:
  ConnectionPool(std::string dsn, int size) : dsn_(std::move(dsn)), capacity_(size) {}

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

  // Blocks while every connection is leased. Throws what pqxx throws when a new connection
  // cannot be opened.
  Lease Acquire();

  // In a catch block: counts the database error (as `operation`, or as a connection's when the
  // connection broke) and returns MapPgException's status for it.
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
  const std::string& dsn() const { return dsn_; }

 private:
  void Release(std::unique_ptr<pqxx::connection> c);
  bool CanLease() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !idle_.empty() || open_ < capacity_;
  }

  const std::string dsn_;
  const int capacity_;
  std::atomic<Metrics*> metrics_{nullptr};
  absl::Mutex mu_;
  std::deque<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_CONNECTION_POOL_H_

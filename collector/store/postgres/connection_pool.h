#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_CONNECTION_POOL_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_CONNECTION_POOL_H_

#include <deque>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

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

  // Blocks while every connection is leased. Throws what pqxx throws when a new connection
  // cannot be opened.
  Lease Acquire();
  const std::string& dsn() const { return dsn_; }

 private:
  void Release(std::unique_ptr<pqxx::connection> c);
  bool CanLease() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !idle_.empty() || open_ < capacity_;
  }

  const std::string dsn_;
  const int capacity_;
  absl::Mutex mu_;
  std::deque<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_CONNECTION_POOL_H_

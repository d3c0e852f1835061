#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

ConnectionPool::Lease ConnectionPool::Acquire() {
  const absl::Time start = absl::Now();
  std::unique_ptr<pqxx::connection> idle;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &ConnectionPool::CanLease));
    if (!idle_.empty()) {
      idle = std::move(idle_.front());
      idle_.pop_front();
    } else {
      ++open_;
    }
  }
  // The wait for a free slot only; opening a new connection is not waiting for the pool.
  if (Metrics* m = metrics_.load()) m->DatabasePoolWait(absl::Now() - start);
  if (idle) return Lease(this, std::move(idle));
  try {
    return Lease(this, std::make_unique<pqxx::connection>(dsn_));
  } catch (...) {
    absl::MutexLock lock(&mu_);
    --open_;
    throw;
  }
}

absl::Status ConnectionPool::Failed(DatabaseOperation operation, absl::string_view what) {
  if (Metrics* m = metrics_.load()) {
    try {
      throw;
    } catch (const pqxx::broken_connection&) {
      operation = DatabaseOperation::kConnect;
    } catch (...) {
    }
    m->DatabaseError(operation);
  }
  return MapPgException(dsn_, what);
}

void ConnectionPool::Release(std::unique_ptr<pqxx::connection> c) {
  absl::MutexLock lock(&mu_);
  if (c->is_open()) {
    idle_.push_back(std::move(c));
  } else {
    --open_;
  }
}

}  // namespace smbfleet::collector

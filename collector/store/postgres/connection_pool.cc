#include "collector/store/postgres/connection_pool.h"

namespace smbfleet::collector {

ConnectionPool::Lease ConnectionPool::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &ConnectionPool::CanLease));
    if (!idle_.empty()) {
      auto c = std::move(idle_.front());
      idle_.pop_front();
      return Lease(this, std::move(c));
    }
    ++open_;
  }
  try {
    return Lease(this, std::make_unique<pqxx::connection>(dsn_));
  } catch (...) {
    absl::MutexLock lock(&mu_);
    --open_;
    throw;
  }
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

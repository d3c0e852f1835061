#include "collector/store/postgres/connection_pool.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace smbfleet::collector {
namespace {

// Set by Release when the watchdog cut the lease being released (the caller's catch block,
// on the same thread, then says so instead of "server closed the connection").
thread_local absl::Duration t_cut_after = absl::ZeroDuration();

// An idle connection whose server hung up (a restart, an administrator's terminate: the FIN
// follows the FATAL message) is not leased. Only the hang-up counts: a readable socket alone
// may be a TLS message the library has not read yet.
bool IdleLooksBroken(const pqxx::connection& c) {
  if (!c.is_open()) return true;
  pollfd p{c.sock(), POLLRDHUP, 0};
  if (p.fd < 0) return true;
  return poll(&p, 1, 0) < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace

ConnectionPool::ConnectionPool(std::string dsn, int size, PoolOptions options)
    : dsn_(std::move(dsn)),
      capacity_(size),
      options_(options),
      watchdog_([this] { WatchdogLoop(); }) {}

ConnectionPool::~ConnectionPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  watchdog_.join();
}

ConnectionPool::Lease ConnectionPool::Acquire() {
  t_cut_after = absl::ZeroDuration();
  const absl::Time start = absl::Now();
  std::vector<std::unique_ptr<pqxx::connection>> stale;  // closed outside the lock
  std::unique_ptr<pqxx::connection> conn;
  bool probe = false;
  {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(this, &ConnectionPool::CanLease),
                              options_.acquire_timeout)) {
      throw DatabaseBusy(absl::StrCat("none of ", capacity_, " connections free within ",
                                      absl::FormatDuration(options_.acquire_timeout)));
    }
    if (closed_) {
      throw DatabaseUnreachable(
          absl::StrCat("PostgreSQL at ", RedactDsn(dsn_), ": the collector is stopping"));
    }
    while (!idle_.empty() && conn == nullptr) {
      std::unique_ptr<pqxx::connection> c = std::move(idle_.front());
      idle_.pop_front();
      if (IdleLooksBroken(*c)) {
        --open_;
        stale.push_back(std::move(c));
      } else {
        conn = std::move(c);
      }
    }
    if (conn != nullptr) {
      leased_[conn.get()] = Leased{absl::Now()};
    } else {
      if (unreachable_ && probing_) {
        ++failed_in_outage_;
        throw DatabaseUnreachable(
            absl::StrCat("PostgreSQL at ", RedactDsn(dsn_), " is unreachable since ",
                         absl::FormatTime("%H:%M:%S", unreachable_since_, absl::UTCTimeZone()),
                         " UTC: ", unreachable_why_));
      }
      ++open_;
      probe = unreachable_;
      probing_ = probing_ || probe;
    }
  }
  // The wait for a free slot only; opening a new connection is not waiting for the pool.
  if (Metrics* m = metrics_.load()) m->DatabasePoolWait(absl::Now() - start);
  if (conn != nullptr) return Lease(this, std::move(conn));
  try {
    conn = std::make_unique<pqxx::connection>(dsn_);
  } catch (...) {
    absl::MutexLock lock(&mu_);
    --open_;
    if (probe) probing_ = false;
    throw;
  }
  {
    absl::MutexLock lock(&mu_);
    if (probe) probing_ = false;
    leased_[conn.get()] = Leased{absl::Now()};
  }
  MarkReachable();
  return Lease(this, std::move(conn));
}

absl::Status ConnectionPool::Failed(DatabaseOperation operation, absl::string_view what) {
  const bool unreachable = InFlightMeansUnreachable();
  if (unreachable) operation = DatabaseOperation::kConnect;
  if (Metrics* m = metrics_.load()) m->DatabaseError(operation);
  absl::Status status = MapPgException(dsn_, what);
  const absl::Duration cut = std::exchange(t_cut_after, absl::ZeroDuration());
  if (cut > absl::ZeroDuration()) {
    status = absl::UnavailableError(absl::StrCat(
        what, ": PostgreSQL at ", RedactDsn(dsn_), " did not answer within ",
        absl::FormatDuration(absl::Trunc(cut, absl::Milliseconds(1))), "; connection closed"));
  }
  if (unreachable || cut > absl::ZeroDuration()) MarkUnreachable(std::string(status.message()));
  return status;
}

bool ConnectionPool::unreachable() const {
  absl::MutexLock lock(&mu_);
  return unreachable_;
}

void ConnectionPool::MarkUnreachable(const std::string& why) {
  std::deque<std::unique_ptr<pqxx::connection>> idle;  // likely broken too; closed unlocked
  {
    absl::MutexLock lock(&mu_);
    if (unreachable_) {
      ++failed_in_outage_;
      return;
    }
    unreachable_ = true;
    unreachable_since_ = absl::Now();
    unreachable_why_ = why;
    failed_in_outage_ = 1;
    open_ -= static_cast<int>(idle_.size());
    idle.swap(idle_);
  }
  Logger("collector")
      ->warn("database unreachable: {}; calls fail with UNAVAILABLE until it answers again",
             LogSafe(why));
}

void ConnectionPool::MarkReachable() {
  absl::Duration down;
  int64_t failed = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!unreachable_) return;
    unreachable_ = false;
    down = absl::Now() - unreachable_since_;
    failed = failed_in_outage_;
  }
  Logger("collector")
      ->info("database reachable again at {} after {} ({} call(s) failed meanwhile)",
             RedactDsn(dsn_), absl::FormatDuration(absl::Trunc(down, absl::Milliseconds(1))),
             failed);
}

void ConnectionPool::Release(std::unique_ptr<pqxx::connection> c) {
  std::unique_ptr<pqxx::connection> drop;  // destroyed after the lock is released
  absl::MutexLock lock(&mu_);
  bool cut = false;
  if (auto it = leased_.find(c.get()); it != leased_.end()) {
    cut = it->second.cut;
    if (cut) t_cut_after = std::max(it->second.cut_after, absl::Nanoseconds(1));
    leased_.erase(it);
  }
  if (!cut && !unreachable_ && c->is_open()) {
    idle_.push_back(std::move(c));
  } else {
    --open_;
    drop = std::move(c);
  }
}

void ConnectionPool::WatchdogLoop() {
  absl::MutexLock lock(&mu_);
  const absl::Duration tick =
      std::clamp(options_.lease_limit / 10, absl::Milliseconds(50), absl::Seconds(1));
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), tick)) {
    const absl::Time now = absl::Now();
    for (auto& [conn, leased] : leased_) {
      if (now - leased.since >= options_.lease_limit) CutLocked(conn, &leased);
    }
  }
}

void ConnectionPool::CutLocked(pqxx::connection* conn, Leased* leased) {
  if (leased->cut) return;
  leased->cut = true;
  leased->cut_after = absl::Now() - leased->since;
  // Not close(): the leasing thread still owns the descriptor. Its blocked read returns.
  if (int fd = conn->sock(); fd >= 0) shutdown(fd, SHUT_RDWR);
}

size_t ConnectionPool::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  size_t cut = 0;
  for (auto& [conn, leased] : leased_) {
    cut += !leased.cut;
    CutLocked(conn, &leased);
  }
  return cut;
}

}  // namespace smbfleet::collector

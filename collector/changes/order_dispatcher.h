#ifndef SMBFLEET_COLLECTOR_CHANGES_ORDER_DISPATCHER_H_
#define SMBFLEET_COLLECTOR_CHANGES_ORDER_DISPATCHER_H_

// Sends change orders down the Watch streams this collector process holds. Two entries:
// the OrderSignal handler ("these hosts have new orders", from this process or, through
// PostgreSQL NOTIFY, from another) and a new Watch stream (its pending orders, minus the ones
// the agent says it completed). The orders themselves always come from the ChangeStore.
//
// Cost: per signalled host one hash lookup in the stream registry; the hosts whose stream is
// here are read from the store together (PendingForHosts, kHostsPerRead at a time), so a
// wave's dispatch is a few reads, not one per host. No scan of every stream, no thread per
// agent. An order of a v2 approval carries its host's order and inclusion proof: the Merkle
// tree of a change is built once from the whole change (one GetChange) and kept for the next
// hosts of the change (kTreesKept changes), so an order's size grows with log2(hosts).

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/metrics/metrics.h"
#include "collector/push/push_router.h"
#include "collector/store/change_store.h"
#include "common/approval_signing.h"

namespace smbfleet::collector::changes {

class OrderDispatcher {
 public:
  using Clock = std::function<absl::Time()>;
  OrderDispatcher(ChangeStore* changes, PushRouter* router, Clock clock = absl::Now)
      : changes_(changes), router_(router), clock_(std::move(clock)) {}

  // Counts the orders sent (not owned; may stay null). Set before use.
  void SetMetrics(Metrics* metrics) { metrics_ = metrics; }

  // Hosts read from the store in one PendingForHosts.
  static constexpr size_t kHostsPerRead = 1000;
  // Changes whose approval tree is kept (the newest built).
  static constexpr size_t kTreesKept = 4;

  // The OrderSignal handler.
  void HostsHaveOrders(const std::vector<std::string>& hosts);
  // A Watch stream of `host` opened here. Returns how many orders were sent.
  size_t Connected(const std::string& host, const std::vector<std::string>& completed_change_ids);

 private:
  size_t SendPending(const std::string& host, const std::vector<std::string>& completed);
  // Sends `pending` (orders of `host`) but those in `completed`; stops at the first the stream
  // refuses. Returns how many were sent.
  size_t SendOrders(const std::string& host, const std::vector<smbfleet::v1::Change>& pending,
                    const std::vector<std::string>& completed);

  // The tree of `change`'s v2 approval (`change` as the pending read gives it, with only some
  // of its hosts); nullptr for a v1 approval, and when the stored change no longer hashes to
  // the tree head its approvers signed (the agent refuses that order). An error when the whole
  // change cannot be read.
  absl::StatusOr<std::shared_ptr<const ApprovalHostTree>> TreeOf(
      const smbfleet::v1::Change& change);

  ChangeStore* changes_;
  PushRouter* router_;
  Clock clock_;
  Metrics* metrics_ = nullptr;
  absl::Mutex trees_mu_;
  // By the approval payload's bytes (change id, version, nonce and tree head), newest last.
  std::deque<std::pair<std::string, std::shared_ptr<const ApprovalHostTree>>> trees_
      ABSL_GUARDED_BY(trees_mu_);
};

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_ORDER_DISPATCHER_H_

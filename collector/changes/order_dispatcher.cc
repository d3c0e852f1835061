#include "collector/changes/order_dispatcher.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/changes/approval_payload.h"
#include "collector/changes/change_service.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace smbfleet::collector::changes {

void OrderDispatcher::HostsHaveOrders(const std::vector<std::string>& hosts) {
  const absl::Time start = absl::Now();
  std::vector<std::string> here;  // the hosts whose stream this process holds
  for (const std::string& host : hosts) {
    if (router_->Connected(host)) here.push_back(host);  // else another process, or nobody
  }
  size_t sent = 0, reached = 0;
  for (size_t begin = 0; begin < here.size(); begin += kHostsPerRead) {
    const size_t end = std::min(here.size(), begin + kHostsPerRead);
    const std::vector<std::string> batch(here.begin() + static_cast<std::ptrdiff_t>(begin),
                                         here.begin() + static_cast<std::ptrdiff_t>(end));
    auto pending = changes_->PendingForHosts(batch, clock_());
    if (!pending.ok()) {
      // Those agents get them on their next reconnect or the next signal.
      Logger("collector")
          ->warn("pending orders of {} hosts not read: {}", batch.size(),
                 LogSafe(pending.status()));
      continue;
    }
    for (const auto& [host, orders] : *pending) {
      const size_t n = SendOrders(host, orders, {});
      sent += n;
      if (n > 0) ++reached;
    }
  }
  if (metrics_ != nullptr && sent > 0) metrics_->OrdersSent(sent);
  if (sent > 0) {
    Logger("collector")
        ->info("sent {} change orders to {} hosts in {} ms", sent, reached,
               absl::ToInt64Milliseconds(absl::Now() - start));
  }
}

size_t OrderDispatcher::Connected(const std::string& host,
                                  const std::vector<std::string>& completed_change_ids) {
  return SendPending(host, completed_change_ids);
}

size_t OrderDispatcher::SendPending(const std::string& host,
                                    const std::vector<std::string>& completed) {
  auto pending = changes_->PendingForHost(host, clock_());
  if (!pending.ok()) {
    // The agent gets them on its next reconnect or the next signal.
    Logger("collector")
        ->warn("pending orders of {} not read: {}", LogSafe(host), LogSafe(pending.status()));
    return 0;
  }
  const size_t sent = SendOrders(host, *pending, completed);
  if (metrics_ != nullptr && sent > 0) metrics_->OrdersSent(sent);
  if (sent > 0) Logger("collector")->info("sent {} change orders to {}", sent, LogSafe(host));
  return sent;
}

absl::StatusOr<std::shared_ptr<const ApprovalHostTree>> OrderDispatcher::TreeOf(
    const smbfleet::v1::Change& change) {
  smbfleet::v1::ApprovalPayload payload;
  if (!payload.ParseFromString(change.approval_payload()) ||
      payload.format() != kApprovalFormatV2) {
    return nullptr;  // v1 lists every host; an unparsable payload the agent refuses
  }
  {
    absl::MutexLock lock(&trees_mu_);
    for (const auto& [key, tree] : trees_) {
      if (key == change.approval_payload()) return tree;
    }
  }
  ASSIGN_OR_RETURN(std::optional<smbfleet::v1::Change> whole, changes_->GetChange(change.id()));
  if (!whole.has_value()) {
    return absl::NotFoundError(absl::StrCat("change ", change.id(), " is gone"));
  }
  ASSIGN_OR_RETURN(ApprovalHostTree tree, ApprovalTreeOf(*whole));
  if (tree.root() != payload.hosts_root() || tree.size() != payload.host_count()) {
    // Rewritten in the database since it was signed: the order goes without a proof, and the
    // agent refuses it and says why, which shows on the change.
    Logger("collector")
        ->warn(
            "change {}: its {} hosts do not hash to the tree head its approvers signed; "
            "its orders carry no inclusion proof",
            change.id(), tree.size());
    return nullptr;
  }
  auto shared = std::make_shared<const ApprovalHostTree>(std::move(tree));
  absl::MutexLock lock(&trees_mu_);
  trees_.emplace_back(change.approval_payload(), shared);
  if (trees_.size() > kTreesKept) trees_.pop_front();
  return shared;
}

size_t OrderDispatcher::SendOrders(const std::string& host,
                                   const std::vector<smbfleet::v1::Change>& pending,
                                   const std::vector<std::string>& completed) {
  size_t sent = 0;
  for (const auto& change : pending) {
    if (std::find(completed.begin(), completed.end(), change.id()) != completed.end()) continue;
    absl::StatusOr<std::shared_ptr<const ApprovalHostTree>> tree = TreeOf(change);
    if (!tree.ok()) {
      // Not read: the order is left for the next signal or reconnect.
      Logger("collector")
          ->warn("order of change {} for {} not sent: {}", change.id(), LogSafe(host),
                 LogSafe(tree.status()));
      continue;
    }
    smbfleet::v1::WatchResponse message;
    *message.mutable_change_order() = OrderFor(change, host, tree->get());
    if (!router_->Send(host, message)) break;
    ++sent;
  }
  return sent;
}

}  // namespace smbfleet::collector::changes

#include "collector/changes/order_dispatcher.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "collector/changes/change_service.h"
#include "common/logging.h"

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

size_t OrderDispatcher::SendOrders(const std::string& host,
                                   const std::vector<smbfleet::v1::Change>& pending,
                                   const std::vector<std::string>& completed) {
  size_t sent = 0;
  for (const auto& change : pending) {
    if (std::find(completed.begin(), completed.end(), change.id()) != completed.end()) continue;
    smbfleet::v1::WatchResponse message;
    *message.mutable_change_order() = OrderFor(change, host);
    if (!router_->Send(host, message)) break;
    ++sent;
  }
  return sent;
}

}  // namespace smbfleet::collector::changes

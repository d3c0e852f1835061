#include "collector/changes/order_dispatcher.h"

#include <algorithm>

#include "collector/changes/change_service.h"
#include "common/logging.h"

namespace smbfleet::collector::changes {

void OrderDispatcher::HostsHaveOrders(const std::vector<std::string>& hosts) {
  for (const std::string& host : hosts) {
    if (!router_->Connected(host)) continue;  // another process holds it, or nobody
    SendPending(host, {});
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
  size_t sent = 0;
  for (const auto& change : *pending) {
    if (std::find(completed.begin(), completed.end(), change.id()) != completed.end()) continue;
    smbfleet::v1::WatchResponse message;
    *message.mutable_change_order() = OrderFor(change, host);
    if (!router_->Send(host, message)) break;
    ++sent;
  }
  if (metrics_ != nullptr && sent > 0) metrics_->OrdersSent(sent);
  if (sent > 0) Logger("collector")->info("sent {} change orders to {}", sent, LogSafe(host));
  return sent;
}

}  // namespace smbfleet::collector::changes

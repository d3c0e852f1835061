#ifndef SMBFLEET_COLLECTOR_PUSH_ORDER_SIGNAL_H_
#define SMBFLEET_COLLECTOR_PUSH_ORDER_SIGNAL_H_

// Wakes whichever collector process holds a host's Watch stream: "these hosts have new change
// orders". The orders themselves are in the ChangeStore (ChangeStore::PendingForHost); the
// signal carries only host names, so a lost signal costs a delay until the agent reconnects or
// the scheduler's next pass, never an order.
//
// In one process the signal calls the handler directly; across processes on one database it is
// PostgreSQL NOTIFY, and every process LISTENs and handles the hosts whose streams it holds.

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace smbfleet::collector {

class OrderSignal {
 public:
  using Handler = std::function<void(const std::vector<std::string>& hosts)>;
  virtual ~OrderSignal() = default;
  // Called after the transaction that made the orders committed.
  virtual void HostsHaveOrders(const std::vector<std::string>& hosts) = 0;
};

// One process: hands the hosts straight to the handler.
class LocalOrderSignal : public OrderSignal {
 public:
  explicit LocalOrderSignal(Handler handler) : handler_(std::move(handler)) {}
  void HostsHaveOrders(const std::vector<std::string>& hosts) override { handler_(hosts); }

 private:
  Handler handler_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_PUSH_ORDER_SIGNAL_H_

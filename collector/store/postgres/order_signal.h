#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_ORDER_SIGNAL_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_ORDER_SIGNAL_H_

// OrderSignal across collector processes on one database: HostsHaveOrders sends
// `NOTIFY smbfleet_orders` with the host names (a JSON array per payload, split under
// PostgreSQL's 8000-byte limit), and every PgOrderSignal LISTENs on its own connection and calls
// its handler with the hosts of each payload, including the ones its own process sent. The
// handler runs on the listener thread: it should only look up streams and hand work off.
//
// A signal is a hint (the orders are in the ChangeStore): while the listening connection is
// down, signals are lost and the listener reconnects with backoff; sending failures are logged
// and dropped.

#include <atomic>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "collector/push/order_signal.h"

namespace smbfleet::collector {

class PgOrderSignal : public OrderSignal {
 public:
  static constexpr char kChannel[] = "smbfleet_orders";
  // Payloads stay below this many bytes (PostgreSQL refuses 8000 and more).
  static constexpr size_t kMaxPayloadBytes = 7900;

  // Starts the listener thread; it connects on its own (see WaitUntilListening).
  PgOrderSignal(std::string dsn, OrderSignal::Handler handler);
  // Stops and joins the listener.
  ~PgOrderSignal() override;
  PgOrderSignal(const PgOrderSignal&) = delete;
  PgOrderSignal& operator=(const PgOrderSignal&) = delete;

  void HostsHaveOrders(const std::vector<std::string>& hosts) override;

  // True once the listener has LISTENed (again, after a reconnect) within `timeout`.
  bool WaitUntilListening(absl::Duration timeout);

  // The host lists, each a JSON array below kMaxPayloadBytes, that carry `hosts`. A host name
  // too long for any payload is left out.
  static std::vector<std::string> Payloads(const std::vector<std::string>& hosts);

 private:
  void Listen();
  // One connection's life: LISTEN, wait and deliver until it breaks or Stop.
  void ListenOn(pqxx::connection& conn);
  void Deliver(const std::string& payload);

  const std::string dsn_;
  const OrderSignal::Handler handler_;
  absl::Notification stop_;

  absl::Mutex mu_;
  bool listening_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex send_mu_;
  std::unique_ptr<pqxx::connection> send_conn_ ABSL_GUARDED_BY(send_mu_);
  bool send_failed_ ABSL_GUARDED_BY(send_mu_) = false;  // logged once until a send succeeds

  std::thread listener_;  // last: starts after every member above exists
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_ORDER_SIGNAL_H_

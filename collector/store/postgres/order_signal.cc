#include "collector/store/postgres/order_signal.h"

#include <algorithm>
#include <pqxx/pqxx>
#include <utility>

#include "collector/store/postgres/dsn.h"
#include "common/logging.h"
#include "nlohmann/json.hpp"

namespace smbfleet::collector {
namespace {

std::shared_ptr<spdlog::logger> Log() { return Logger("collector"); }

// How long one wait for a notification lasts: the longest a stop waits for the listener.
constexpr long kWaitMicros = 200'000;  // NOLINT(google-runtime-int): pqxx's parameter type
constexpr absl::Duration kFirstBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(5);

class Receiver : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection& conn, std::function<void(const std::string&)> deliver)
      : pqxx::notification_receiver(conn, PgOrderSignal::kChannel), deliver_(std::move(deliver)) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override { deliver_(payload); }

 private:
  std::function<void(const std::string&)> deliver_;
};

}  // namespace

PgOrderSignal::PgOrderSignal(std::string dsn, OrderSignal::Handler handler)
    : dsn_(std::move(dsn)), handler_(std::move(handler)), listener_([this] { Listen(); }) {}

PgOrderSignal::~PgOrderSignal() {
  stop_.Notify();
  listener_.join();
}

std::vector<std::string> PgOrderSignal::Payloads(const std::vector<std::string>& hosts) {
  std::vector<std::string> out;
  std::string current;
  for (const auto& host : hosts) {
    const std::string item = nlohmann::json(host).dump();
    if (item.size() + 2 >= kMaxPayloadBytes) {
      Log()->warn("order signal: a host name of {} bytes does not fit a notification; left out",
                  host.size());
      continue;
    }
    if (!current.empty() && current.size() + 1 + item.size() + 1 >= kMaxPayloadBytes) {
      out.push_back(current + "]");
      current.clear();
    }
    current += current.empty() ? "[" : ",";
    current += item;
  }
  if (!current.empty()) out.push_back(current + "]");
  return out;
}

void PgOrderSignal::HostsHaveOrders(const std::vector<std::string>& hosts) {
  const std::vector<std::string> payloads = Payloads(hosts);
  if (payloads.empty()) return;
  absl::MutexLock lock(&send_mu_);
  try {
    if (send_conn_ == nullptr || !send_conn_->is_open()) {
      send_conn_ = std::make_unique<pqxx::connection>(dsn_);
    }
    pqxx::nontransaction tx(*send_conn_);
    for (const auto& p : payloads) tx.exec_params("SELECT pg_notify($1, $2)", kChannel, p);
    send_failed_ = false;
  } catch (...) {
    send_conn_.reset();
    if (!send_failed_) {
      Log()->warn(
          "order signal for {} host(s) not sent (they get their orders when they "
          "reconnect or on the scheduler's next pass): {}",
          hosts.size(), LogSafe(MapPgException(dsn_, "notifying")));
      send_failed_ = true;
    }
  }
}

bool PgOrderSignal::WaitUntilListening(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto listening = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return listening_; };
  return mu_.AwaitWithTimeout(absl::Condition(&listening), timeout);
}

void PgOrderSignal::Deliver(const std::string& payload) {
  auto parsed = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array()) {
    Log()->warn("order signal: ignoring a payload that is not a JSON array of host names");
    return;
  }
  std::vector<std::string> hosts;
  hosts.reserve(parsed.size());
  for (const auto& h : parsed) {
    if (h.is_string()) hosts.push_back(h.get<std::string>());
  }
  if (!hosts.empty()) handler_(hosts);
}

void PgOrderSignal::ListenOn(pqxx::connection& conn) {
  Receiver receiver(conn, [this](const std::string& payload) { Deliver(payload); });
  // The receiver's LISTEN runs when the connection is next used; this makes it happen now.
  conn.get_notifs();
  {
    absl::MutexLock lock(&mu_);
    listening_ = true;
  }
  while (!stop_.HasBeenNotified()) conn.await_notification(0, kWaitMicros);
  // Stopping: the receiver's UNLISTEN would wait forever on a server that stopped answering
  // (shutdown with the database stuck); closing the session ends the LISTEN as well.
  conn.disconnect();
}

void PgOrderSignal::Listen() {
  absl::Duration backoff = kFirstBackoff;
  bool outage_logged = false;
  while (!stop_.HasBeenNotified()) {
    try {
      pqxx::connection conn(dsn_);
      if (outage_logged) Log()->info("order signal: listening again on {}", RedactDsn(dsn_));
      outage_logged = false;
      backoff = kFirstBackoff;
      ListenOn(conn);
    } catch (...) {
      {
        absl::MutexLock lock(&mu_);
        listening_ = false;
      }
      if (!outage_logged) {
        Log()->warn("order signal: not listening, retrying with backoff: {}",
                    LogSafe(MapPgException(dsn_, "listening for orders")));
        outage_logged = true;
      }
      stop_.WaitForNotificationWithTimeout(backoff);
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
  }
}

}  // namespace smbfleet::collector

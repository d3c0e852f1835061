#include "collector/store/postgres/notify_listener.h"

#include <algorithm>
#include <pqxx/pqxx>
#include <utility>

#include "collector/store/postgres/dsn.h"
#include "common/logging.h"

namespace smbfleet::collector {
namespace {

constexpr long kWaitMicros = 200'000;  // NOLINT(google-runtime-int): pqxx's parameter type
constexpr absl::Duration kFirstBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(5);

class Receiver : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection& conn, const std::string& channel, std::function<void()> fn)
      : pqxx::notification_receiver(conn, channel), fn_(std::move(fn)) {}
  void operator()(const std::string& /*payload*/, int /*backend_pid*/) override { fn_(); }

 private:
  std::function<void()> fn_;
};

}  // namespace

PgNotifyListener::PgNotifyListener(std::string dsn, std::string channel,
                                   std::function<void()> on_notify)
    : dsn_(std::move(dsn)),
      channel_(std::move(channel)),
      on_notify_(std::move(on_notify)),
      thread_([this] { Listen(); }) {}

PgNotifyListener::~PgNotifyListener() {
  stop_.Notify();
  thread_.join();
}

bool PgNotifyListener::WaitUntilListening(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto listening = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return listening_; };
  return mu_.AwaitWithTimeout(absl::Condition(&listening), timeout);
}

void PgNotifyListener::Listen() {
  absl::Duration backoff = kFirstBackoff;
  bool outage_logged = false;
  while (!stop_.HasBeenNotified()) {
    try {
      pqxx::connection conn(dsn_);
      Receiver receiver(conn, channel_, on_notify_);
      conn.get_notifs();  // runs the LISTEN now
      {
        absl::MutexLock lock(&mu_);
        listening_ = true;
      }
      if (outage_logged) Logger("collector")->info("{}: listening again", channel_);
      outage_logged = false;
      backoff = kFirstBackoff;
      on_notify_();  // what was sent while not listening
      while (!stop_.HasBeenNotified()) conn.await_notification(0, kWaitMicros);
      // Stopping: the receiver's UNLISTEN would wait forever on a server that stopped answering
      // (shutdown with the database stuck); closing the session ends the LISTEN as well.
      conn.disconnect();
    } catch (...) {
      {
        absl::MutexLock lock(&mu_);
        listening_ = false;
      }
      if (!outage_logged) {
        Logger("collector")
            ->warn("{}: not listening, retrying with backoff: {}", channel_,
                   LogSafe(MapPgException(dsn_, "listening")));
        outage_logged = true;
      }
      stop_.WaitForNotificationWithTimeout(backoff);
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
  }
}

}  // namespace smbfleet::collector

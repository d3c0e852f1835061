#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_NOTIFY_LISTENER_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_NOTIFY_LISTENER_H_

// LISTENs on one PostgreSQL channel on its own connection and thread, calling `on_notify` for
// each notification (payload ignored) and once after each (re)connect, since notifications
// sent while it was away are lost. Reconnects with backoff.

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace smbfleet::collector {

class PgNotifyListener {
 public:
  PgNotifyListener(std::string dsn, std::string channel, std::function<void()> on_notify);
  ~PgNotifyListener();
  PgNotifyListener(const PgNotifyListener&) = delete;
  PgNotifyListener& operator=(const PgNotifyListener&) = delete;

  bool WaitUntilListening(absl::Duration timeout);

 private:
  void Listen();

  const std::string dsn_;
  const std::string channel_;
  const std::function<void()> on_notify_;
  absl::Notification stop_;
  absl::Mutex mu_;
  bool listening_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_NOTIFY_LISTENER_H_

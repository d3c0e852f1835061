// PgChangeStore at fleet size: what an agent's reconnect costs (PendingForHost) when many
// changes exist, what one ack step costs on a large change (UpdateChange reads and locks the
// whole change), and how long a PgOrderSignal takes from NOTIFY to the other listener's handler.
// Prints one JSON object; a goal, not a test. Needs SMBFLEET_TEST_PG_DSN (a role that may create
// databases), as the PostgreSQL tests do.
//
//   change_store_bench [--changes=N] [--hosts=N] [--big=N] [--lookups=N] [--acks=N]
//
// --changes changes of --hosts hosts each, spread over 100,000 host names with a third
// dispatched; one more change of --big hosts, each DISPATCHED, acked --acks times.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "collector/store/postgres/order_signal.h"
#include "collector/store/postgres/pg_store.h"
#include "nlohmann/json.hpp"
#include "tests/bench/bench_flags.h"
#include "tests/testing/pg_fixture.h"

namespace {

using smbfleet::tests::bench::IntFlag;
using smbfleet::tests::bench::MillisSince;
using smbfleet::tests::bench::Percentile;

namespace v1 = smbfleet::v1;
using Clock = std::chrono::steady_clock;

constexpr int kHostNames = 100'000;

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

v1::Change MakeChange(const std::string& id, int first_host, int hosts, bool all_dispatched) {
  v1::Change c;
  c.set_id(id);
  c.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  c.set_version(1);
  c.set_proposed_by("alice");
  c.mutable_proposed_at()->set_seconds(1'800'000'000);
  c.mutable_not_after()->set_seconds(4'000'000'000);
  for (int i = 0; i < hosts; ++i) {
    auto* h = c.add_hosts();
    h->set_host(absl::StrCat("fs", (first_host + i) % kHostNames));
    const bool dispatched = all_dispatched || i % 3 == 0;
    h->set_state(dispatched ? v1::HOST_CHANGE_STATE_DISPATCHED : v1::HOST_CHANGE_STATE_PENDING);
    h->set_wave(0);
    h->mutable_order_not_after()->set_seconds(4'000'000'000);
    h->set_nonce(absl::StrCat(id, "-", i));
    auto* step = h->add_steps();
    step->set_setting("share.encryptData");
    step->set_share("finance");
    step->set_expected_current("false");
    step->set_value("true");
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  using smbfleet::collector::ChangeUpdate;
  const int changes = IntFlag(argc, argv, "changes", 1000);
  const int hosts = IntFlag(argc, argv, "hosts", 100);
  const int big = IntFlag(argc, argv, "big", 10'000);
  const int lookups = IntFlag(argc, argv, "lookups", 2000);
  const int acks = IntFlag(argc, argv, "acks", 20);
  if (smbfleet::testing::AdminDsn().empty()) {
    std::fprintf(stderr, "change_store_bench: SMBFLEET_TEST_PG_DSN is not set\n");
    return 2;
  }
  const std::string dsn = smbfleet::testing::CreateTestDatabase();
  if (auto s = smbfleet::collector::ApplyMigrations(dsn, smbfleet::collector::BuiltinMigrations());
      !s.ok()) {
    std::fprintf(stderr, "change_store_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  auto stores = smbfleet::collector::NewPgStore(dsn, 2);
  if (!stores.ok()) {
    std::fprintf(stderr, "change_store_bench: %s\n", stores.status().ToString().c_str());
    return 1;
  }
  auto& store = *stores->changes;

  auto start = Clock::now();
  for (int i = 0; i < changes; ++i) {
    auto s = store.CreateChange(MakeChange(absl::StrCat("chg-", i), i * hosts, hosts, false), {});
    if (!s.ok()) {
      std::fprintf(stderr, "change_store_bench: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  const double create_us = MicrosSince(start) / std::max(changes, 1);

  std::mt19937 rng(42);
  std::vector<double> pending_us;
  pending_us.reserve(static_cast<size_t>(lookups));
  const absl::Time now = absl::FromUnixSeconds(1'800'000'100);
  for (int i = 0; i < lookups; ++i) {
    const std::string host = absl::StrCat("fs", rng() % kHostNames);
    start = Clock::now();
    auto pending = store.PendingForHost(host, now);
    pending_us.push_back(MicrosSince(start));
    if (!pending.ok()) return 1;
  }

  start = Clock::now();
  if (!store.CreateChange(MakeChange("big", 0, big, true), {}).ok()) return 1;
  const double create_big_ms = MicrosSince(start) / 1000;
  std::vector<double> ack_ms;
  ack_ms.reserve(static_cast<size_t>(acks));
  for (int i = 0; i < acks; ++i) {
    start = Clock::now();
    auto done = store.UpdateChange("big", [i](const v1::Change& current) {
      ChangeUpdate u;
      u.change = current;
      u.change.mutable_hosts(i)->set_state(v1::HOST_CHANGE_STATE_APPLIED);
      u.change.mutable_hosts(i)->mutable_finished_at()->set_seconds(1'800'000'200);
      return absl::StatusOr<ChangeUpdate>(u);
    });
    ack_ms.push_back(MicrosSince(start) / 1000);
    if (!done.ok()) return 1;
  }

  // NOTIFY from one signal to another's handler, one host at a time.
  std::vector<double> signal_us;
  {
    absl::Notification* arrived = nullptr;
    absl::Mutex mu;
    smbfleet::collector::PgOrderSignal sender(dsn, [](const std::vector<std::string>&) {});
    smbfleet::collector::PgOrderSignal receiver(dsn, [&](const std::vector<std::string>&) {
      absl::MutexLock lock(&mu);
      if (arrived != nullptr && !arrived->HasBeenNotified()) arrived->Notify();
    });
    if (!receiver.WaitUntilListening(absl::Seconds(10))) return 1;
    for (int i = 0; i < 50; ++i) {
      absl::Notification n;
      {
        absl::MutexLock lock(&mu);
        arrived = &n;
      }
      start = Clock::now();
      sender.HostsHaveOrders({"fs1"});
      if (!n.WaitForNotificationWithTimeout(absl::Seconds(5))) return 1;
      signal_us.push_back(MicrosSince(start));
      absl::MutexLock lock(&mu);
      arrived = nullptr;
    }
  }

  nlohmann::json out = {
      {"changes", changes},
      {"hosts_per_change", hosts},
      {"change_host_rows", changes * hosts + big},
      {"create_change_us", create_us},
      {"pending_for_host_p50_us", Percentile(pending_us, 0.5)},
      {"pending_for_host_p99_us", Percentile(pending_us, 0.99)},
      {"big_change_hosts", big},
      {"create_big_change_ms", create_big_ms},
      {"ack_step_on_big_change_p50_ms", Percentile(ack_ms, 0.5)},
      {"ack_step_on_big_change_max_ms", Percentile(ack_ms, 1.0)},
      {"signal_p50_us", Percentile(signal_us, 0.5)},
      {"signal_p99_us", Percentile(signal_us, 0.99)},
  };
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

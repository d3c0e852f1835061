// The push of one change to every host, through ChangeService, OrderDispatcher and the
// PostgreSQL stores, without agents or TLS: where the time between the approving command and
// the acks goes. Prints one JSON object; a measurement, not a test. Needs SMBFLEET_TEST_PG_DSN
// (a role that may create databases), as the PostgreSQL tests do.
//
//   push_bench [--hosts=N] [--ack-threads=N] [--pool=N]
//
// Seeds --hosts hosts (one stored posture each), proposes one setting to all of them as
// smbfleetctl's --settings does, and approves it twice, each approval signed over the change
// as fetched (the CLI's part, timed apart). The second approval's dispatch signal is taken and
// the dispatch run after it returns (in the collector it runs on the signal's thread), into a
// router that keeps each order. Then every host acks APPLIED with its order's version and nonce
// from --ack-threads threads at once (the collector's work queue), through AckAsync.
// acked_99_ms and acked_all_ms count from the start of the second approving command (its
// fetch and signature, the call, the dispatch and the acks), as scale.sh's push latency does.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "collector/changes/approval_payload.h"
#include "collector/changes/change_service.h"
#include "collector/changes/order_dispatcher.h"
#include "collector/ingest/digest.h"
#include "collector/store/postgres/pg_store.h"
#include "common/approval_signing.h"
#include "common/logging.h"
#include "nlohmann/json.hpp"
#include "tests/bench/bench_flags.h"
#include "tests/testing/pg_fixture.h"

namespace {

using smbfleet::tests::bench::IntFlag;
using smbfleet::tests::bench::MillisSince;
using smbfleet::tests::bench::Percentile;

namespace v1 = smbfleet::v1;
namespace changes = smbfleet::collector::changes;
using Clock = std::chrono::steady_clock;

// Every host's stream is here; each order sent is kept by host.
class KeepingRouter : public smbfleet::collector::PushRouter {
 public:
  bool Send(const std::string& host, const v1::WatchResponse& message) override {
    absl::MutexLock lock(&mu);
    orders[host] = message.change_order();
    return true;
  }
  bool Connected(const std::string& host) const override { return true; }

  absl::Mutex mu;
  std::map<std::string, v1::ChangeOrder> orders ABSL_GUARDED_BY(mu);
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "push_bench: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int hosts = IntFlag(argc, argv, "hosts", 10'000);
  const int ack_threads = std::max(1, IntFlag(argc, argv, "ack-threads", 8));
  const int pool = std::max(2, IntFlag(argc, argv, "pool", 8));
  if (smbfleet::testing::AdminDsn().empty()) {
    std::fprintf(stderr, "push_bench: SMBFLEET_TEST_PG_DSN is not set\n");
    return 2;
  }
  smbfleet::Logger("collector")->set_level(spdlog::level::warn);
  const std::string dsn = smbfleet::testing::CreateTestDatabase();
  if (auto s = smbfleet::collector::ApplyMigrations(dsn, smbfleet::collector::BuiltinMigrations());
      !s.ok()) {
    return Fail(s);
  }
  auto stores = smbfleet::collector::NewPgStore(dsn, pool);
  if (!stores.ok()) return Fail(stores.status());

  // The fleet: one stored posture per host, the audit setting unset.
  auto start = Clock::now();
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(hosts));
  for (int i = 0; i < hosts; ++i)
    names.push_back(absl::StrCat("fs", absl::Dec(i, absl::kZeroPad6)));
  {
    std::atomic<int> next{0};
    std::atomic<bool> failed{false};
    std::vector<std::thread> seeders;
    seeders.reserve(2);
    for (int t = 0; t < 2; ++t) {
      seeders.emplace_back([&] {
        for (int i = next++; i < hosts && !failed; i = next++) {
          v1::Posture p;
          p.mutable_host()->set_hostname(names[static_cast<size_t>(i)]);
          p.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
          p.mutable_collected_at()->set_seconds(1'800'000'000);
          p.mutable_server()->set_require_signing(true);
          auto* share = p.add_shares();
          share->set_name("finance");
          share->set_path("/srv/finance");
          smbfleet::collector::IncomingReport r;
          r.host = names[static_cast<size_t>(i)];
          r.report_id = absl::StrCat("00000000-0000-4000-8000-", absl::Dec(i, absl::kZeroPad12));
          r.posture = &p;
          r.digest = smbfleet::PostureDigest(p);
          r.received_at = absl::Now();
          if (!stores->hosts->SaveReport(r).ok()) failed = true;
        }
      });
    }
    for (auto& t : seeders) t.join();
    if (failed) return Fail(absl::InternalError("seeding the hosts failed"));
  }
  const double seed_s = MillisSince(start) / 1000;

  // Approvers and their registered keys.
  std::map<std::string, smbfleet::Ed25519Key> keys;
  for (const std::string name : {"ann", "bob"}) {
    auto key = smbfleet::GenerateEd25519Key();
    if (!key.ok()) return Fail(key.status());
    v1::ApproverKey registered;
    registered.set_name(name);
    registered.set_key_id(smbfleet::KeyId(key->public_raw));
    registered.set_public_key(key->public_raw);
    registered.set_added_by("root");
    if (auto s = stores->approver_keys->AddKey(registered); !s.ok()) return Fail(s);
    keys.emplace(name, *std::move(key));
  }

  changes::ChangeService service(stores->changes.get(), stores->hosts.get(),
                                 stores->compliance.get(), nullptr, changes::ChangeOptions{});
  service.SetApproverKeys(stores->approver_keys.get());
  KeepingRouter router;
  changes::OrderDispatcher dispatcher(stores->changes.get(), &router);
  absl::Mutex signalled_mu;
  std::vector<std::string> signalled;
  smbfleet::collector::LocalOrderSignal signal([&](const std::vector<std::string>& h) {
    absl::MutexLock lock(&signalled_mu);
    signalled.insert(signalled.end(), h.begin(), h.end());
  });
  service.SetOrderSignal(&signal);

  v1::ProposeChangeRequest propose;
  for (const std::string& n : names) propose.add_hosts(n);
  auto* setting = propose.add_settings();
  setting->set_setting("server.auditClientDoesNotSupportSigning");
  setting->set_value("true");
  propose.set_reason("push_bench");
  start = Clock::now();
  auto proposed = service.Propose({"pat", changes::Role::kProposer}, propose);
  const double propose_ms = MillisSince(start);
  if (!proposed.ok()) return Fail(proposed.status());
  const std::string id = proposed->change().id();

  // Each approval: what smbfleetctl does (fetch the change, sign its payload), then the call.
  std::vector<double> sign_ms, approve_ms;
  Clock::time_point push_start;  // the last approving command's start: the push's
  for (const std::string name : {"ann", "bob"}) {
    start = Clock::now();
    push_start = start;
    auto stored = stores->changes->GetChange(id);
    if (!stored.ok() || !stored->has_value()) return Fail(stored.status());
    auto payload = changes::ApprovalPayloadBytes(**stored);
    if (!payload.ok()) return Fail(payload.status());
    auto signature = smbfleet::SignEd25519(keys.at(name).private_pem, *payload);
    if (!signature.ok()) return Fail(signature.status());
    sign_ms.push_back(MillisSince(start));
    v1::ApproveChangeRequest req;
    req.set_id(id);
    req.mutable_signature()->set_approver(name);
    req.mutable_signature()->set_key_id(smbfleet::KeyId(keys.at(name).public_raw));
    req.mutable_signature()->set_signature(*signature);
    start = Clock::now();
    auto approved = service.Approve({name, changes::Role::kApprover}, req);
    approve_ms.push_back(MillisSince(start));
    if (!approved.ok()) return Fail(approved.status());
  }

  std::vector<std::string> to_dispatch;
  {
    absl::MutexLock lock(&signalled_mu);
    to_dispatch.swap(signalled);
  }
  start = Clock::now();
  dispatcher.HostsHaveOrders(to_dispatch);
  const double dispatch_ms = MillisSince(start);
  std::vector<std::pair<std::string, v1::ChangeOrder>> orders;
  {
    absl::MutexLock lock(&router.mu);
    orders.assign(router.orders.begin(), router.orders.end());
  }

  // Every host acks at once, from the work queue's threads.
  std::vector<double> ack_ms(orders.size(), 0), acked_at_ms(orders.size(), 0);
  std::atomic<size_t> answered{0}, refused{0};
  absl::Notification all_answered;
  const auto acks_start = Clock::now();
  {
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(ack_threads));
    for (int t = 0; t < ack_threads; ++t) {
      threads.emplace_back([&] {
        for (size_t i = next++; i < orders.size(); i = next++) {
          v1::AckChangeRequest ack;
          ack.set_change_id(orders[i].second.change_id());
          ack.set_version(orders[i].second.version());
          ack.set_nonce(orders[i].second.nonce());
          ack.set_result(v1::AckChangeRequest::RESULT_APPLIED);
          const auto sent = Clock::now();
          service.AckAsync(orders[i].first, ack,
                           [&, i, sent](const absl::StatusOr<v1::AckChangeResponse>& r) {
                             ack_ms[i] = MillisSince(sent);
                             acked_at_ms[i] = MillisSince(push_start);
                             if (!r.ok()) ++refused;
                             if (++answered == orders.size()) all_answered.Notify();
                           });
        }
      });
    }
    for (auto& t : threads) t.join();
    if (!orders.empty()) all_answered.WaitForNotification();
  }
  const double acks_ms = MillisSince(acks_start);
  auto after = stores->changes->GetChange(id);
  if (!after.ok() || !after->has_value()) return Fail(after.status());
  size_t applied = 0;
  for (const auto& h : (*after)->hosts()) applied += h.state() == v1::HOST_CHANGE_STATE_APPLIED;

  nlohmann::json out = {
      {"hosts", hosts},
      {"ack_threads", ack_threads},
      {"pool", pool},
      {"seed_s", seed_s},
      {"propose_ms", propose_ms},
      {"fetch_and_sign_ms", sign_ms},
      {"approve_ms", approve_ms},
      {"dispatch_ms", dispatch_ms},
      {"orders_sent", orders.size()},
      {"acks_ms", acks_ms},
      {"ack_call_p50_ms", Percentile(ack_ms, 0.5)},
      {"ack_call_p99_ms", Percentile(ack_ms, 0.99)},
      {"acks_refused", refused.load()},
      {"applied", applied},
      {"change_state", v1::ChangeState_Name((*after)->state())},
      {"acked_99_ms", Percentile(acked_at_ms, 0.99)},
      {"acked_all_ms", Percentile(acked_at_ms, 1.0)},
  };
  std::printf("%s\n", out.dump(2).c_str());
  return applied == orders.size() && refused == 0 ? 0 : 1;
}

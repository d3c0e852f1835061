#ifndef SMBFLEET_COLLECTOR_SERVER_COLLECTOR_H_
#define SMBFLEET_COLLECTOR_SERVER_COLLECTOR_H_

// The whole collector wired together: stores, policy, pipeline, push registry, work queue,
// services and the gRPC server.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "collector/admin/admin_api.h"
#include "collector/auth/api_tokens.h"
#include "collector/auth/authenticate.h"
#include "collector/auth/revocations.h"
#include "collector/changes/change_service.h"
#include "collector/changes/order_dispatcher.h"
#include "collector/changes/scheduler.h"
#include "collector/config.h"
#include "collector/enroll/enrollment_api.h"
#include "collector/enroll/issuing_ca.h"
#include "collector/ingest/pipeline.h"
#include "collector/ingest/reevaluate.h"
#include "collector/metrics/metrics.h"
#include "collector/push/order_signal.h"
#include "collector/push/stream_registry.h"
#include "collector/server/history_job.h"
#include "collector/service/admin_service.h"
#include "collector/service/agent_service.h"
#include "collector/service/enrollment_service.h"
#include "collector/service/work_queue.h"
#include "collector/store/postgres/notify_listener.h"
#include "collector/store/stores.h"
#include "collector/trust/approver_sets.h"
#include "collector/web/session_store.h"
#include "collector/web/web_server.h"
#include "common/tls.h"
#include "grpcpp/grpcpp.h"
#include "policy/policy.h"

namespace smbfleet::collector {

// Makes the "these hosts have new orders" signal, given what to do when it arrives. The memory
// backend (and a single process) uses LocalOrderSignal; PostgreSQL, a NOTIFY/LISTEN one.
using OrderSignalFactory =
    std::function<absl::StatusOr<std::unique_ptr<OrderSignal>>(OrderSignal::Handler handler)>;

class Collector {
 public:
  // Starts listening. config.listen may use port 0; port() tells the one chosen. policy may be
  // null: then nothing is evaluated. stores.changes may be null: then changes live in memory
  // (one process, lost at exit). A null `signal` factory makes a LocalOrderSignal.
  static absl::StatusOr<std::unique_ptr<Collector>> Start(
      const CollectorConfig& config, const TlsMaterial& tls, Stores stores,
      std::unique_ptr<policy::Policy> policy = nullptr, OrderSignalFactory signal = nullptr);
  ~Collector();

  int port() const { return port_; }
  // The console's HTTPS port; 0 when the configuration has no `console:` section.
  int web_port() const { return web_ ? web_->port() : 0; }
  SessionStore* sessions() { return sessions_.get(); }
  // The collector's metrics; Text() is what /metrics serves.
  Metrics* metrics() { return metrics_.get(); }
  StreamRegistry* registry() { return registry_.get(); }
  ApproverSets* approver_sets() { return approver_sets_.get(); }
  changes::ChangeService* workflow() { return workflow_.get(); }
  // Null when nothing is re-evaluated (no policy, or policy.reevaluate_threads 0).
  Reevaluator* reevaluator() { return reevaluator_.get(); }
  EnrollmentApi* enrollment() { return enrollment_api_.get(); }
  // Stops accepting, stops the background jobs (console, history, rollout scheduler,
  // re-evaluation), closes the Watch streams (UNAVAILABLE), finishes the queued calls for up to
  // config.shutdown_timeout and answers those not started UNAVAILABLE.
  void Shutdown();
  void Wait();
  // Called by Shutdown when calls or background jobs are still running at its deadline (a stuck
  // database); it should make them fail now, e.g. by cutting the database connections they hold.
  void set_on_shutdown_deadline(std::function<size_t()> f) { on_shutdown_deadline_ = std::move(f); }

 private:
  Collector() = default;
  absl::Status StartConsole(const CollectorConfig& config, const TlsMaterial& tls);

  // Declared in dependency order: destroyed in reverse, users before what they use.
  std::unique_ptr<Metrics> metrics_;
  Stores stores_;
  std::unique_ptr<policy::Policy> policy_;
  std::unique_ptr<StreamRegistry> registry_;
  std::unique_ptr<ApproverSets> approver_sets_;
  std::unique_ptr<ReportPipeline> pipeline_;
  std::unique_ptr<changes::OrderDispatcher> dispatcher_;
  std::unique_ptr<changes::ChangeService> workflow_;
  std::unique_ptr<OrderSignal> signal_;  // its handler calls dispatcher_
  std::unique_ptr<changes::Scheduler> scheduler_;
  // Re-evaluates stored postures whose evaluation key the policy changed; null without a policy
  // or with policy.reevaluate_threads 0.
  std::unique_ptr<Reevaluator> reevaluator_;
  std::unique_ptr<AdminApi> admin_api_;
  std::unique_ptr<Authenticator> authenticator_;
  std::unique_ptr<ApiTokens> api_tokens_;
  std::unique_ptr<Revocations> revocations_;               // closes streams in registry_
  std::unique_ptr<PgNotifyListener> revocation_listener_;  // wakes revocations_
  std::unique_ptr<IssuingCa> issuing_ca_;  // null: this collector does not issue certificates
  std::unique_ptr<EnrollmentApi> enrollment_api_;
  std::unique_ptr<WorkQueue> work_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<AdminServiceImpl> admin_service_;
  std::unique_ptr<EnrollmentServiceImpl> enrollment_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<SessionStore> sessions_;
  std::unique_ptr<WebServer> web_;       // null: no console
  std::unique_ptr<HistoryJob> history_;  // null: the backend keeps no history by day
  int port_ = 0;
  absl::Duration shutdown_timeout_ = absl::Seconds(20);
  std::function<size_t()> on_shutdown_deadline_;
  bool shut_down_ = false;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVER_COLLECTOR_H_

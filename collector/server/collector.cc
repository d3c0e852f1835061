#include "collector/server/collector.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "collector/store/memory/memory_approver_key_store.h"
#include "collector/store/memory/memory_change_store.h"
#include "collector/store/memory/memory_enrollment_store.h"
#include "collector/store/postgres/migrations.h"
#include "collector/store/postgres/notify_listener.h"
#include "collector/web/credential_check.h"
#include "common/files.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"

namespace smbfleet::collector {
namespace {

constexpr size_t kMaxCaFileBytes = 4 << 20;

// The CAs of identity.agent_issuers and identity.operator_issuers, read once at start.
absl::StatusOr<std::unique_ptr<Authenticator>> NewAuthenticator(const IdentityConfig& identity) {
  IssuerCertificates issuers;
  for (const std::string& file : identity.agent_issuers) {
    ASSIGN_OR_RETURN(std::string pem, ReadFile(file, kMaxCaFileBytes));
    issuers.agent_pems.push_back(std::move(pem));
  }
  for (const std::string& file : identity.operator_issuers) {
    ASSIGN_OR_RETURN(std::string pem, ReadFile(file, kMaxCaFileBytes));
    issuers.operator_pems.push_back(std::move(pem));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Authenticator> auth, Authenticator::Create(issuers));
  if (!auth->kind_from_issuer()) {
    Logger("collector")
        ->warn(
            "identity.agent_issuers and identity.operator_issuers are empty: the kind of a client "
            "certificate is taken from its first OU; configure the issuing CAs (docs/collector.md "
            "\"identity\")");
  } else {
    Logger("collector")
        ->info("client certificate kinds from their issuers: {} agent CA(s), {} operator CA(s)",
               issuers.agent_pems.size(), issuers.operator_pems.size());
  }
  return auth;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Collector>> Collector::Start(const CollectorConfig& config,
                                                            const TlsMaterial& tls, Stores stores,
                                                            std::unique_ptr<policy::Policy> policy,
                                                            OrderSignalFactory signal) {
  std::unique_ptr<Collector> c(new Collector());
  c->metrics_ = std::make_unique<Metrics>();
  c->stores_ = std::move(stores);
  if (c->stores_.set_metrics) c->stores_.set_metrics(c->metrics_.get());
  c->policy_ = std::move(policy);
  if (c->stores_.changes == nullptr) {
    Logger("collector")
        ->warn("no change store from the backend: changes are kept in memory by this process");
    c->stores_.changes = std::make_unique<MemoryChangeStore>();
  }
  if (c->stores_.approver_keys == nullptr) {
    c->stores_.approver_keys = std::make_unique<MemoryApproverKeyStore>();
  }
  if (c->stores_.enrollment == nullptr) {
    c->stores_.enrollment = std::make_unique<MemoryEnrollmentStore>();
  }
  if (c->stores_.claims == nullptr) c->stores_.claims = NewLocalJobClaims();
  if (!config.enrollment.ca_cert.empty()) {
    ASSIGN_OR_RETURN(c->issuing_ca_,
                     IssuingCa::Load(config.enrollment.ca_cert, config.enrollment.ca_key,
                                     absl::FromChrono(config.enrollment.certificate_lifetime)));
  }
  c->enrollment_api_ =
      std::make_unique<EnrollmentApi>(c->stores_.enrollment.get(), c->issuing_ca_.get());
  ChangeStore* changes = c->stores_.changes.get();
  c->registry_ = std::make_unique<StreamRegistry>(config.keepalive_interval, c->metrics_.get());
  if (c->stores_.approver_sets == nullptr) c->stores_.approver_sets = NewMemoryApproverSetStore();
  c->approver_sets_ =
      std::make_unique<ApproverSets>(c->stores_.approver_sets.get(), c->registry_.get(),
                                     absl::FromChrono(config.approver_set_poll));
  RETURN_IF_ERROR(c->approver_sets_->Start());
  ReportBatchLimits batches;
  batches.digest_reports = config.digest_batch_reports;
  batches.posture_reports = config.posture_batch_reports;
  c->pipeline_ =
      std::make_unique<ReportPipeline>(c->stores_.hosts.get(), c->stores_.compliance.get(),
                                       c->policy_.get(), absl::Now, IngestLimits{}, batches);
  c->pipeline_->SetMetrics(c->metrics_.get());

  changes::ChangeOptions options;
  options.approval.max_hosts_single_approval =
      static_cast<int>(config.changes.two_approvers_above_hosts);
  options.lifetime = absl::FromChrono(config.changes.lifetime);
  options.ack_timeout = absl::FromChrono(config.changes.ack_timeout);
  c->dispatcher_ = std::make_unique<changes::OrderDispatcher>(changes, c->registry_.get());
  c->dispatcher_->SetMetrics(c->metrics_.get());
  c->workflow_ = std::make_unique<changes::ChangeService>(
      changes, c->stores_.hosts.get(), c->stores_.compliance.get(), c->policy_.get(), options);
  OrderSignal::Handler handler = [dispatcher =
                                      c->dispatcher_.get()](const std::vector<std::string>& hosts) {
    dispatcher->HostsHaveOrders(hosts);
  };
  if (signal) {
    ASSIGN_OR_RETURN(c->signal_, signal(std::move(handler)));
  } else {
    c->signal_ = std::make_unique<LocalOrderSignal>(std::move(handler));
  }
  c->workflow_->SetOrderSignal(c->signal_.get());
  c->workflow_->SetMetrics(c->metrics_.get());
  c->workflow_->SetApproverKeys(c->stores_.approver_keys.get());
  c->workflow_->SetTrustedLabels(c->stores_.enrollment.get());
  c->pipeline_->SetRefusalObserver(c->workflow_.get());
  c->pipeline_->SetChangeCountersSink(c->workflow_.get());
  c->pipeline_->SetTrustedLabels(c->stores_.enrollment.get());
  c->scheduler_ = std::make_unique<changes::Scheduler>(c->workflow_.get(),
                                                       absl::FromChrono(config.changes.tick));

  c->admin_api_ = std::make_unique<AdminApi>(c->stores_.hosts.get(), c->stores_.compliance.get(),
                                             c->registry_.get(), changes, c->workflow_.get());
  c->admin_api_->SetNudgeLimits(
      {absl::FromChrono(config.nudge_interval), static_cast<int>(config.nudges_per_minute)});
  c->admin_api_->SetApproverKeys(c->stores_.approver_keys.get());
  c->admin_api_->SetStaleAfter(absl::FromChrono(config.stale_after));
  ASSIGN_OR_RETURN(c->authenticator_, NewAuthenticator(config.identity));
  if (c->stores_.identity == nullptr) c->stores_.identity = NewMemoryIdentityStore();
  c->api_tokens_ = std::make_unique<ApiTokens>(c->stores_.identity.get());
  c->revocations_ = std::make_unique<Revocations>(
      c->stores_.identity.get(), absl::FromChrono(config.identity.revocation_poll),
      [registry = c->registry_.get(), revocations = &c->revocations_]() -> size_t {
        size_t closed =
            registry->CloseRevoked([&](const std::string& host, const std::string& serial,
                                       const std::string& fingerprint) {
              return (*revocations)->IsRevoked(host, serial, fingerprint);
            });
        if (closed > 0) {
          Logger("collector")->info("closed {} stream(s) of revoked certificates", closed);
        }
        return closed;
      });
  RETURN_IF_ERROR(c->revocations_->Start());
  if (!config.database_dsn.empty()) {
    // Revocations made through another replica reach this one within a notification's time.
    c->revocation_listener_ = std::make_unique<PgNotifyListener>(
        config.database_dsn, kRevocationChannel,
        [revocations = c->revocations_.get()] { revocations->Wake(); });
    if (!c->revocation_listener_->WaitUntilListening(absl::Seconds(5))) {
      Logger("collector")
          ->warn("revocations: not listening yet; other replicas' revocations arrive by polling");
    }
  }
  c->authenticator_->set_token_verifier(c->api_tokens_.get());
  // Renewal with a revoked certificate is refused (so is any call with one), and so is any
  // enrollment of a revoked host.
  c->enrollment_api_->SetRevocationCheck(RevocationCheckOf(c->revocations_.get()));
  c->authenticator_->set_revocations(c->revocations_.get());
  c->admin_api_->SetIdentity(c->stores_.identity.get(), c->api_tokens_.get(),
                             c->revocations_.get());
  c->admin_api_->SetEnrollment(c->stores_.enrollment.get());
  if (c->stores_.history != nullptr) {
    c->history_ = std::make_unique<HistoryJob>(c->stores_.history.get(), config.history);
    c->history_->Start();
  }
  c->shutdown_timeout_ = absl::FromChrono(config.shutdown_timeout);
  c->work_ = std::make_unique<WorkQueue>(config.store_threads, config.max_queued_calls,
                                         c->metrics_.get(), config.max_queued_bytes);
  c->agent_service_ = std::make_unique<AgentServiceImpl>(c->pipeline_.get(), c->registry_.get(),
                                                         c->authenticator_.get(), c->work_.get(),
                                                         c->workflow_.get(), c->dispatcher_.get());
  c->agent_service_->set_approver_sets(c->approver_sets_.get());
  c->agent_service_->set_metrics(c->metrics_.get());
  c->agent_service_->set_max_message_bytes(config.max_message_bytes);
  c->admin_service_ = std::make_unique<AdminServiceImpl>(c->admin_api_.get(),
                                                         c->authenticator_.get(), c->work_.get());
  c->admin_service_->set_approver_sets(c->approver_sets_.get());
  c->enrollment_service_ = std::make_unique<EnrollmentServiceImpl>(
      c->enrollment_api_.get(), c->authenticator_.get(), c->work_.get());
  c->enrollment_service_->set_max_message_bytes(config.max_message_bytes);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // From the files when the configuration names them, so that renewed ones are picked up; the
  // material as loaded otherwise (tests that start a collector in-process).
  builder.AddListeningPort(config.listen,
                           config.tls.cert.empty()
                               ? MutualTlsServerCredentials(tls)
                               : ReloadingMutualTlsServerCredentials(config.tls, config.tls_reload),
                           &c->port_);
  // The largest message any RPC takes (a report); Watch and AckChange are held to
  // max_message_bytes by the service. Memory for the transport is bounded as a whole, and so are
  // the streams one connection may have open at once.
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_report_bytes));
  grpc::ResourceQuota quota("smbfleet-collector");
  quota.Resize(config.transport_memory);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(config.max_streams_per_connection));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                             static_cast<int>(config.max_connection_age.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 30'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 300'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_TSI_MAX_FRAME_SIZE, static_cast<int>(config.tls_frame_bytes));
  builder.AddChannelArgument(GRPC_ARG_TCP_READ_CHUNK_SIZE,
                             static_cast<int>(config.tcp_read_chunk_bytes));
  builder.RegisterService(c->agent_service_.get());
  builder.RegisterService(c->admin_service_.get());
  builder.RegisterService(c->enrollment_service_.get());
  c->server_ = builder.BuildAndStart();
  if (!c->server_ || c->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen));
  }
  if (config.console.enabled) RETURN_IF_ERROR(c->StartConsole(config, tls));
  if (c->policy_ != nullptr && config.reevaluate_threads > 0) {
    // Started once the server takes reports: a host's report and its re-evaluation are
    // serialised by the stored evaluation key, whichever comes first.
    ReevaluationOptions options;
    options.threads = config.reevaluate_threads;
    c->reevaluator_ =
        std::make_unique<Reevaluator>(c->pipeline_.get(), c->stores_.compliance.get(),
                                      c->stores_.claims.get(), options, c->metrics_.get());
    c->reevaluator_->Start();
  }
  return c;
}

absl::Status Collector::StartConsole(const CollectorConfig& config, const TlsMaterial& tls) {
  WebOptions options;
  options.listen = config.console.listen;
  options.cert_pem = tls.cert_pem;
  options.key_pem = tls.key_pem;
  if (!config.console.cert.empty()) {
    ASSIGN_OR_RETURN(options.cert_pem, ReadFile(config.console.cert, kMaxCaFileBytes));
    ASSIGN_OR_RETURN(options.key_pem, ReadFile(config.console.key, kMaxCaFileBytes));
  }
  // People's client certificates verify against the same CA bundle as on the gRPC port.
  options.client_ca_pem = tls.ca_pem;
  SessionOptions session_options;
  session_options.idle = absl::FromChrono(config.console.session_idle);
  session_options.max = absl::FromChrono(config.console.session_max);
  sessions_ = std::make_unique<SessionStore>(
      session_options, CredentialStillStands(stores_.identity.get(), revocations_.get()));
  WebDeps deps;
  deps.api = admin_api_.get();
  deps.approver_sets = approver_sets_.get();
  deps.authenticator = authenticator_.get();
  deps.sessions = sessions_.get();
  deps.metrics = [metrics = metrics_.get()] { return metrics->Text(); };
  if (!config.database_dsn.empty()) {
    // Migrations ran before the stores were opened (startup.cc); ready means the database
    // answers and still has every migration this binary knows.
    deps.ready = [dsn = config.database_dsn] { return CheckMigrations(dsn, BuiltinMigrations()); };
  }
  ASSIGN_OR_RETURN(web_, WebServer::Start(options, std::move(deps)));
  return absl::OkStatus();
}

void Collector::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  const absl::Time deadline = absl::Now() + shutdown_timeout_;
  // The background jobs stop beside the calls, under the same deadline: a scheduler tick or a
  // re-evaluation page parked on a stuck database returns once its connection is cut below,
  // like a call's.
  absl::Notification jobs_stopped;
  std::thread jobs([this, &jobs_stopped] {
    if (web_) web_->Stop();
    if (history_) history_->Stop();
    scheduler_->Stop();
    if (reevaluator_) reevaluator_->Stop();
    // Agents reconnect after their jittered backoff, to this collector once it is back or to
    // another one. Closed after the scheduler, which may still push an order to a stream.
    registry_->CloseAll();
    jobs_stopped.Notify();
  });
  // While gRPC stops accepting and waits for the calls in flight, the queue finishes what it
  // holds until the deadline and answers the rest UNAVAILABLE (not acked: the agents resend).
  std::thread drain([this, deadline, &jobs_stopped] {
    size_t running = 0;
    const size_t dropped = work_->Drain(deadline, &running);
    const bool jobs_done = jobs_stopped.WaitForNotificationWithDeadline(deadline);
    size_t cut = 0;
    if ((running > 0 || !jobs_done) && on_shutdown_deadline_) cut = on_shutdown_deadline_();
    if (dropped > 0 || running > 0 || !jobs_done) {
      Logger("collector")
          ->warn(
              "shutdown: {} queued call(s) answered UNAVAILABLE; {} call(s) still running and "
              "background jobs {} at the deadline, {} database connection(s) cut",
              dropped, running, jobs_done ? "stopped" : "still running", cut);
    }
  });
  server_->Shutdown(absl::ToChronoTime(deadline));
  drain.join();
  jobs.join();
}

void Collector::Wait() { server_->Wait(); }

Collector::~Collector() {
  if (server_) {
    Shutdown();
    server_->Wait();
  }
  work_.reset();  // drains the queued work that still refers to the services
}

}  // namespace smbfleet::collector

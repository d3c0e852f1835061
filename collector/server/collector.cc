#include "collector/server/collector.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"

namespace smbfleet::collector {
namespace {

constexpr size_t kMaxQueuedCalls = 10'000;

}  // namespace

absl::StatusOr<std::unique_ptr<Collector>> Collector::Start(
    const CollectorConfig& config, const TlsMaterial& tls, Stores stores,
    std::unique_ptr<policy::Policy> policy) {
  std::unique_ptr<Collector> c(new Collector());
  c->stores_ = std::move(stores);
  c->policy_ = std::move(policy);
  c->registry_ = std::make_unique<StreamRegistry>(config.keepalive_interval);
  c->pipeline_ = std::make_unique<ReportPipeline>(c->stores_.hosts.get(),
                                                  c->stores_.compliance.get(), c->policy_.get());
  c->admin_api_ = std::make_unique<AdminApi>(c->stores_.hosts.get(), c->stores_.compliance.get(),
                                             c->registry_.get());
  c->work_ = std::make_unique<WorkQueue>(config.store_threads, kMaxQueuedCalls);
  c->agent_service_ =
      std::make_unique<AgentServiceImpl>(c->pipeline_.get(), c->registry_.get(), c->work_.get());
  c->admin_service_ = std::make_unique<AdminServiceImpl>(c->admin_api_.get(), c->work_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, MutualTlsServerCredentials(tls), &c->port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_report_bytes));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                             static_cast<int>(config.max_connection_age.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 30'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 300'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.RegisterService(c->agent_service_.get());
  builder.RegisterService(c->admin_service_.get());
  c->server_ = builder.BuildAndStart();
  if (!c->server_ || c->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen));
  }
  return c;
}

void Collector::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  registry_->CloseAll();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
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

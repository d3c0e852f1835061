#include "collector/service/services.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "policy/evaluate.h"

namespace smbfleet::collector {
namespace {

using smbfleet::v1::WatchResponse;

std::shared_ptr<spdlog::logger> Log() { return Logger("collector"); }

absl::StatusOr<PeerIdentity> Authorize(const grpc::CallbackServerContext& context,
                                       absl::string_view kind) {
  auto id = PeerIdentityOf(context);
  if (!id.ok()) return id.status();
  if (id->kind != kind) {
    return absl::PermissionDeniedError(absl::StrCat("certificate of '", id->common_name,
                                                    "' is for '", id->kind, "', this call needs '",
                                                    kind, "'"));
  }
  return id;
}

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context, grpc::Status status) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

grpc::Status Busy() {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "collector is busy; retry with backoff");
}

// One agent's Watch stream: a queue of messages written one at a time.
class WatchReactor final : public grpc::ServerWriteReactor<WatchResponse>, public AgentStream {
 public:
  WatchReactor(StreamRegistry* registry, std::string host)
      : registry_(registry), host_(std::move(host)) {
    registry_->Register(host_, this);
    WatchResponse hello;
    *hello.mutable_keepalive()->mutable_sent_at() =
        google::protobuf::util::TimeUtil::GetCurrentTime();
    Send(hello);
  }

  void Send(const WatchResponse& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (finishing_) return;
    if (queue_.size() >= kMaxQueued) return;  // a stuck agent must not grow our memory
    queue_.push_back(message);
    if (!writing_) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
  }

  void Close(const std::string& why) override {
    std::lock_guard<std::mutex> lock(mu_);
    FinishLocked(grpc::Status(grpc::StatusCode::ABORTED, why));
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
      return;
    }
    if (pending_finish_) {
      Finish(final_status_);
      return;
    }
    if (!queue_.empty() && !finishing_) {
      writing_ = true;
      StartWrite(&queue_.front());
    }
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    registry_->Unregister(host_, this);
    Log()->info("watch stream of {} closed", host_);
    delete this;
  }

 private:
  static constexpr size_t kMaxQueued = 64;

  void FinishLocked(grpc::Status status) {
    if (finishing_) return;
    finishing_ = true;
    if (writing_) {
      pending_finish_ = true;
      final_status_ = std::move(status);
    } else {
      Finish(std::move(status));
    }
  }

  StreamRegistry* registry_;
  std::string host_;
  std::mutex mu_;
  std::deque<WatchResponse> queue_;
  bool writing_ = false;
  bool finishing_ = false;
  bool pending_finish_ = false;
  grpc::Status final_status_;
};

class RejectedWatch final : public grpc::ServerWriteReactor<WatchResponse> {
 public:
  explicit RejectedWatch(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

AgentServiceImpl::AgentServiceImpl(Store* store, StreamRegistry* registry, WorkQueue* work,
                                   const policy::Policy* policy)
    : store_(store), registry_(registry), work_(work), policy_(policy) {}

void AgentServiceImpl::Evaluate(const std::string& host, const smbfleet::v1::Posture& posture) {
  if (policy_ == nullptr) return;
  auto waivers = store_->ActiveWaivers();
  if (!waivers.ok()) {
    Log()->error("not evaluating {}: {}", host, std::string(waivers.status().message()));
    return;
  }
  for (const auto& w : policy_->waivers) waivers->push_back(w);
  // Policies match on the host's identity, which is its certificate's, not what it says.
  smbfleet::v1::Posture subject = posture;
  subject.mutable_host()->set_hostname(host);
  auto eval = policy::EvaluateHost(*policy_, subject, *waivers, absl::Now());
  auto transitions = store_->SaveEvaluation(host, eval);
  if (!transitions.ok()) {
    Log()->error("{}", std::string(transitions.status().message()));
    return;
  }
  Log()->debug("{}: {} compliant, {} non-compliant, {} transitions", host, eval.compliant(),
               eval.non_compliant(), *transitions);
}

grpc::ServerUnaryReactor* AgentServiceImpl::Report(grpc::CallbackServerContext* context,
                                                   const smbfleet::v1::ReportRequest* request,
                                                   smbfleet::v1::ReportResponse* response) {
  auto id = Authorize(*context, "agent");
  if (!id.ok()) return FinishNow(context, ToGrpcStatus(id.status()));
  absl::Status valid = ValidateReport(*request, limits_);
  if (!valid.ok()) {
    Log()->warn("report from {} refused: {}", id->common_name, std::string(valid.message()));
    return FinishNow(context, ToGrpcStatus(valid));
  }
  auto* reactor = context->DefaultReactor();
  std::string host = id->common_name;
  bool queued = work_->TrySubmit([this, reactor, request, response, host] {
    IncomingReport incoming;
    incoming.host = host;
    incoming.report_id = request->report_id();
    incoming.reason = request->reason();
    incoming.posture = &request->posture();
    incoming.size_bytes = request->ByteSizeLong();
    incoming.received_at = absl::Now();
    auto outcome = store_->SaveReport(incoming);
    if (!outcome.ok()) {
      Log()->error("{}", std::string(outcome.status().message()));
      // The agent keeps the report spooled and sends it again.
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   "report not stored; keep it and retry later"));
      return;
    }
    response->set_host(host);
    *response->mutable_received_at() =
        google::protobuf::util::TimeUtil::TimeTToTimestamp(absl::ToTimeT(incoming.received_at));
    switch (*outcome) {
      case SaveOutcome::kStored:
        response->set_outcome(smbfleet::v1::ReportResponse::OUTCOME_STORED);
        break;
      case SaveOutcome::kUnchanged:
        response->set_outcome(smbfleet::v1::ReportResponse::OUTCOME_UNCHANGED);
        break;
      case SaveOutcome::kDuplicate:
        response->set_outcome(smbfleet::v1::ReportResponse::OUTCOME_DUPLICATE);
        break;
    }
    Log()->debug("report {} from {}: {}", incoming.report_id, host,
                 smbfleet::v1::ReportResponse::Outcome_Name(response->outcome()));
    if (*outcome != SaveOutcome::kDuplicate) Evaluate(host, request->posture());
    reactor->Finish(grpc::Status::OK);
  });
  if (!queued) reactor->Finish(Busy());
  return reactor;
}

grpc::ServerWriteReactor<WatchResponse>* AgentServiceImpl::Watch(
    grpc::CallbackServerContext* context, const smbfleet::v1::WatchRequest* request) {
  auto id = Authorize(*context, "agent");
  if (!id.ok()) return new RejectedWatch(ToGrpcStatus(id.status()));
  Log()->info("watch stream of {} opened (agent {})", id->common_name, request->agent_version());
  return new WatchReactor(registry_, id->common_name);
}

grpc::ServerUnaryReactor* AgentServiceImpl::AckChange(grpc::CallbackServerContext* context,
                                                      const smbfleet::v1::AckChangeRequest* request,
                                                      smbfleet::v1::AckChangeResponse* response) {
  auto id = Authorize(*context, "agent");
  if (!id.ok()) return FinishNow(context, ToGrpcStatus(id.status()));
  // No change order has been issued by this collector version, so none can be acknowledged.
  return FinishNow(
      context, grpc::Status(grpc::StatusCode::NOT_FOUND,
                            absl::StrCat("no change order '", request->change_id().substr(0, 64),
                                         "' was sent to ", id->common_name)));
}

AdminServiceImpl::AdminServiceImpl(Store* store, StreamRegistry* registry, WorkQueue* work)
    : store_(store), registry_(registry), work_(work) {}

grpc::ServerUnaryReactor* AdminServiceImpl::ListHosts(grpc::CallbackServerContext* context,
                                                      const smbfleet::v1::ListHostsRequest* request,
                                                      smbfleet::v1::ListHostsResponse* response) {
  auto id = Authorize(*context, "operator");
  if (!id.ok()) return FinishNow(context, ToGrpcStatus(id.status()));
  auto* reactor = context->DefaultReactor();
  bool queued = work_->TrySubmit([this, reactor, request, response] {
    HostQuery q;
    q.name_prefix = request->name_prefix();
    q.after_name = request->page_token();
    q.limit = request->page_size() == 0 ? 500 : std::min<uint32_t>(request->page_size(), 5000);
    auto hosts = store_->ListHosts(q);
    if (!hosts.ok()) {
      reactor->Finish(ToGrpcStatus(hosts.status()));
      return;
    }
    for (auto& h : *hosts) {
      h.set_connected(registry_->Connected(h.name()));
      *response->add_hosts() = std::move(h);
    }
    if (response->hosts_size() == static_cast<int>(q.limit)) {
      response->set_next_page_token(response->hosts(response->hosts_size() - 1).name());
    }
    reactor->Finish(grpc::Status::OK);
  });
  if (!queued) reactor->Finish(Busy());
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetHost(grpc::CallbackServerContext* context,
                                                    const smbfleet::v1::GetHostRequest* request,
                                                    smbfleet::v1::GetHostResponse* response) {
  auto id = Authorize(*context, "operator");
  if (!id.ok()) return FinishNow(context, ToGrpcStatus(id.status()));
  auto* reactor = context->DefaultReactor();
  bool queued = work_->TrySubmit([this, reactor, request, response] {
    auto host = store_->GetHost(request->name());
    if (!host.ok()) {
      reactor->Finish(ToGrpcStatus(host.status()));
      return;
    }
    if (!host->has_value()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                   absl::StrCat("no host named '", request->name(), "'")));
      return;
    }
    HostRecord& record = **host;
    record.summary.set_connected(registry_->Connected(request->name()));
    *response->mutable_summary() = std::move(record.summary);
    *response->mutable_posture() = std::move(record.posture);
    response->set_last_report_id(record.last_report_id);
    reactor->Finish(grpc::Status::OK);
  });
  if (!queued) reactor->Finish(Busy());
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::RequestReport(
    grpc::CallbackServerContext* context, const smbfleet::v1::RequestReportRequest* request,
    smbfleet::v1::RequestReportResponse* response) {
  auto id = Authorize(*context, "operator");
  if (!id.ok()) return FinishNow(context, ToGrpcStatus(id.status()));
  WatchResponse nudge;
  nudge.mutable_report_now()->set_reason(request->reason().empty()
                                             ? absl::StrCat("requested by ", id->common_name)
                                             : request->reason().substr(0, 200));
  bool delivered = registry_->Send(request->name(), nudge);
  response->set_delivered(delivered);
  if (!delivered) {
    return FinishNow(context, grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                           absl::StrCat("host '", request->name(),
                                                        "' has no open stream to this collector")));
  }
  Log()->info("{} asked {} to report now", id->common_name, request->name());
  return FinishNow(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetCompliance(
    grpc::CallbackServerContext* context, const smbfleet::v1::GetComplianceRequest* request,
    smbfleet::v1::GetComplianceResponse* response) {
  auto id = Authorize(*context, "operator");
  if (!id.ok()) return FinishNow(context, ToGrpcStatus(id.status()));
  auto* reactor = context->DefaultReactor();
  bool queued = work_->TrySubmit([this, reactor, response] {
    auto compliance = store_->GetCompliance();
    if (!compliance.ok()) {
      reactor->Finish(ToGrpcStatus(compliance.status()));
      return;
    }
    *response = *std::move(compliance);
    reactor->Finish(grpc::Status::OK);
  });
  if (!queued) reactor->Finish(Busy());
  return reactor;
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListFindings(
    grpc::CallbackServerContext* context, const smbfleet::v1::ListFindingsRequest* request,
    smbfleet::v1::ListFindingsResponse* response) {
  auto id = Authorize(*context, "operator");
  if (!id.ok()) return FinishNow(context, ToGrpcStatus(id.status()));
  auto* reactor = context->DefaultReactor();
  bool queued = work_->TrySubmit([this, reactor, request, response] {
    uint32_t limit = request->limit() == 0 ? 1000 : std::min<uint32_t>(request->limit(), 10000);
    auto findings = store_->ListFindings(request->host(), request->rule_id(), limit);
    if (!findings.ok()) {
      reactor->Finish(ToGrpcStatus(findings.status()));
      return;
    }
    for (auto& f : *findings) *response->add_findings() = std::move(f);
    reactor->Finish(grpc::Status::OK);
  });
  if (!queued) reactor->Finish(Busy());
  return reactor;
}

absl::StatusOr<std::unique_ptr<Collector>> Collector::Start(
    const CollectorConfig& config, const TlsMaterial& tls, std::unique_ptr<Store> store,
    std::unique_ptr<policy::Policy> policy) {
  std::unique_ptr<Collector> c(new Collector());
  c->store_ = std::move(store);
  c->policy_ = std::move(policy);
  c->registry_ = std::make_unique<StreamRegistry>(config.keepalive_interval);
  c->work_ = std::make_unique<WorkQueue>(config.store_threads, 10'000);
  c->agent_service_ = std::make_unique<AgentServiceImpl>(c->store_.get(), c->registry_.get(),
                                                         c->work_.get(), c->policy_.get());
  c->admin_service_ =
      std::make_unique<AdminServiceImpl>(c->store_.get(), c->registry_.get(), c->work_.get());

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
  Shutdown();
  server_->Wait();
  work_.reset();  // drains the queued work that still refers to the services
}

}  // namespace smbfleet::collector

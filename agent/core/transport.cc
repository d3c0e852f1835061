#include "agent/core/transport.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/version.h"

namespace smbfleet::agent {
namespace {

// A posture's repeated field names and values take gzip well; a digest-only report is a few
// hundred bytes, which gzip would not shrink.
constexpr size_t kCompressReportsFromBytes = 1024;

}  // namespace

absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

bool IsPermanentReportError(const absl::Status& status) {
  return absl::IsInvalidArgument(status) || absl::IsResourceExhausted(status);
}

absl::StatusOr<std::unique_ptr<GrpcCollectorClient>> GrpcCollectorClient::Create(
    const AgentConfig& config) {
  ASSIGN_OR_RETURN(auto channel, MakeChannel(config));
  return std::unique_ptr<GrpcCollectorClient>(
      new GrpcCollectorClient(channel, config.report_timeout));
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> GrpcCollectorClient::MakeChannel(
    const AgentConfig& config) {
  ASSIGN_OR_RETURN(auto tls, LoadTls(config.tls));
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(config.collector_server_name);
  args.SetMaxSendMessageSize(static_cast<int>(config.max_report_bytes) + (64 << 10));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 300'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(config.max_backoff.count()));
  args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, absl::StrCat("smbfleet-agent/", kVersion));
  return grpc::CreateCustomChannel(config.collector_address, MutualTlsChannelCredentials(tls),
                                   args);
}

GrpcCollectorClient::GrpcCollectorClient(std::shared_ptr<grpc::Channel> channel,
                                         std::chrono::milliseconds timeout)
    : stub_(smbfleet::v1::AgentService::NewStub(channel)), timeout_(timeout) {}

std::shared_ptr<smbfleet::v1::AgentService::Stub> GrpcCollectorClient::Stub() {
  std::lock_guard<std::mutex> lock(mu_);
  return stub_;
}

absl::Status GrpcCollectorClient::Reload(const AgentConfig& config) {
  ASSIGN_OR_RETURN(auto channel, MakeChannel(config));
  std::shared_ptr<smbfleet::v1::AgentService::Stub> stub =
      smbfleet::v1::AgentService::NewStub(channel);
  std::lock_guard<std::mutex> lock(mu_);
  stub_ = std::move(stub);
  // The open stream still runs on the old certificate: end it, the agent reconnects.
  if (watch_context_ != nullptr) watch_context_->TryCancel();
  return absl::OkStatus();
}

absl::StatusOr<smbfleet::v1::ReportResponse> GrpcCollectorClient::Report(
    const smbfleet::v1::ReportRequest& request) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
  if (request.ByteSizeLong() >= kCompressReportsFromBytes) {
    ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  }
  smbfleet::v1::ReportResponse response;
  grpc::Status status = Stub()->Report(&ctx, request, &response);
  if (!status.ok()) {
    return FromGrpcStatus(status, absl::StrCat("report ", request.report_id()));
  }
  return response;
}

absl::Status GrpcCollectorClient::Watch(const smbfleet::v1::WatchRequest& watch_request,
                                        const WatchCallback& on_message) {
  grpc::ClientContext ctx;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return absl::CancelledError("watch cancelled");
    watch_context_ = &ctx;
  }
  smbfleet::v1::WatchRequest request = watch_request;
  if (request.agent_version().empty()) request.set_agent_version(kVersion);
  auto stub = Stub();
  auto reader = stub->Watch(&ctx, request);
  smbfleet::v1::WatchResponse message;
  while (reader->Read(&message)) on_message(message);
  grpc::Status status = reader->Finish();
  {
    std::lock_guard<std::mutex> lock(mu_);
    watch_context_ = nullptr;
  }
  return FromGrpcStatus(status, "watch stream");
}

void GrpcCollectorClient::CancelWatch() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (watch_context_ != nullptr) watch_context_->TryCancel();
}

absl::Status GrpcCollectorClient::AckChange(const smbfleet::v1::AckChangeRequest& request) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
  smbfleet::v1::AckChangeResponse response;
  return FromGrpcStatus(Stub()->AckChange(&ctx, request, &response),
                        absl::StrCat("ack of change ", request.change_id()));
}

}  // namespace smbfleet::agent

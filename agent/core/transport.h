#ifndef SMBFLEET_AGENT_CORE_TRANSPORT_H_
#define SMBFLEET_AGENT_CORE_TRANSPORT_H_

#include <functional>
#include <memory>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "agent/core/agent_config.h"
#include "grpcpp/grpcpp.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::agent {

// The agent's side of AgentService. Errors come back as absl::Status with the gRPC code.
class CollectorClient {
 public:
  using WatchCallback = std::function<void(const smbfleet::v1::WatchResponse&)>;

  virtual ~CollectorClient() = default;

  // One report, bounded by the configured deadline. Over gRPC a report of 1 KiB or more goes
  // gzip-compressed (the collector takes gzip as every gRPC server does).
  virtual absl::StatusOr<smbfleet::v1::ReportResponse> Report(
      const smbfleet::v1::ReportRequest& request) = 0;

  // Opens the Watch stream with `request` (completed change ids) and reads it until it ends or
  // CancelWatch() is called; on_message runs for each message on this thread. After
  // CancelWatch(), returns Cancelled at once.
  virtual absl::Status Watch(const smbfleet::v1::WatchRequest& request,
                             const WatchCallback& on_message) = 0;
  virtual void CancelWatch() = 0;

  // The outcome of a change order.
  virtual absl::Status AckChange(const smbfleet::v1::AckChangeRequest& request) = 0;
};

// Whether resending the same report can succeed. Permanent: InvalidArgument (the collector's
// validation refused it) and ResourceExhausted (larger than the message limit). Everything else,
// Unavailable (down or busy), DeadlineExceeded, PermissionDenied and Unauthenticated (certificate
// trouble) and Internal among them, keeps the report for another try.
bool IsPermanentReportError(const absl::Status& status);

// CollectorClient over gRPC with mutual TLS.
class GrpcCollectorClient : public CollectorClient {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcCollectorClient>> Create(const AgentConfig& config);

  absl::StatusOr<smbfleet::v1::ReportResponse> Report(
      const smbfleet::v1::ReportRequest& request) override;
  absl::Status Watch(const smbfleet::v1::WatchRequest& request,
                     const WatchCallback& on_message) override;
  void CancelWatch() override;
  absl::Status AckChange(const smbfleet::v1::AckChangeRequest& request) override;

  // Reads the TLS files again (a renewed certificate) and makes a new channel for the calls
  // that follow, and ends the open Watch stream so that it reconnects with it. No restart.
  absl::Status Reload(const AgentConfig& config);

 private:
  GrpcCollectorClient(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout);
  static absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const AgentConfig& config);
  std::shared_ptr<smbfleet::v1::AgentService::Stub> Stub();

  std::shared_ptr<smbfleet::v1::AgentService::Stub> stub_ ABSL_GUARDED_BY(mu_);
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view what);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_TRANSPORT_H_

#ifndef SMBFLEET_AGENT_CORE_TRANSPORT_H_
#define SMBFLEET_AGENT_CORE_TRANSPORT_H_

#include <functional>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "agent/core/agent_config.h"
#include "grpcpp/grpcpp.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::agent {

// The agent's side of AgentService over mutual TLS.
class CollectorClient {
 public:
  static absl::StatusOr<std::unique_ptr<CollectorClient>> Create(const AgentConfig& config);

  // One report, bounded by the configured deadline. gRPC errors come back as absl::Status
  // with the same code.
  absl::StatusOr<smbfleet::v1::ReportResponse> Report(const smbfleet::v1::ReportRequest& request);

  // Reads the Watch stream until it ends or CancelWatch() is called; on_message runs for each
  // message on this thread.
  absl::Status Watch(const std::function<void(const smbfleet::v1::WatchResponse&)>& on_message);
  void CancelWatch();

 private:
  CollectorClient(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<smbfleet::v1::AgentService::Stub> stub_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  grpc::ClientContext* watch_context_ = nullptr;
  bool cancelled_ = false;
};

absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view what);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_TRANSPORT_H_

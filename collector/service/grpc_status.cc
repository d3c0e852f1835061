#include "collector/service/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace smbfleet::collector {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::Status Busy() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "collector is busy; retry with backoff");
}

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context, grpc::Status status) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

grpc::Status ShuttingDown() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "collector shutting down; retry with backoff");
}

grpc::Status TooLarge(const char* rpc, size_t bytes, uint64_t limit) {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      absl::StrCat(rpc, " request of ", bytes,
                                   " bytes is over limits.max_message_bytes (", limit, ")"));
}

}  // namespace smbfleet::collector

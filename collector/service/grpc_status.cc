#include "collector/service/grpc_status.h"

#include <string>

namespace smbfleet::collector {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::Status Busy() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "collector is busy; retry with backoff");
}

}  // namespace smbfleet::collector

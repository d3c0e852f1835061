#include "cli/exit_code.h"

namespace smbfleet::cli {

ExitCode ExitCodeFor(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::NOT_FOUND:
      return kExitNotFound;
    case grpc::StatusCode::PERMISSION_DENIED:
      return kExitPermissionDenied;
    case grpc::StatusCode::FAILED_PRECONDITION:
      return kExitRefused;
    default:
      return kExitFailed;
  }
}

}  // namespace smbfleet::cli

#include "cli/exit_code.h"

#include <algorithm>

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

std::optional<ExitCode> ExitCodeForChange(const smbfleet::v1::Change& change) {
  switch (change.state()) {
    case smbfleet::v1::CHANGE_STATE_COMPLETED: {
      const bool all_applied =
          change.hosts_size() > 0 &&
          std::all_of(change.hosts().begin(), change.hosts().end(), [](const auto& h) {
            return h.state() == smbfleet::v1::HOST_CHANGE_STATE_APPLIED;
          });
      return all_applied ? kExitOk : kExitFailed;
    }
    case smbfleet::v1::CHANGE_STATE_REJECTED:
    case smbfleet::v1::CHANGE_STATE_ROLLED_BACK:
    case smbfleet::v1::CHANGE_STATE_EXPIRED:
      return kExitFailed;
    default:
      return std::nullopt;
  }
}

}  // namespace smbfleet::cli

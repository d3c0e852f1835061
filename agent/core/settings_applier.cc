#include "agent/core/settings_applier.h"

namespace smbfleet::agent {

smbfleet::v1::AckChangeRequest::Result AckResultOf(const absl::Status& status) {
  using smbfleet::v1::AckChangeRequest;
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return AckChangeRequest::RESULT_APPLIED;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnimplemented:
      return AckChangeRequest::RESULT_REFUSED;
    case absl::StatusCode::kFailedPrecondition:
      return AckChangeRequest::RESULT_PRECONDITION_FAILED;
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kUnavailable:
      return AckChangeRequest::RESULT_ROLLED_BACK;
    default:
      return AckChangeRequest::RESULT_FAILED;
  }
}

}  // namespace smbfleet::agent

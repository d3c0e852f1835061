#include "agent/core/settings_applier.h"

#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

using smbfleet::v1::AckChangeRequest;

TEST(AckResultOfTest, OneMappingFromStatusToAck) {
  struct Case {
    absl::Status status;
    AckChangeRequest::Result want;
  };
  const Case cases[] = {
      {absl::OkStatus(), AckChangeRequest::RESULT_APPLIED},
      {absl::PermissionDeniedError("not on the allowlist"), AckChangeRequest::RESULT_REFUSED},
      {absl::UnimplementedError("no Samba equivalent"), AckChangeRequest::RESULT_REFUSED},
      {absl::FailedPreconditionError("expected current value"),
       AckChangeRequest::RESULT_PRECONDITION_FAILED},
      {absl::AbortedError("restored"), AckChangeRequest::RESULT_ROLLED_BACK},
      {absl::UnavailableError("reload failed; restored"), AckChangeRequest::RESULT_ROLLED_BACK},
      {absl::InvalidArgumentError("malformed"), AckChangeRequest::RESULT_FAILED},
      {absl::InternalError("cannot restore"), AckChangeRequest::RESULT_FAILED},
      {absl::NotFoundError("no such file"), AckChangeRequest::RESULT_FAILED},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(AckResultOf(c.status), c.want) << c.status;
    ApplyResult r;
    r.set_status(c.status);
    EXPECT_EQ(r.ack(), c.want) << c.status;
    EXPECT_EQ(r.ok(), c.status.ok());
  }
}

}  // namespace
}  // namespace smbfleet::agent

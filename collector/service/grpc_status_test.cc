#include "collector/service/grpc_status.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "common/safe_text.h"

namespace smbfleet::collector {
namespace {

TEST(GrpcStatusTest, KeepsCodeAndShortMessage) {
  grpc::Status s = ToGrpcStatus(absl::FailedPreconditionError("host fs01: no posture yet"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(), "host fs01: no posture yet");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

// One line per host of a 1,000-host proposal: past what a client takes as a header (8 KiB).
TEST(GrpcStatusTest, LongMessageIsCutOnACharacterBoundaryAndSaysHowMuchWasCut) {
  std::string message;
  for (int i = 0; i < 1000; ++i) message += "sim-" + std::to_string(i) + ": näme hardening; ";
  grpc::Status s = ToGrpcStatus(absl::InvalidArgumentError(message));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const std::string& cut = s.error_message();
  EXPECT_LT(cut.size(), kMaxStatusMessageBytes + 64);
  EXPECT_TRUE(IsUtf8(cut));
  EXPECT_EQ(cut.rfind("sim-0: näme hardening; sim-1", 0), 0u);
  const size_t kept = cut.find("... (");
  ASSERT_NE(kept, std::string::npos);
  EXPECT_LE(kept, kMaxStatusMessageBytes);
  EXPECT_EQ(message.compare(0, kept, cut, 0, kept), 0);
  EXPECT_NE(cut.find("(" + std::to_string(message.size() - kept) + " more bytes"),
            std::string::npos)
      << cut.substr(kept);
}

}  // namespace
}  // namespace smbfleet::collector

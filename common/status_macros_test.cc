#include "common/status_macros.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace smbfleet {
namespace {

absl::Status FailWhen(bool fail) {
  if (fail) return absl::InvalidArgumentError("bad input");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<std::string>> MakeText(bool fail) {
  if (fail) return absl::NotFoundError("no text");
  return std::make_unique<std::string>("text");
}

int calls_after = 0;

absl::Status Twice(bool first_fails, bool second_fails) {
  RETURN_IF_ERROR(FailWhen(first_fails));
  RETURN_IF_ERROR(MakeText(second_fails));
  ++calls_after;
  return absl::OkStatus();
}

absl::StatusOr<size_t> Length(bool fail) {
  ASSIGN_OR_RETURN(std::unique_ptr<std::string> text, MakeText(fail));
  ASSIGN_OR_RETURN(auto again, MakeText(false));  // two on one function, move-only values
  return text->size() + again->size();
}

TEST(StatusMacrosTest, ReturnIfErrorPassesTheFirstErrorOn) {
  calls_after = 0;
  EXPECT_EQ(Twice(true, false).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Twice(false, true).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(calls_after, 0);
  EXPECT_TRUE(Twice(false, false).ok());
  EXPECT_EQ(calls_after, 1);
}

TEST(StatusMacrosTest, AssignOrReturnMovesTheValueOrReturnsTheError) {
  auto ok = Length(false);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 8u);
  auto failed = Length(true);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(failed.status().message(), "no text");
}

}  // namespace
}  // namespace smbfleet

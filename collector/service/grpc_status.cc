#include "collector/service/grpc_status.h"

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/safe_text.h"

namespace smbfleet::collector {

namespace {
// What the log keeps of a message too long for the answer.
constexpr size_t kLoggedMessageMaxBytes = 64 * 1024;
}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(status.code());
  if (status.message().size() <= kMaxStatusMessageBytes) {
    return grpc::Status(code, std::string(status.message()));
  }
  // Whole in the log, cut in the answer: the message travels as a header (grpc-message,
  // percent-encoded), and clients refuse headers over 8 KiB by default, with an error that
  // no longer says what went wrong.
  absl::string_view kept = Utf8Prefix(status.message(), kMaxStatusMessageBytes);
  Logger("collector")
      ->warn("answered {} with its message cut to {} bytes; the message: {}",
             absl::StatusCodeToString(status.code()), kept.size(),
             LogSafe(status.message(), kLoggedMessageMaxBytes));
  return grpc::Status(code, absl::StrCat(kept, "... (", status.message().size() - kept.size(),
                                         " more bytes: the collector logs them)"));
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

bool CallerGone(const grpc::CallbackServerContext& context) {
  // The server's deadline is the caller's; a call past it is cancelled by gRPC, but the check
  // of the time does not wait for that to have happened.
  return context.IsCancelled() || context.deadline() <= std::chrono::system_clock::now();
}

grpc::Status TooLarge(const char* rpc, size_t bytes, uint64_t limit) {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      absl::StrCat(rpc, " request of ", bytes,
                                   " bytes is over limits.max_message_bytes (", limit, ")"));
}

}  // namespace smbfleet::collector

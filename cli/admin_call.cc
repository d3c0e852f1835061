#include "cli/admin_call.h"

#include <atomic>

#include "cli/exit_code.h"
#include "cli/render.h"
#include "common/json.h"
#include "grpc/grpc.h"

namespace smbfleet::cli {
namespace {

// One smbfleetctl run makes its calls with one deadline; atomic because a command may call
// from more than one thread.
std::atomic<int64_t> call_timeout_ms{kDefaultCallTimeout.count()};

}  // namespace

void SetCallTimeout(std::chrono::milliseconds timeout) { call_timeout_ms = timeout.count(); }

std::chrono::milliseconds CallTimeout() {
  return std::chrono::milliseconds(call_timeout_ms.load());
}

void SetReconnectBackoff(grpc::ChannelArguments& args) {
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
}

bool AwaitConnection(grpc::Channel& channel, std::chrono::milliseconds wait) {
  return channel.WaitForConnected(std::chrono::system_clock::now() + wait);
}

int FailedCall(const grpc::Status& status, const std::string& what, std::ostream& err) {
  err << "smbfleetctl: " << Clean(what) << ": " << Clean(status.error_message()) << " ("
      << static_cast<int>(status.error_code()) << ")\n";
  return ExitCodeFor(status.error_code());
}

int PrintJson(const google::protobuf::Message& message, std::ostream& out, std::ostream& err) {
  auto json = ToJson(message);
  if (!json.ok()) {
    err << "smbfleetctl: " << Clean(json.status().message()) << "\n";
    return kExitFailed;
  }
  out << *json;
  return kExitOk;
}

}  // namespace smbfleet::cli

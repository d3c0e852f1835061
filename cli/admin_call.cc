#include "cli/admin_call.h"

#include "cli/exit_code.h"
#include "cli/render.h"
#include "common/json.h"

namespace smbfleet::cli {

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

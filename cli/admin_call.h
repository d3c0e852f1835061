#ifndef SMBFLEET_CLI_ADMIN_CALL_H_
#define SMBFLEET_CLI_ADMIN_CALL_H_

// What every smbfleetctl command does around an AdminService call: a deadline, the collector's
// refusal printed escaped with the exit code it maps to, a response printed as JSON.

#include <chrono>
#include <ostream>
#include <string>

#include "google/protobuf/message.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace smbfleet::cli {

// Each call's deadline unless --call-timeout says otherwise.
inline constexpr std::chrono::milliseconds kDefaultCallTimeout = std::chrono::seconds(30);

// The deadline of every call from here on (the global --call-timeout; RunCommandLine sets it
// before the command's first call).
void SetCallTimeout(std::chrono::milliseconds timeout);
std::chrono::milliseconds CallTimeout();

using AdminStub = smbfleet::v1::AdminService::StubInterface;

// fn(context) with a context that carries the call deadline.
template <typename Fn>
grpc::Status WithDeadline(Fn fn) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + CallTimeout());
  return fn(&context);
}

// Call(&AdminStub::ListHosts, stub, request, &response), with the deadline.
template <typename Req, typename Resp>
grpc::Status Call(grpc::Status (AdminStub::*method)(grpc::ClientContext*, const Req&, Resp*),
                  AdminStub& stub, const Req& request, Resp* response) {
  return WithDeadline(
      [&](grpc::ClientContext* context) { return (stub.*method)(context, request, response); });
}

// "smbfleetctl: WHAT: MESSAGE (CODE)" on err, the collector's message escaped (it may quote a
// host's or a person's string); returns the exit code for the status (cli/exit_code.h).
int FailedCall(const grpc::Status& status, const std::string& what, std::ostream& err);

// The message as JSON on out; a message that cannot be rendered (a string that is not UTF-8)
// is reported on err instead.
int PrintJson(const google::protobuf::Message& message, std::ostream& out, std::ostream& err);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_ADMIN_CALL_H_

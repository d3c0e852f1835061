#ifndef SMBFLEET_CLI_ADMIN_CALL_H_
#define SMBFLEET_CLI_ADMIN_CALL_H_

// What every smbfleetctl command does around an AdminService call: a deadline, the collector's
// refusal printed escaped with the exit code it maps to, a response printed as JSON.

#include <chrono>
#include <ostream>
#include <string>

#include "google/protobuf/message.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/channel_arguments.h"
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

// How long a command waits, before its first call, for the collector to take its connection.
inline constexpr std::chrono::milliseconds kConnectWait = std::chrono::seconds(2);

// smbfleetctl's reconnect timing: a failed connection attempt is tried again after 100 ms
// (growing to at most 500 ms), not gRPC's default of a second, so that AwaitConnection's wait
// holds several attempts.
void SetReconnectBackoff(grpc::ChannelArguments& args);

// Waits until `channel` is connected, at most `wait`. A call on a channel whose connection
// attempt just failed fails at once; this gives the channel's own reconnect attempts the wait:
// a collector that is restarting, and gRPC 1.51 misreading a connection still in progress as
// failed (its client reads errno after other calls; grpc/grpc#35064), which it does now and
// then on a loaded machine. False when not connected by then: the first call then fails with
// gRPC's reason (refused, a TLS error), which the command reports as before.
bool AwaitConnection(grpc::Channel& channel, std::chrono::milliseconds wait);

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

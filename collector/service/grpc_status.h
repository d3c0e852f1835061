#ifndef SMBFLEET_COLLECTOR_SERVICE_GRPC_STATUS_H_
#define SMBFLEET_COLLECTOR_SERVICE_GRPC_STATUS_H_

// The RPC edge: absl::Status to grpc::Status, and the one shape of every queued unary call.

#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/auth/authenticate.h"
#include "collector/auth/authorize.h"
#include "collector/service/work_queue.h"
#include "grpcpp/grpcpp.h"

namespace smbfleet::collector {

// At most this many bytes of an error's message go into the answer; a longer one is cut at a
// character boundary, says how much was cut, and is logged whole.
inline constexpr size_t kMaxStatusMessageBytes = 2048;

grpc::Status ToGrpcStatus(const absl::Status& status);

// The work queue is full. UNAVAILABLE, so that an agent tells "retry later" from "never
// retry" by the code alone (RESOURCE_EXHAUSTED only means a message was too large).
grpc::Status Busy();

// The collector is stopping: UNAVAILABLE, so that the agent keeps the report and sends it to
// this collector once it is back (or to another one).
grpc::Status ShuttingDown();

// A request over its RPC's size limit (limits.max_message_bytes), before any work is queued.
grpc::Status TooLarge(const char* rpc, size_t bytes, uint64_t limit);

// A unary call answered at once, without queueing (e.g. refused before any work).
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context, grpc::Status status);

// A request taken as bytes (a method marked raw, so that its size is checked before it is
// parsed): RESOURCE_EXHAUSTED over `limit` (0: no limit), INVALID_ARGUMENT when it does not parse.
template <typename Request>
grpc::Status ParseLimited(const char* rpc, const grpc::ByteBuffer& raw, uint64_t limit,
                          Request* out) {
  const size_t bytes = raw.Length();
  if (limit > 0 && bytes > limit) return TooLarge(rpc, bytes, limit);
  grpc::ByteBuffer copy(raw);  // Deserialize consumes its buffer; the slices are shared
  if (!grpc::SerializationTraits<Request>::Deserialize(&copy, out).ok()) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        std::string(rpc) + " request is not a valid " + Request::descriptor()->name() + " message");
  }
  return grpc::Status::OK;
}

// The response of a raw method, as bytes.
template <typename Response>
absl::StatusOr<grpc::ByteBuffer> ToByteBuffer(const absl::StatusOr<Response>& response) {
  if (!response.ok()) return response.status();
  grpc::ByteBuffer out;
  bool own_buffer = false;
  grpc::Status s = grpc::SerializationTraits<Response>::Serialize(*response, &out, &own_buffer);
  if (!s.ok()) return absl::InternalError(s.error_message());
  return out;
}

// Why a queued call never reached its handler (for the caller's metrics).
enum class NotRun {
  kBusy,             // the queue was full, or the collector is stopping
  kUnauthenticated,  // the credentials were refused
  kGone,             // the caller gave up (deadline passed, cancelled) while the call waited
};

// Whether the caller of `context` has given up on it: cancelled, or past its deadline.
bool CallerGone(const grpc::CallbackServerContext& context);

// Takes the caller from its credentials (`auth`), runs `call(principal, finish)` on the work
// queue (database work stays off gRPC's threads); the call answers with `finish(result)`, at
// once or later from another thread, and the result is moved into *response. `not_run` (may be
// empty) hears of calls refused before `call`. `bytes`, the request's size, counts against the
// queue's byte bound while the call waits.
//
// A call whose caller gave up while it waited in the queue is not run: nobody would hear its
// answer, and under a backlog longer than the callers' deadlines running it anyway would spend
// the collector on calls that have all expired (an agent resends an unacknowledged report).
template <typename Response, typename Call>
grpc::ServerUnaryReactor* SubmitUnaryAsync(grpc::CallbackServerContext* context,
                                           const Authenticator& auth, WorkQueue* work,
                                           Response* response, Call call,
                                           std::function<void(NotRun)> not_run = nullptr,
                                           uint64_t bytes = 0) {
  auto* reactor = context->DefaultReactor();
  // Authentication runs on the work queue too: a bearer token is looked up in the store.
  WorkQueue::Submitted queued = work->Submit(
      [reactor, context, &auth, response, call = std::move(call), not_run]() mutable {
        if (CallerGone(*context)) {
          if (not_run) not_run(NotRun::kGone);
          reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                                       "the caller gave up while the call waited"));
          return;
        }
        absl::StatusOr<Principal> caller = auth.Authenticate(*context);
        if (!caller.ok()) {
          if (not_run) not_run(NotRun::kUnauthenticated);
          reactor->Finish(ToGrpcStatus(caller.status()));
          return;
        }
        call(*caller, [reactor, response](absl::StatusOr<Response> result) {
          if (!result.ok()) {
            reactor->Finish(ToGrpcStatus(result.status()));
            return;
          }
          *response = *std::move(result);
          reactor->Finish(grpc::Status::OK);
        });
      },
      bytes,
      [reactor, not_run] {
        if (not_run) not_run(NotRun::kBusy);
        reactor->Finish(ShuttingDown());
      });
  if (queued != WorkQueue::Submitted::kQueued) {
    if (not_run) not_run(NotRun::kBusy);
    reactor->Finish(queued == WorkQueue::Submitted::kFull ? Busy() : ShuttingDown());
  }
  return reactor;
}

// The same for a call that answers before it returns: `call(principal)` gives the result.
template <typename Response, typename Call>
grpc::ServerUnaryReactor* SubmitUnary(grpc::CallbackServerContext* context,
                                      const Authenticator& auth, WorkQueue* work,
                                      Response* response, Call call,
                                      std::function<void(NotRun)> not_run = nullptr,
                                      uint64_t bytes = 0) {
  return SubmitUnaryAsync(
      context, auth, work, response,
      [call = std::move(call)](const Principal& caller, const auto& finish) mutable {
        finish(call(caller));
      },
      std::move(not_run), bytes);
}

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_GRPC_STATUS_H_

#include "collector/service/agent_service.h"

#include "absl/strings/str_cat.h"
#include "collector/push/watch_reactor.h"
#include "collector/service/grpc_status.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;

// Looked up once: Logger() takes a lock and a registry lookup, and every report logs here.
const std::shared_ptr<spdlog::logger>& Log() {
  static const std::shared_ptr<spdlog::logger> log = Logger("collector");
  return log;
}

v1::ReportResponse::Outcome ToProto(SaveOutcome outcome) {
  switch (outcome) {
    case SaveOutcome::kStored:
      return v1::ReportResponse::OUTCOME_STORED;
    case SaveOutcome::kUnchanged:
      return v1::ReportResponse::OUTCOME_UNCHANGED;
    case SaveOutcome::kDuplicate:
      return v1::ReportResponse::OUTCOME_DUPLICATE;
  }
  return v1::ReportResponse::OUTCOME_UNSPECIFIED;
}

}  // namespace

void AgentServiceImpl::HandleReport(const Principal& agent, const v1::ReportRequest& request,
                                    std::function<void(absl::StatusOr<v1::ReportResponse>)> done) {
  if (absl::Status allowed = Authorize(agent, Permission::kReport); !allowed.ok()) {
    // A caller without a certificate gets here as anonymous: UNAUTHENTICATED, not "not an agent".
    if (metrics_ != nullptr) {
      metrics_->ReportRefused(absl::IsUnauthenticated(allowed) ? ReportRefusal::kUnauthenticated
                                                               : ReportRefusal::kNotAgent);
    }
    done(allowed);
    return;
  }
  pipeline_->IngestAsync(
      agent.name, request,
      [name = agent.name, &request, done = std::move(done)](absl::StatusOr<IngestResult> result) {
        if (absl::IsInvalidArgument(result.status())) {
          Log()->warn("report from {} refused: {}", LogSafe(name), LogSafe(result.status()));
        }
        if (!result.ok()) {
          done(result.status());
          return;
        }
        v1::ReportResponse response;
        response.set_host(name);
        *response.mutable_received_at() =
            google::protobuf::util::TimeUtil::TimeTToTimestamp(absl::ToTimeT(result->received_at));
        response.set_outcome(result->send_full ? v1::ReportResponse::OUTCOME_SEND_FULL
                                               : ToProto(result->outcome));
        response.set_digest_reports(true);
        // Every report passes here: its fields are made safe only when the line is written.
        if (Log()->should_log(spdlog::level::debug)) {
          Log()->debug("report {} from {} (agent {}): {}", LogSafe(request.report_id()),
                       LogSafe(name), LogSafe(request.posture().host().agent_version()),
                       v1::ReportResponse::Outcome_Name(response.outcome()));
        }
        done(std::move(response));
      });
}

grpc::ServerUnaryReactor* AgentServiceImpl::Report(grpc::CallbackServerContext* context,
                                                   const v1::ReportRequest* request,
                                                   v1::ReportResponse* response) {
  if (metrics_ != nullptr) metrics_->ReportReceived();
  // The call may finish on another thread: a report waits for its batch without holding a store
  // thread.
  return SubmitUnaryAsync(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p, const auto& finish) {
        HandleReport(p, *request, finish);
      },
      [metrics = metrics_](NotRun why) {
        if (metrics == nullptr) return;
        switch (why) {
          case NotRun::kBusy:
            metrics->ReportRefused(ReportRefusal::kBusy);
            return;
          case NotRun::kUnauthenticated:
            metrics->ReportRefused(ReportRefusal::kUnauthenticated);
            return;
          case NotRun::kGone:
            metrics->ReportRefused(ReportRefusal::kGone);
            return;
        }
      },
      request->ByteSizeLong());
}

grpc::ServerWriteReactor<v1::WatchResponse>* AgentServiceImpl::Watch(
    grpc::CallbackServerContext* context, const v1::WatchRequest* request) {
  if (size_t bytes = request->ByteSizeLong();
      max_message_bytes_ > 0 && bytes > max_message_bytes_) {
    return RejectWatch(TooLarge("Watch", bytes, max_message_bytes_));
  }
  auto agent = authenticator_->Authenticate(*context);
  absl::Status allowed = agent.ok() ? Authorize(*agent, Permission::kWatch) : agent.status();
  if (!allowed.ok()) return RejectWatch(ToGrpcStatus(allowed));
  Log()->info("watch stream of {} opened (agent {})", LogSafe(agent->name),
              LogSafe(request->agent_version()));
  auto* reactor = new WatchReactor(registry_, agent->name, {agent->serial, agent->fingerprint});
  if (approver_sets_ != nullptr) {
    // Before any order: the agent checks the orders that follow against this set.
    if (std::optional<v1::SignedApproverSet> set = approver_sets_->Current()) {
      v1::WatchResponse m;
      *m.mutable_approver_set() = *std::move(set);
      reactor->Send(m);
    }
  }
  if (dispatcher_ != nullptr) {
    // The orders it missed while away, read off gRPC's threads; the agent names the changes it
    // finished so that they are not sent again.
    std::vector<std::string> completed(request->completed_change_ids().begin(),
                                       request->completed_change_ids().end());
    bool queued = work_->TrySubmit(
        [dispatcher = dispatcher_, host = agent->name, completed = std::move(completed)] {
          dispatcher->Connected(host, completed);
        });
    if (!queued) {
      Log()->warn("pending orders of {} not sent: work queue full (sent on the next signal)",
                  LogSafe(agent->name));
    }
  }
  return reactor;
}

grpc::ServerUnaryReactor* AgentServiceImpl::AckChange(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* raw,
                                                      grpc::ByteBuffer* response) {
  v1::AckChangeRequest request;
  if (grpc::Status s = ParseLimited("AckChange", *raw, max_message_bytes_, &request); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  // Acks of one change are applied together (ChangeService::AckAsync): one that waits for the
  // step after the running one does not hold a work-queue thread.
  return SubmitUnaryAsync(
      context, *authenticator_, work_, response,
      [this, request = std::move(request)](const Principal& agent, const auto& finish) mutable {
        if (absl::Status allowed = Authorize(agent, Permission::kAckChange); !allowed.ok()) {
          finish(allowed);
          return;
        }
        if (workflow_ == nullptr) {
          finish(absl::NotFoundError(absl::StrCat("no change order '",
                                                  request.change_id().substr(0, 64),
                                                  "' was sent to ", agent.name)));
          return;
        }
        workflow_->AckAsync(agent.name, std::move(request),
                            [finish](absl::StatusOr<v1::AckChangeResponse> answer) {
                              finish(ToByteBuffer(answer));
                            });
      },
      nullptr, raw->Length());
}

}  // namespace smbfleet::collector

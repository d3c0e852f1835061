#ifndef SMBFLEET_COLLECTOR_SERVICE_AGENT_SERVICE_H_
#define SMBFLEET_COLLECTOR_SERVICE_AGENT_SERVICE_H_

#include "collector/auth/authenticate.h"
#include "collector/auth/authorize.h"
#include "collector/changes/change_service.h"
#include "collector/changes/order_dispatcher.h"
#include "collector/ingest/pipeline.h"
#include "collector/metrics/metrics.h"
#include "collector/push/stream_registry.h"
#include "collector/service/work_queue.h"
#include "collector/trust/approver_sets.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::collector {

// AgentService over gRPC: reports go through the pipeline on the work queue, Watch streams
// into the registry (and get their pending change orders), acks into the change workflow. The
// host is always the certificate's.
//
// AckChange takes its request as bytes, so that one over max_message_bytes is refused before it
// is parsed (gRPC's receive limit is the report's, the largest of all).
class AgentServiceImpl final : public smbfleet::v1::AgentService::WithRawCallbackMethod_AckChange<
                                   smbfleet::v1::AgentService::CallbackService> {
 public:
  // `workflow` and `dispatcher` may be null: then no orders are sent and acks are NOT_FOUND.
  AgentServiceImpl(ReportPipeline* pipeline, StreamRegistry* registry,
                   const Authenticator* authenticator, WorkQueue* work,
                   changes::ChangeService* workflow = nullptr,
                   changes::OrderDispatcher* dispatcher = nullptr)
      : pipeline_(pipeline),
        registry_(registry),
        authenticator_(authenticator),
        work_(work),
        workflow_(workflow),
        dispatcher_(dispatcher) {}

  // Each Watch stream gets the latest approver set first (not owned; null: none is sent).
  void set_approver_sets(ApproverSets* sets) { approver_sets_ = sets; }
  // Counts reports received and those refused before the pipeline (not owned; may stay null).
  void set_metrics(Metrics* metrics) { metrics_ = metrics; }
  // Watch and AckChange requests larger than this are refused RESOURCE_EXHAUSTED (0: no limit
  // but the server's).
  void set_max_message_bytes(uint64_t bytes) { max_message_bytes_ = bytes; }

  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const smbfleet::v1::ReportRequest* request,
                                   smbfleet::v1::ReportResponse* response) override;
  grpc::ServerWriteReactor<smbfleet::v1::WatchResponse>* Watch(
      grpc::CallbackServerContext* context, const smbfleet::v1::WatchRequest* request) override;
  grpc::ServerUnaryReactor* AckChange(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;

 private:
  // Authorizes the caller and hands the report to the pipeline; `done` gets the answer (on
  // this thread, or on the one storing the batch of a digest-only report).
  void HandleReport(const Principal& agent, const smbfleet::v1::ReportRequest& request,
                    std::function<void(absl::StatusOr<smbfleet::v1::ReportResponse>)> done);

  ReportPipeline* pipeline_;
  StreamRegistry* registry_;
  const Authenticator* authenticator_;
  WorkQueue* work_;
  changes::ChangeService* workflow_;
  changes::OrderDispatcher* dispatcher_;
  ApproverSets* approver_sets_ = nullptr;
  Metrics* metrics_ = nullptr;
  uint64_t max_message_bytes_ = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_AGENT_SERVICE_H_

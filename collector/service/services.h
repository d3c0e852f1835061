#ifndef SMBFLEET_COLLECTOR_SERVICE_SERVICES_H_
#define SMBFLEET_COLLECTOR_SERVICE_SERVICES_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/config.h"
#include "collector/ingest/validate.h"
#include "collector/push/stream_registry.h"
#include "collector/service/work_queue.h"
#include "collector/store/store.h"
#include "common/tls.h"
#include "grpcpp/grpcpp.h"
#include "policy/policy.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::collector {

grpc::Status ToGrpcStatus(const absl::Status& status);

class AgentServiceImpl final : public smbfleet::v1::AgentService::CallbackService {
 public:
  // policy may be null: then nothing is evaluated.
  AgentServiceImpl(Store* store, StreamRegistry* registry, WorkQueue* work,
                   const policy::Policy* policy);

  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const smbfleet::v1::ReportRequest* request,
                                   smbfleet::v1::ReportResponse* response) override;
  grpc::ServerWriteReactor<smbfleet::v1::WatchResponse>* Watch(
      grpc::CallbackServerContext* context, const smbfleet::v1::WatchRequest* request) override;
  grpc::ServerUnaryReactor* AckChange(grpc::CallbackServerContext* context,
                                      const smbfleet::v1::AckChangeRequest* request,
                                      smbfleet::v1::AckChangeResponse* response) override;

 private:
  void Evaluate(const std::string& host, const smbfleet::v1::Posture& posture);

  Store* store_;
  StreamRegistry* registry_;
  WorkQueue* work_;
  const policy::Policy* policy_;
  IngestLimits limits_;
};

class AdminServiceImpl final : public smbfleet::v1::AdminService::CallbackService {
 public:
  AdminServiceImpl(Store* store, StreamRegistry* registry, WorkQueue* work);

  grpc::ServerUnaryReactor* ListHosts(grpc::CallbackServerContext* context,
                                      const smbfleet::v1::ListHostsRequest* request,
                                      smbfleet::v1::ListHostsResponse* response) override;
  grpc::ServerUnaryReactor* GetHost(grpc::CallbackServerContext* context,
                                    const smbfleet::v1::GetHostRequest* request,
                                    smbfleet::v1::GetHostResponse* response) override;
  grpc::ServerUnaryReactor* RequestReport(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::RequestReportRequest* request,
                                          smbfleet::v1::RequestReportResponse* response) override;
  grpc::ServerUnaryReactor* GetCompliance(grpc::CallbackServerContext* context,
                                          const smbfleet::v1::GetComplianceRequest* request,
                                          smbfleet::v1::GetComplianceResponse* response) override;
  grpc::ServerUnaryReactor* ListFindings(grpc::CallbackServerContext* context,
                                         const smbfleet::v1::ListFindingsRequest* request,
                                         smbfleet::v1::ListFindingsResponse* response) override;

 private:
  Store* store_;
  StreamRegistry* registry_;
  WorkQueue* work_;
};

// The whole collector: services, registry, work queue and gRPC server.
class Collector {
 public:
  // Starts listening. config.listen may use port 0; port() tells the one chosen.
  static absl::StatusOr<std::unique_ptr<Collector>> Start(
      const CollectorConfig& config, const TlsMaterial& tls, std::unique_ptr<Store> store,
      std::unique_ptr<policy::Policy> policy = nullptr);
  ~Collector();

  int port() const { return port_; }
  StreamRegistry* registry() { return registry_.get(); }
  void Shutdown();
  void Wait();

 private:
  Collector() = default;
  std::unique_ptr<Store> store_;
  std::unique_ptr<policy::Policy> policy_;
  std::unique_ptr<StreamRegistry> registry_;
  std::unique_ptr<WorkQueue> work_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<AdminServiceImpl> admin_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_SERVICES_H_

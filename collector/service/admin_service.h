#ifndef SMBFLEET_COLLECTOR_SERVICE_ADMIN_SERVICE_H_
#define SMBFLEET_COLLECTOR_SERVICE_ADMIN_SERVICE_H_

#include "collector/admin/admin_api.h"
#include "collector/service/work_queue.h"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace smbfleet::collector {

// AdminService over gRPC: each call is AdminApi's, run on the work queue.
class AdminServiceImpl final : public smbfleet::v1::AdminService::CallbackService {
 public:
  AdminServiceImpl(AdminApi* api, WorkQueue* work) : api_(api), work_(work) {}

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
  AdminApi* api_;
  WorkQueue* work_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_ADMIN_SERVICE_H_

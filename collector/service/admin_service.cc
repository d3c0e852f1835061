#include "collector/service/admin_service.h"

#include "collector/service/grpc_status.h"

namespace smbfleet::collector {

namespace v1 = smbfleet::v1;

grpc::ServerUnaryReactor* AdminServiceImpl::ListHosts(grpc::CallbackServerContext* context,
                                                      const v1::ListHostsRequest* request,
                                                      v1::ListHostsResponse* response) {
  return SubmitUnary(context, work_, response,
                     [this, request](const Principal& p) { return api_->ListHosts(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetHost(grpc::CallbackServerContext* context,
                                                    const v1::GetHostRequest* request,
                                                    v1::GetHostResponse* response) {
  return SubmitUnary(context, work_, response,
                     [this, request](const Principal& p) { return api_->GetHost(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RequestReport(grpc::CallbackServerContext* context,
                                                          const v1::RequestReportRequest* request,
                                                          v1::RequestReportResponse* response) {
  return SubmitUnary(context, work_, response, [this, request](const Principal& p) {
    return api_->RequestReport(p, *request);
  });
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetCompliance(grpc::CallbackServerContext* context,
                                                          const v1::GetComplianceRequest* request,
                                                          v1::GetComplianceResponse* response) {
  return SubmitUnary(context, work_, response, [this, request](const Principal& p) {
    return api_->GetCompliance(p, *request);
  });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListFindings(grpc::CallbackServerContext* context,
                                                         const v1::ListFindingsRequest* request,
                                                         v1::ListFindingsResponse* response) {
  return SubmitUnary(context, work_, response, [this, request](const Principal& p) {
    return api_->ListFindings(p, *request);
  });
}

}  // namespace smbfleet::collector

// AdminService's enrollment calls: tokens, issued certificates and trusted host labels.
#include "collector/service/admin_service.h"
#include "collector/service/grpc_status.h"

namespace smbfleet::collector {

namespace v1 = smbfleet::v1;

grpc::ServerUnaryReactor* AdminServiceImpl::CreateEnrollmentToken(
    grpc::CallbackServerContext* context, const v1::CreateEnrollmentTokenRequest* request,
    v1::CreateEnrollmentTokenResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->CreateEnrollmentToken(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListEnrollmentTokens(
    grpc::CallbackServerContext* context, const v1::ListEnrollmentTokensRequest* request,
    v1::ListEnrollmentTokensResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ListEnrollmentTokens(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::RevokeEnrollmentToken(
    grpc::CallbackServerContext* context, const v1::RevokeEnrollmentTokenRequest* request,
    v1::RevokeEnrollmentTokenResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->RevokeEnrollmentToken(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListCertificates(
    grpc::CallbackServerContext* context, const v1::ListCertificatesRequest* request,
    v1::ListCertificatesResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->ListCertificates(p, *request); });
}

grpc::ServerUnaryReactor* AdminServiceImpl::SetHostLabels(grpc::CallbackServerContext* context,
                                                          const v1::SetHostLabelsRequest* request,
                                                          v1::SetHostLabelsResponse* response) {
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request](const Principal& p) { return api_->SetHostLabels(p, *request); });
}

}  // namespace smbfleet::collector

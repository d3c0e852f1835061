#include "collector/service/enrollment_service.h"

#include "collector/service/grpc_status.h"

namespace smbfleet::collector {

namespace v1 = smbfleet::v1;

grpc::ServerUnaryReactor* EnrollmentServiceImpl::Enroll(grpc::CallbackServerContext* context,
                                                        const v1::EnrollRequest* request,
                                                        v1::EnrollResponse* response) {
  return SubmitUnary(context, *authenticator_, work_, response,
                     [this, request](const Principal& p) { return api_->Enroll(p, *request); });
}

grpc::ServerUnaryReactor* EnrollmentServiceImpl::RenewCertificate(
    grpc::CallbackServerContext* context, const v1::RenewCertificateRequest* request,
    v1::RenewCertificateResponse* response) {
  // The principal carries the presented certificate's serial and fingerprint (the
  // authenticator has already refused a revoked one).
  return SubmitUnary(context, *authenticator_, work_, response,
                     [this, request](const Principal& p) {
                       return api_->RenewCertificate(p, p.serial, p.fingerprint, *request);
                     });
}

}  // namespace smbfleet::collector

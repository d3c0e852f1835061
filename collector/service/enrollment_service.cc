#include "collector/service/enrollment_service.h"

#include "collector/service/grpc_status.h"

namespace smbfleet::collector {

namespace v1 = smbfleet::v1;

grpc::ServerUnaryReactor* EnrollmentServiceImpl::Enroll(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* raw,
                                                        grpc::ByteBuffer* response) {
  v1::EnrollRequest request;
  if (grpc::Status s = ParseLimited("Enroll", *raw, max_message_bytes_, &request); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  return SubmitUnary(
      context, *authenticator_, work_, response,
      [this, request = std::move(request)](const Principal& p) {
        return ToByteBuffer(api_->Enroll(p, request));
      },
      nullptr, raw->Length());
}

grpc::ServerUnaryReactor* EnrollmentServiceImpl::RenewCertificate(
    grpc::CallbackServerContext* context, const v1::RenewCertificateRequest* request,
    v1::RenewCertificateResponse* response) {
  if (size_t bytes = request->ByteSizeLong();
      max_message_bytes_ > 0 && bytes > max_message_bytes_) {
    return FinishNow(context, TooLarge("RenewCertificate", bytes, max_message_bytes_));
  }
  // The principal carries the presented certificate's serial and fingerprint (the
  // authenticator has already refused a revoked one).
  return SubmitUnary(context, *authenticator_, work_, response,
                     [this, request](const Principal& p) {
                       return api_->RenewCertificate(p, p.serial, p.fingerprint, *request);
                     });
}

}  // namespace smbfleet::collector

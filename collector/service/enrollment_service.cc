#include "collector/service/enrollment_service.h"

#include "collector/service/grpc_status.h"
#include "common/tls.h"

namespace smbfleet::collector {

namespace v1 = smbfleet::v1;

grpc::ServerUnaryReactor* EnrollmentServiceImpl::Enroll(grpc::CallbackServerContext* context,
                                                        const v1::EnrollRequest* request,
                                                        v1::EnrollResponse* response) {
  return SubmitUnary(context, work_, response,
                     [this, request](const Principal& p) { return api_->Enroll(p, *request); });
}

grpc::ServerUnaryReactor* EnrollmentServiceImpl::RenewCertificate(
    grpc::CallbackServerContext* context, const v1::RenewCertificateRequest* request,
    v1::RenewCertificateResponse* response) {
  // The certificate presented, for the revocation check (Authorize has vetted the kind).
  absl::StatusOr<PeerIdentity> peer = PeerIdentityOf(*context);
  std::string serial = peer.ok() ? peer->serial : "";
  std::string fingerprint = peer.ok() ? peer->fingerprint : "";
  return SubmitUnary(
      context, work_, response,
      [this, request, serial = std::move(serial), fingerprint = std::move(fingerprint)](
          const Principal& p) { return api_->RenewCertificate(p, serial, fingerprint, *request); });
}

}  // namespace smbfleet::collector

#ifndef SMBFLEET_COLLECTOR_SERVICE_ENROLLMENT_SERVICE_H_
#define SMBFLEET_COLLECTOR_SERVICE_ENROLLMENT_SERVICE_H_

#include "collector/auth/authenticate.h"
#include "collector/enroll/enrollment_api.h"
#include "collector/service/work_queue.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::collector {

// EnrollmentService over gRPC: each call is EnrollmentApi's, run on the work queue. Enroll is
// the one call a caller without a client certificate may make.
class EnrollmentServiceImpl final : public smbfleet::v1::EnrollmentService::CallbackService {
 public:
  EnrollmentServiceImpl(EnrollmentApi* api, const Authenticator* authenticator, WorkQueue* work)
      : api_(api), authenticator_(authenticator), work_(work) {}

  grpc::ServerUnaryReactor* Enroll(grpc::CallbackServerContext* context,
                                   const smbfleet::v1::EnrollRequest* request,
                                   smbfleet::v1::EnrollResponse* response) override;
  grpc::ServerUnaryReactor* RenewCertificate(
      grpc::CallbackServerContext* context, const smbfleet::v1::RenewCertificateRequest* request,
      smbfleet::v1::RenewCertificateResponse* response) override;

 private:
  EnrollmentApi* api_;
  const Authenticator* authenticator_;
  WorkQueue* work_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_ENROLLMENT_SERVICE_H_

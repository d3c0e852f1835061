#ifndef SMBFLEET_COLLECTOR_SERVICE_ENROLLMENT_SERVICE_H_
#define SMBFLEET_COLLECTOR_SERVICE_ENROLLMENT_SERVICE_H_

#include "collector/auth/authenticate.h"
#include "collector/enroll/enrollment_api.h"
#include "collector/service/work_queue.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::collector {

// EnrollmentService over gRPC: each call is EnrollmentApi's, run on the work queue. Enroll is
// the one call a caller without a client certificate may make: it takes its request as bytes, so
// that one over max_message_bytes is refused before it is parsed.
class EnrollmentServiceImpl final
    : public smbfleet::v1::EnrollmentService::WithRawCallbackMethod_Enroll<
          smbfleet::v1::EnrollmentService::CallbackService> {
 public:
  EnrollmentServiceImpl(EnrollmentApi* api, const Authenticator* authenticator, WorkQueue* work)
      : api_(api), authenticator_(authenticator), work_(work) {}

  // Enroll and RenewCertificate requests larger than this are refused RESOURCE_EXHAUSTED (0: no
  // limit but the server's).
  void set_max_message_bytes(uint64_t bytes) { max_message_bytes_ = bytes; }

  grpc::ServerUnaryReactor* Enroll(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RenewCertificate(
      grpc::CallbackServerContext* context, const smbfleet::v1::RenewCertificateRequest* request,
      smbfleet::v1::RenewCertificateResponse* response) override;

 private:
  EnrollmentApi* api_;
  const Authenticator* authenticator_;
  WorkQueue* work_;
  uint64_t max_message_bytes_ = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVICE_ENROLLMENT_SERVICE_H_

#include "collector/service/grpc_status.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "collector/auth/authenticate.h"
#include "common/safe_text.h"
#include "grpcpp/grpcpp.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::collector {
namespace {

TEST(GrpcStatusTest, KeepsCodeAndShortMessage) {
  grpc::Status s = ToGrpcStatus(absl::FailedPreconditionError("host fs01: no posture yet"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(), "host fs01: no posture yet");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

// One line per host of a 1,000-host proposal: past what a client takes as a header (8 KiB).
TEST(GrpcStatusTest, LongMessageIsCutOnACharacterBoundaryAndSaysHowMuchWasCut) {
  std::string message;
  for (int i = 0; i < 1000; ++i) message += "sim-" + std::to_string(i) + ": näme hardening; ";
  grpc::Status s = ToGrpcStatus(absl::InvalidArgumentError(message));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const std::string& cut = s.error_message();
  EXPECT_LT(cut.size(), kMaxStatusMessageBytes + 64);
  EXPECT_TRUE(IsUtf8(cut));
  EXPECT_EQ(cut.rfind("sim-0: näme hardening; sim-1", 0), 0u);
  const size_t kept = cut.find("... (");
  ASSERT_NE(kept, std::string::npos);
  EXPECT_LE(kept, kMaxStatusMessageBytes);
  EXPECT_EQ(message.compare(0, kept, cut, 0, kept), 0);
  EXPECT_NE(cut.find("(" + std::to_string(message.size() - kept) + " more bytes"),
            std::string::npos)
      << cut.substr(kept);
}

// Report calls that go through SubmitUnaryAsync on `work`, as the collector's do: counts the
// calls that ran and those not run because their caller had gone.
class QueuedReports : public smbfleet::v1::AgentService::CallbackService {
 public:
  QueuedReports(const Authenticator* auth, WorkQueue* work) : auth_(auth), work_(work) {}

  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const smbfleet::v1::ReportRequest* /*request*/,
                                   smbfleet::v1::ReportResponse* response) override {
    return SubmitUnaryAsync(
        context, *auth_, work_, response,
        [this](const Principal& /*caller*/, const auto& finish) {
          ran.fetch_add(1);
          finish(smbfleet::v1::ReportResponse());
        },
        [this](NotRun why) {
          if (why == NotRun::kGone) gone.fetch_add(1);
        });
  }

  std::atomic<int> ran{0};
  std::atomic<int> gone{0};

 private:
  const Authenticator* auth_;
  WorkQueue* work_;
};

// A backlog longer than the agents' deadlines: a call whose caller gave up while it waited is
// answered without running (the agent resends the report), and the call queued behind it runs.
TEST(SubmitUnaryTest, ACallWhoseCallerGaveUpWhileItWaitedIsNotRun) {
  absl::StatusOr<std::unique_ptr<Authenticator>> auth = Authenticator::Create({});
  ASSERT_TRUE(auth.ok()) << auth.status();
  WorkQueue work(1, 10);
  QueuedReports service(auth->get(), &work);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = smbfleet::v1::AgentService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));

  // The queue's one thread is held, so calls wait behind it.
  absl::Notification release;
  ASSERT_TRUE(work.TrySubmit([&] { release.WaitForNotification(); }));

  grpc::ClientContext impatient;
  impatient.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  smbfleet::v1::ReportResponse impatient_response;
  EXPECT_EQ(
      stub->Report(&impatient, smbfleet::v1::ReportRequest(), &impatient_response).error_code(),
      grpc::StatusCode::DEADLINE_EXCEEDED);

  grpc::ClientContext patient;
  patient.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  smbfleet::v1::ReportResponse patient_response;
  const smbfleet::v1::ReportRequest patient_request;
  grpc::Status patient_status;
  absl::Notification patient_done;
  stub->async()->Report(&patient, &patient_request, &patient_response, [&](grpc::Status s) {
    patient_status = std::move(s);
    patient_done.Notify();
  });
  absl::SleepFor(absl::Milliseconds(200));  // both calls queued; the first one's deadline past
  release.Notify();
  ASSERT_TRUE(patient_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(patient_status.ok()) << patient_status.error_message();
  EXPECT_EQ(service.ran.load(), 1);
  EXPECT_EQ(service.gone.load(), 1);
  server->Shutdown();
}

}  // namespace
}  // namespace smbfleet::collector

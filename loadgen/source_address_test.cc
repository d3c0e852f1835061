#include "loadgen/source_address.h"

#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::loadgen {
namespace {

TEST(SourceAddressTest, SkipsZeroAndBroadcastOctets) {
  struct Case {
    int64_t index;
    const char* want;
  };
  for (const Case& c : {Case{0, "127.1.0.1"}, Case{253, "127.1.0.254"}, Case{254, "127.1.1.1"},
                        Case{254 * 256, "127.2.0.1"}, Case{99'999, "127.2.137.178"},
                        Case{254 * 256 * 255 - 1, "127.255.255.254"}}) {
    auto got = SourceAddress(c.index);
    ASSERT_TRUE(got.ok()) << c.index << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.index;
  }
  EXPECT_EQ(SourceAddress(254 * 256 * 255).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(SourceAddress(-1).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(SourceAddressTest, RefusesTextThatIsNoAddress) {
  grpc::ChannelArguments args;
  const absl::Status s = BindSourceAddress("127.1.0", args);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("127.1.0"), std::string::npos) << s;
}

// Answers each Report with the address the call came from, as the server saw it.
class PeerEcho final : public smbfleet::v1::AgentService::CallbackService {
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const smbfleet::v1::ReportRequest* /*request*/,
                                   smbfleet::v1::ReportResponse* response) override {
    response->set_host(context->peer());
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

TEST(SourceAddressTest, ConnectionsComeFromTheBoundAddress) {
  PeerEcho service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  for (const char* source : {"127.1.0.7", "127.3.200.254"}) {
    grpc::ChannelArguments args;
    ASSERT_TRUE(BindSourceAddress(source, args).ok());
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                             grpc::InsecureChannelCredentials(), args);
    auto stub = smbfleet::v1::AgentService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    smbfleet::v1::ReportRequest request;
    smbfleet::v1::ReportResponse response;
    const grpc::Status status = stub->Report(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    // "ipv4:127.1.0.7:PORT", or the IPv4-mapped form on a dual-stack socket.
    EXPECT_NE(response.host().find(std::string(source) + ":"), std::string::npos)
        << response.host();
  }
  server->Shutdown();
}

}  // namespace
}  // namespace smbfleet::loadgen

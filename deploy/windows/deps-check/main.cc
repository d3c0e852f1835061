// Dependency check for the Windows build: a protobuf message round trip, a gRPC channel with SSL
// credentials and one call on it (to a closed loopback port: UNAVAILABLE, after the resolver, the
// poller and the TLS channel ran), and the versions of gRPC, protobuf and OpenSSL.
//   deps_check.exe [ROOTS.pem]    exit 0 when all of that worked
#include <google/protobuf/stubs/common.h>
#include <grpcpp/grpcpp.h>
#include <openssl/crypto.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "check.grpc.pb.h"

int main(int argc, char** argv) {
  smbfleet::depscheck::Ping ping;
  ping.set_text("smbfleet");
  ping.set_sequence(16);
  std::string wire;
  smbfleet::depscheck::Ping back;
  const bool proto_ok =
      ping.SerializeToString(&wire) && back.ParseFromString(wire) && back.text() == "smbfleet";

  grpc::SslCredentialsOptions ssl;
  if (argc > 1) {
    std::ifstream in(argv[1], std::ios::binary);
    std::ostringstream pem;
    pem << in.rdbuf();
    ssl.pem_root_certs = pem.str();
  }
  auto channel = grpc::CreateChannel("127.0.0.1:1", grpc::SslCredentials(ssl));
  auto stub = smbfleet::depscheck::Check::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  smbfleet::depscheck::Ping reply;
  const grpc::Status status = stub->Echo(&context, ping, &reply);

  std::printf("grpc %s\n", grpc::Version().c_str());
  std::printf("protobuf %s\n",
              google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION).c_str());
  std::printf("openssl %s\n", OpenSSL_version(OPENSSL_VERSION));
  std::printf("protobuf round trip: %s (%zu bytes)\n", proto_ok ? "ok" : "FAILED", wire.size());
  std::printf("call to 127.0.0.1:1: status %d (%s)\n", static_cast<int>(status.error_code()),
              status.error_message().c_str());
  return proto_ok && status.error_code() == grpc::StatusCode::UNAVAILABLE ? 0 : 1;
}

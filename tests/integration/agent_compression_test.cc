// The agent's reports on the wire, over real mutual TLS: a whole posture goes gzip-compressed and
// a digest-only report plain (a server that refuses gzip takes the one and not the other), and
// the collector stores a compressed report as any other.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/core/transport.h"
#include "collector/server/collector.h"
#include "collector/store/memory/memory_store.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/agent.grpc.pb.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet {
namespace {

namespace v1 = smbfleet::v1;
using ::testing::HasSubstr;

// An AgentService that keeps the last report it was given.
class RecordingAgentService final : public v1::AgentService::Service {
 public:
  grpc::Status Report(grpc::ServerContext*, const v1::ReportRequest* request,
                      v1::ReportResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = *request;
    response->set_outcome(v1::ReportResponse::OUTCOME_STORED);
    return grpc::Status::OK;
  }
  v1::ReportRequest last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }

 private:
  std::mutex mu_;
  v1::ReportRequest last_;
};

agent::AgentConfig AgentConfigFor(const std::string& pki, int port) {
  agent::AgentConfig c;
  c.collector_address = absl::StrCat("127.0.0.1:", port);
  c.collector_server_name = "localhost";
  c.tls = {pki + "/agent-fs01.pem", pki + "/agent-fs01.key", pki + "/ca.pem"};
  c.report_timeout = std::chrono::seconds(20);
  return c;
}

// A posture of 40 shares: several KB, as a small file server's.
v1::ReportRequest WholeReport(const std::string& id) {
  v1::ReportRequest r;
  r.set_report_id(id);
  r.set_reason("schedule");
  v1::Posture* p = r.mutable_posture();
  p->mutable_host()->set_hostname("fs01");
  for (int i = 0; i < 40; ++i) {
    v1::Share* s = p->add_shares();
    s->set_name(absl::StrCat("projects-", i));
    s->set_path(absl::StrCat("/srv/samba/projects-", i));
  }
  return r;
}

v1::ReportRequest DigestReport(const std::string& id) {
  v1::ReportRequest r;
  r.set_report_id(id);
  r.set_reason("schedule");
  r.set_posture_digest(std::string(64, 'a'));
  return r;
}

class AgentCompressionTest : public ::testing::Test {
 protected:
  void SetUp() override { pki_ = testing::MakeCertificates("fs01"); }

  // A server of `service` that takes gzip-compressed messages or, with gzip false, refuses them.
  std::unique_ptr<grpc::Server> Serve(grpc::Service* service, bool gzip, int* port) {
    auto tls = LoadTls({pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"});
    EXPECT_TRUE(tls.ok()) << tls.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", MutualTlsServerCredentials(*tls), port);
    builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, gzip);
    builder.RegisterService(service);
    return builder.BuildAndStart();
  }

  std::string pki_;
};

TEST_F(AgentCompressionTest, AWholeReportGoesGzipAndADigestOnlyReportPlain) {
  RecordingAgentService service;
  int port = 0;
  auto server = Serve(&service, /*gzip=*/false, &port);
  ASSERT_NE(server, nullptr);
  auto client = agent::GrpcCollectorClient::Create(AgentConfigFor(pki_, port));
  ASSERT_TRUE(client.ok()) << client.status();

  const v1::ReportRequest whole = WholeReport("6a1b2c3d-0000-4000-8000-000000000031");
  ASSERT_GE(whole.ByteSizeLong(), 1024u);
  auto refused = (*client)->Report(whole);
  ASSERT_FALSE(refused.ok()) << "a whole report reached a server that takes no gzip";
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("gzip"));

  auto digest = (*client)->Report(DigestReport("6a1b2c3d-0000-4000-8000-000000000032"));
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(service.last().report_id(), "6a1b2c3d-0000-4000-8000-000000000032");
  server->Shutdown();
}

TEST_F(AgentCompressionTest, ACompressedReportArrivesIntact) {
  RecordingAgentService service;
  int port = 0;
  auto server = Serve(&service, /*gzip=*/true, &port);
  ASSERT_NE(server, nullptr);
  auto client = agent::GrpcCollectorClient::Create(AgentConfigFor(pki_, port));
  ASSERT_TRUE(client.ok()) << client.status();
  const v1::ReportRequest whole = WholeReport("6a1b2c3d-0000-4000-8000-000000000033");
  auto response = (*client)->Report(whole);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(service.last().SerializeAsString(), whole.SerializeAsString());
  server->Shutdown();
}

TEST_F(AgentCompressionTest, TheCollectorStoresACompressedReport) {
  collector::CollectorConfig config;
  config.listen = "127.0.0.1:0";
  config.identity.agent_issuers = {pki_ + "/agents-ca.pem"};
  config.identity.operator_issuers = {pki_ + "/people-ca.pem"};
  auto tls = LoadTls({pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"});
  ASSERT_TRUE(tls.ok()) << tls.status();
  collector::Stores stores;
  auto hosts = std::make_unique<collector::MemoryHostStore>();
  stores.compliance = std::make_unique<collector::MemoryComplianceStore>(hosts.get());
  stores.hosts = std::move(hosts);
  auto started = collector::Collector::Start(config, *tls, std::move(stores));
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<collector::Collector> c = *std::move(started);

  auto client = agent::GrpcCollectorClient::Create(AgentConfigFor(pki_, c->port()));
  ASSERT_TRUE(client.ok()) << client.status();
  const v1::ReportRequest whole = WholeReport("6a1b2c3d-0000-4000-8000-000000000034");
  auto first = (*client)->Report(whole);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->outcome(), v1::ReportResponse::OUTCOME_STORED);
  EXPECT_EQ(first->host(), "fs01");
  auto again = (*client)->Report(whole);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->outcome(), v1::ReportResponse::OUTCOME_DUPLICATE);
}

}  // namespace
}  // namespace smbfleet

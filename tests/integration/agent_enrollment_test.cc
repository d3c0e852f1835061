// The agent's side of enrollment against the real collector over real TLS and PostgreSQL: it
// enrolls with a token from a file (key made locally, 0600), reports with what it got, renews
// with its current certificate and moves its client onto the new one without a restart.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "agent/core/enrollment.h"
#include "agent/core/transport.h"
#include "collector/server/collector.h"
#include "collector/store/postgres/pg_store.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int ModeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

class AgentEnrollmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    pki_ = testing::MakeCertificates("");
    dir_ = testing::MakeTempDir("smbfleet-agent-enroll");
    const std::string dsn = testing::CreateTestDatabase();
    ASSERT_TRUE(collector::ApplyMigrations(dsn, collector::BuiltinMigrations()).ok());
    auto stores = collector::NewPgStore(dsn, 4);
    ASSERT_TRUE(stores.ok()) << stores.status();
    collector::CollectorConfig config;
    config.listen = "127.0.0.1:0";
    config.enrollment.ca_cert = pki_ + "/ca.pem";
    config.enrollment.ca_key = pki_ + "/ca.key";
    config.enrollment.certificate_lifetime = std::chrono::hours(3);
    auto tls = LoadTls({pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"});
    ASSERT_TRUE(tls.ok()) << tls.status();
    auto c = collector::Collector::Start(config, *tls, *std::move(stores));
    ASSERT_TRUE(c.ok()) << c.status();
    collector_ = *std::move(c);
  }

  std::unique_ptr<v1::AdminService::Stub> Admin() {
    grpc::SslCredentialsOptions opts;
    opts.pem_root_certs = Slurp(pki_ + "/ca.pem");
    opts.pem_cert_chain = Slurp(pki_ + "/operator-admin.pem");
    opts.pem_private_key = Slurp(pki_ + "/operator-admin.key");
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return v1::AdminService::NewStub(grpc::CreateCustomChannel(
        absl::StrCat("127.0.0.1:", collector_->port()), grpc::SslCredentials(opts), args));
  }

  // A one-use token, written to a 0600 file; returns its text.
  std::string TokenFile(const std::string& path) {
    v1::CreateEnrollmentTokenRequest req;
    req.set_max_uses(1);
    *req.mutable_expires_at() =
        TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(absl::Now()) + 3600);
    v1::CreateEnrollmentTokenResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(Admin()->CreateEnrollmentToken(&ctx, req, &resp).ok());
    std::ofstream(path) << resp.secret() << "\n";
    ::chmod(path.c_str(), 0600);
    return resp.secret();
  }

  agent::AgentConfig AgentConfigFor(const std::string& host) {
    agent::AgentConfig c;
    c.collector_address = absl::StrCat("127.0.0.1:", collector_->port());
    c.collector_server_name = "localhost";
    c.tls = {dir_ + "/" + host + "/tls/agent.pem", dir_ + "/" + host + "/tls/agent.key",
             pki_ + "/ca.pem"};
    c.enroll.token_file = dir_ + "/enroll.token";
    c.enroll.host = host;
    c.report_timeout = std::chrono::seconds(10);
    return c;
  }

  static absl::StatusOr<v1::ReportResponse> Report(agent::GrpcCollectorClient& client,
                                                   const std::string& id) {
    v1::ReportRequest r;
    r.set_report_id(id);
    r.mutable_posture()->mutable_host()->set_hostname("whatever");
    return client.Report(r);
  }

  std::string pki_, dir_;
  std::unique_ptr<collector::Collector> collector_;
};

TEST_F(AgentEnrollmentTest, EnrollsReportsRenewsAndReloadsWithoutARestart) {
  const std::string token = TokenFile(dir_ + "/enroll.token");
  agent::AgentConfig config = AgentConfigFor("fs21.example.org");
  ASSERT_TRUE(agent::NeedsEnrollment(config));
  auto host = agent::EnrollNow(config);
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(*host, "fs21.example.org");
  EXPECT_EQ(ModeOf(config.tls.key), 0600);
  EXPECT_FALSE(agent::NeedsEnrollment(config));

  auto client = agent::GrpcCollectorClient::Create(config);
  ASSERT_TRUE(client.ok()) << client.status();
  auto first = Report(**client, "6a1b2c3d-0000-4000-8000-000000000021");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->host(), "fs21.example.org");

  // Renewal is due at 2/3 of the lifetime (3h, valid from 5 minutes before issue).
  auto old_id = IdentityFromPem(Slurp(config.tls.cert));
  ASSERT_TRUE(old_id.ok());
  auto due = agent::RenewalDue(config);
  ASSERT_TRUE(due.ok()) << due.status();
  EXPECT_EQ(absl::ToUnixSeconds(*due) - old_id->not_before_unix,
            (old_id->not_after_unix - old_id->not_before_unix) * 2 / 3);

  const std::string old_key = Slurp(config.tls.key);
  auto renewed = agent::RenewNow(config);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  auto new_id = IdentityFromPem(Slurp(config.tls.cert));
  ASSERT_TRUE(new_id.ok());
  EXPECT_NE(new_id->serial, old_id->serial);
  EXPECT_EQ(new_id->name, "fs21.example.org");
  EXPECT_NE(Slurp(config.tls.key), old_key);  // a new key, too
  EXPECT_EQ(ModeOf(config.tls.key), 0600);
  ASSERT_TRUE((*client)->Reload(config).ok());
  auto second = Report(**client, "6a1b2c3d-0000-4000-8000-000000000022");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->host(), "fs21.example.org");

  // The token was for one host: another is refused, and nothing says the secret.
  agent::AgentConfig other = AgentConfigFor("fs22");
  auto refused = agent::EnrollNow(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("used up"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr(token.substr(token.rfind('_') + 1))));
  EXPECT_TRUE(agent::NeedsEnrollment(other));
}

}  // namespace
}  // namespace smbfleet

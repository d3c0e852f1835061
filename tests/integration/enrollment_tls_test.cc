// Enrollment against the real collector over real TLS and PostgreSQL: an admin makes a one-use
// token; a caller without a certificate enrolls with it and reports with the certificate it got;
// the token's second use is refused; the agent renews its certificate; the labels policy trusts
// are the token's, not what the agent reports.
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "collector/server/collector.h"
#include "collector/store/postgres/pg_store.h"
#include "common/csr.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "smbfleet/v1/agent.grpc.pb.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
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

std::unique_ptr<grpc::ClientContext> Context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

class EnrollmentTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    pki_ = smbfleet::testing::MakeCertificates("");
    const std::string dsn = smbfleet::testing::CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn, BuiltinMigrations()).ok());
    auto stores = NewPgStore(dsn, 4);
    ASSERT_TRUE(stores.ok()) << stores.status();
    CollectorConfig config;
    config.listen = "127.0.0.1:0";
    config.enrollment.ca_cert = pki_ + "/ca.pem";
    config.enrollment.ca_key = pki_ + "/ca.key";
    config.enrollment.certificate_lifetime = std::chrono::hours(24);
    auto tls = LoadTls({pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"});
    ASSERT_TRUE(tls.ok()) << tls.status();
    auto c = Collector::Start(config, *tls, *std::move(stores));
    ASSERT_TRUE(c.ok()) << c.status();
    collector_ = *std::move(c);
  }

  // A channel that pins our CA and presents (cert, key) when given.
  std::shared_ptr<grpc::Channel> Channel(const std::string& cert_pem = "",
                                         const std::string& key_pem = "") {
    grpc::SslCredentialsOptions opts;
    opts.pem_root_certs = Slurp(pki_ + "/ca.pem");
    opts.pem_cert_chain = cert_pem;
    opts.pem_private_key = key_pem;
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", collector_->port()),
                                     grpc::SslCredentials(opts), args);
  }

  std::shared_ptr<grpc::Channel> Admin() {
    return Channel(Slurp(pki_ + "/operator-admin.pem"), Slurp(pki_ + "/operator-admin.key"));
  }

  v1::CreateEnrollmentTokenResponse CreateToken(uint32_t uses) {
    v1::CreateEnrollmentTokenRequest req;
    req.set_max_uses(uses);
    (*req.mutable_labels())["site"] = "lab";
    *req.mutable_expires_at() =
        TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(absl::Now()) + 3600);
    v1::CreateEnrollmentTokenResponse resp;
    auto ctx = Context();
    grpc::Status s =
        v1::AdminService::NewStub(Admin())->CreateEnrollmentToken(ctx.get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  grpc::Status Enroll(const std::string& token, const std::string& csr, v1::EnrollResponse* out) {
    v1::EnrollRequest req;
    req.set_token(token);
    req.set_csr_pem(csr);
    auto ctx = Context();
    return v1::EnrollmentService::NewStub(Channel())->Enroll(ctx.get(), req, out);
  }

  std::string pki_;
  std::unique_ptr<Collector> collector_;
};

TEST_F(EnrollmentTlsTest, AgentEnrollsReportsRenewsAndTheTokenIsSpent) {
  v1::CreateEnrollmentTokenResponse token = CreateToken(1);
  ASSERT_THAT(token.secret(), HasSubstr(absl::StrCat("set_", token.token().id(), "_")));

  auto key = GenerateKeyAndCsr("fs09.lab.example");
  ASSERT_TRUE(key.ok()) << key.status();
  v1::EnrollResponse enrolled;
  grpc::Status s = Enroll(token.secret(), key->csr_pem, &enrolled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(enrolled.labels().at("site"), "lab");
  EXPECT_EQ(IdentityFromPem(enrolled.certificate_pem())->name, "fs09.lab.example");

  // The certificate it got works: the report is stored as the certificate's host; the labels
  // it claims are kept as reported, and the token's are the ones shown as trusted.
  auto agent = Channel(enrolled.certificate_pem(), key->key_pem);
  v1::ReportRequest report;
  report.set_report_id("6a1b2c3d-0000-4000-8000-000000000009");
  report.mutable_posture()->mutable_host()->set_hostname("dc01");
  (*report.mutable_posture()->mutable_host()->mutable_labels())["site"] = "datacenter";
  v1::ReportResponse reported;
  auto ctx = Context();
  s = v1::AgentService::NewStub(agent)->Report(ctx.get(), report, &reported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(reported.host(), "fs09.lab.example");
  v1::GetHostRequest get;
  get.set_name("fs09.lab.example");
  v1::GetHostResponse host;
  ctx = Context();
  ASSERT_TRUE(v1::AdminService::NewStub(Admin())->GetHost(ctx.get(), get, &host).ok());
  EXPECT_EQ(host.summary().labels().at("site"), "lab");
  EXPECT_EQ(host.summary().reported_labels().at("site"), "datacenter");

  // One use only: the second enrollment is refused, saying why, without the secret.
  auto other = GenerateKeyAndCsr("fs10");
  v1::EnrollResponse ignored;
  s = Enroll(token.secret(), other->csr_pem, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("used up"));
  const std::string secret_part = token.secret().substr(token.secret().rfind('_') + 1);
  EXPECT_THAT(s.error_message(), Not(HasSubstr(secret_part)));

  // Renewal: the agent's own certificate, a new key, a new certificate for the same host.
  auto renewed_key = GenerateKeyAndCsr("fs09.lab.example");
  v1::RenewCertificateRequest renew;
  renew.set_csr_pem(renewed_key->csr_pem);
  v1::RenewCertificateResponse renewed;
  ctx = Context();
  s = v1::EnrollmentService::NewStub(agent)->RenewCertificate(ctx.get(), renew, &renewed);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_NE(IdentityFromPem(renewed.certificate_pem())->serial,
            IdentityFromPem(enrolled.certificate_pem())->serial);
  // ... and not for another host, nor for a caller without a certificate.
  renew.set_csr_pem(other->csr_pem);
  ctx = Context();
  s = v1::EnrollmentService::NewStub(agent)->RenewCertificate(ctx.get(), renew, &renewed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ctx = Context();
  s = v1::EnrollmentService::NewStub(Channel())->RenewCertificate(ctx.get(), renew, &renewed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);

  v1::ListCertificatesRequest list;
  list.set_host("fs09.lab.example");
  v1::ListCertificatesResponse certs;
  ctx = Context();
  ASSERT_TRUE(v1::AdminService::NewStub(Admin())->ListCertificates(ctx.get(), list, &certs).ok());
  ASSERT_EQ(certs.certificates_size(), 2);
  EXPECT_EQ(certs.certificates(0).enrollment_token_id(), token.token().id());
  EXPECT_EQ(certs.certificates(1).enrollment_token_id(), "");
}

TEST_F(EnrollmentTlsTest, RevokedTokenIsRefusedAndListedAsInactive) {
  v1::CreateEnrollmentTokenResponse token = CreateToken(5);
  v1::RevokeEnrollmentTokenRequest revoke;
  revoke.set_id(token.token().id());
  revoke.set_reason("posted in a ticket");
  v1::RevokeEnrollmentTokenResponse revoked;
  auto ctx = Context();
  ASSERT_TRUE(
      v1::AdminService::NewStub(Admin())->RevokeEnrollmentToken(ctx.get(), revoke, &revoked).ok());
  v1::EnrollResponse ignored;
  grpc::Status s = Enroll(token.secret(), GenerateKeyAndCsr("fs11")->csr_pem, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("revoked"));

  v1::ListEnrollmentTokensRequest list;
  v1::ListEnrollmentTokensResponse active;
  ctx = Context();
  ASSERT_TRUE(
      v1::AdminService::NewStub(Admin())->ListEnrollmentTokens(ctx.get(), list, &active).ok());
  EXPECT_EQ(active.tokens_size(), 0);
  list.set_include_inactive(true);
  ctx = Context();
  ASSERT_TRUE(
      v1::AdminService::NewStub(Admin())->ListEnrollmentTokens(ctx.get(), list, &active).ok());
  ASSERT_EQ(active.tokens_size(), 1);
  EXPECT_EQ(active.tokens(0).revoked_by(), "admin");
}

}  // namespace
}  // namespace smbfleet::collector

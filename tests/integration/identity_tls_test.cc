// Identity over real mutual TLS and a real PostgreSQL: the kind of a certificate comes from the
// CA that issued it; people's bearer tokens carry their roles and nothing else, and expired,
// revoked or wrong ones are refused; a revoked certificate is refused on its next call, and its
// open Watch stream is closed on another replica of the same database, told by NOTIFY (that
// replica's poll is set to an hour, so the poll cannot be what closes it). A revoked host is
// refused with every certificate it holds, its stream on another replica closes, and it may not
// enroll again, there either.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/auth/api_tokens.h"
#include "collector/server/collector.h"
#include "collector/store/postgres/pg_store.h"
#include "common/csr.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "smbfleet/v1/agent.grpc.pb.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using ::smbfleet::testing::CreateTestDatabase;
using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::chrono::system_clock::time_point In(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

class IdentityTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    pki_ = smbfleet::testing::MakeCertificates("fs01 fs02");
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    a_ = Start(std::chrono::seconds(5));
    ASSERT_NE(a_, nullptr);
  }

  // A replica on the test's database; `poll` is its revocation poll. Without `listen` it is not
  // told by NOTIFY and has only its poll.
  std::unique_ptr<Collector> Start(std::chrono::milliseconds poll, bool listen = true) {
    auto store = NewPgStore(dsn_, 2);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    CollectorConfig config;
    config.listen = "127.0.0.1:0";
    if (listen) config.database_dsn = dsn_;  // LISTEN for revocations
    config.keepalive_interval = std::chrono::seconds(30);
    config.identity.agent_issuers = {pki_ + "/agents-ca.pem"};
    config.identity.operator_issuers = {pki_ + "/people-ca.pem"};
    config.identity.revocation_poll = poll;
    // Every replica issues agents' certificates, so that enrollment is checked on each.
    config.enrollment.ca_cert = pki_ + "/agents-ca.pem";
    config.enrollment.ca_key = pki_ + "/agents-ca.key";
    config.enrollment.certificate_lifetime = std::chrono::hours(24);
    auto tls = LoadTls({pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"});
    EXPECT_TRUE(tls.ok()) << tls.status();
    auto started = Collector::Start(config, *tls, *std::move(store));
    EXPECT_TRUE(started.ok()) << started.status();
    return started.ok() ? *std::move(started) : nullptr;
  }

  // A channel presenting pki/WHO.pem; none for an empty `who`.
  std::shared_ptr<grpc::Channel> Channel(Collector* c, const std::string& who) {
    grpc::SslCredentialsOptions opts;
    opts.pem_root_certs = ReadAll(pki_ + "/ca.pem");
    if (!who.empty()) {
      opts.pem_cert_chain = ReadAll(pki_ + "/" + who + ".pem");
      opts.pem_private_key = ReadAll(pki_ + "/" + who + ".key");
    }
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", c->port()),
                                     grpc::SslCredentials(opts), args);
  }

  std::unique_ptr<v1::AdminService::Stub> Admin(const std::string& who, Collector* c = nullptr) {
    return v1::AdminService::NewStub(Channel(c == nullptr ? a_.get() : c, who));
  }

  // Creates a token through the API as the admin (by certificate).
  v1::CreateApiTokenResponse CreateToken(const std::string& name,
                                         const std::vector<std::string>& roles) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(10));
    v1::CreateApiTokenRequest req;
    req.set_name(name);
    for (const auto& r : roles) req.add_roles(r);
    req.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(absl::Now() + absl::Hours(1)));
    v1::CreateApiTokenResponse out;
    grpc::Status s = Admin("operator-admin")->CreateApiToken(&ctx, req, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
  }

  grpc::Status ListHostsWith(const std::string& bearer, const std::string& cert = "") {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(10));
    if (!bearer.empty()) ctx.AddMetadata("authorization", "Bearer " + bearer);
    v1::ListHostsResponse out;
    return Admin(cert)->ListHosts(&ctx, {}, &out);
  }

  grpc::Status Report(Collector* c, const std::string& who) {
    auto agent = v1::AgentService::NewStub(Channel(c, who));
    grpc::ClientContext ctx;
    ctx.set_deadline(In(10));
    v1::ReportRequest req;
    req.set_report_id(absl::StrCat("r-", absl::ToUnixNanos(absl::Now())));
    req.mutable_posture()->mutable_host()->set_hostname("fs01");
    v1::ReportResponse out;
    return agent->Report(&ctx, req, &out);
  }

  std::string Serial(const std::string& who) {
    auto id = IdentityFromPem(ReadAll(pki_ + "/" + who + ".pem"));
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? id->serial : "";
  }

  grpc::Status Revoke(const std::string& serial, v1::RevokeCertificateResponse* out,
                      Collector* c = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(10));
    v1::RevokeCertificateRequest req;
    req.mutable_revocation()->set_serial(serial);
    req.mutable_revocation()->set_reason("host decommissioned");
    return Admin("operator-admin", c)->RevokeCertificate(&ctx, req, out);
  }

  grpc::Status RevokeHost(const std::string& host, v1::RevokeCertificateResponse* out,
                          Collector* c = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(10));
    v1::RevokeCertificateRequest req;
    req.mutable_revocation()->set_host(host);
    req.mutable_revocation()->set_reason("server decommissioned");
    return Admin("operator-admin", c)->RevokeCertificate(&ctx, req, out);
  }

  // Enrolls `host` through `c` with a fresh one-use token that allows re-enrollment; the new key
  // goes to `key_pem` when given.
  grpc::Status Enroll(Collector* c, const std::string& host, v1::EnrollResponse* out,
                      std::string* key_pem = nullptr) {
    v1::CreateEnrollmentTokenRequest treq;
    treq.set_max_uses(1);
    treq.set_allow_reenrollment(true);
    treq.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(absl::Now() + absl::Hours(1)));
    v1::CreateEnrollmentTokenResponse token;
    grpc::ClientContext tctx;
    tctx.set_deadline(In(10));
    grpc::Status s = Admin("operator-admin", c)->CreateEnrollmentToken(&tctx, treq, &token);
    if (!s.ok()) return s;
    auto key = GenerateKeyAndCsr(host);
    EXPECT_TRUE(key.ok()) << key.status();
    if (!key.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, "no key");
    v1::EnrollRequest req;
    req.set_token(token.secret());
    req.set_csr_pem(key->csr_pem);
    if (key_pem != nullptr) *key_pem = key->key_pem;
    grpc::ClientContext ctx;
    ctx.set_deadline(In(10));
    return v1::EnrollmentService::NewStub(Channel(c, ""))->Enroll(&ctx, req, out);
  }

  void Run(const std::string& cmd) {
    ASSERT_EQ(std::system((cmd + " >/dev/null 2>&1").c_str()), 0) << cmd;
  }

  std::string pki_, dsn_;
  std::unique_ptr<Collector> a_;
};

TEST_F(IdentityTlsTest, ATokenCallerHasItsRolesAndNoOthers) {
  v1::CreateApiTokenResponse created = CreateToken("tina", {"viewer"});
  ASSERT_FALSE(created.secret().empty());
  EXPECT_THAT(created.secret(), ::testing::StartsWith("sft_" + created.token().id() + "_"));

  grpc::Status s = ListHostsWith(created.secret());
  EXPECT_TRUE(s.ok()) << s.error_message();

  grpc::ClientContext ctx;
  ctx.set_deadline(In(10));
  ctx.AddMetadata("authorization", "Bearer " + created.secret());
  v1::WhoAmIResponse me;
  s = Admin("")->WhoAmI(&ctx, {}, &me);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(me.name(), "tina");
  EXPECT_EQ(me.kind(), "operator");
  EXPECT_EQ(me.credential(), "token");
  EXPECT_EQ(me.credential_id(), created.token().id());
  EXPECT_THAT(me.roles(), ::testing::ElementsAre("viewer"));

  // A viewer may not create tokens (admin only), nor propose changes.
  grpc::ClientContext ctx2;
  ctx2.set_deadline(In(10));
  ctx2.AddMetadata("authorization", "Bearer " + created.secret());
  v1::CreateApiTokenRequest req;
  req.set_name("eve");
  req.add_roles("admin");
  req.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(absl::Now() + absl::Hours(1)));
  v1::CreateApiTokenResponse out;
  s = Admin("")->CreateApiToken(&ctx2, req, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("tina"));

  // The list shows the token, never its secret.
  grpc::ClientContext ctx3;
  ctx3.set_deadline(In(10));
  v1::ListApiTokensResponse listed;
  ASSERT_TRUE(Admin("operator-admin")->ListApiTokens(&ctx3, {}, &listed).ok());
  ASSERT_EQ(listed.tokens_size(), 1);
  EXPECT_EQ(listed.tokens(0).id(), created.token().id());
  EXPECT_EQ(listed.DebugString().find(created.secret().substr(22)), std::string::npos);
  // Nor does the database hold it.
  EXPECT_EQ(smbfleet::testing::QueryValue(
                dsn_, absl::StrCat("SELECT count(*) FROM api_tokens WHERE secret_sha256::text "
                                   "LIKE '%",
                                   created.secret().substr(22, 16), "%'")),
            "0");
}

TEST_F(IdentityTlsTest, WrongRevokedAndExpiredTokensAreUnauthenticated) {
  v1::CreateApiTokenResponse created = CreateToken("ann", {"admin"});
  std::string wrong = created.secret();
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  grpc::Status s = ListHostsWith(wrong);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(created.token().id()));
  EXPECT_EQ(s.error_message().find(wrong.substr(22)), std::string::npos) << "secret echoed";

  s = ListHostsWith("not-a-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();

  // A certificate and a token on one call: refused, whichever would have passed.
  s = ListHostsWith(created.secret(), "operator-viewer");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("both"));

  // An expired one, written to the database as it would be found an hour later.
  auto stores = NewPgStore(dsn_, 1);
  ASSERT_TRUE(stores.ok());
  const std::string secret(32, '\x42');
  StoredApiToken old;
  old.token.set_id("00000000000000e1");
  old.token.set_name("old");
  old.token.add_roles("admin");
  old.token.mutable_created_at()->set_seconds(absl::ToUnixSeconds(absl::Now()) - 7200);
  old.token.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(absl::Now()) - 3600);
  old.secret_sha256 = Sha256(secret);
  ASSERT_TRUE(stores->identity->AddApiToken(old).ok());
  s = ListHostsWith(FormatApiToken(old.token.id(), secret));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("expired"));

  ASSERT_TRUE(ListHostsWith(created.secret()).ok());
  grpc::ClientContext ctx;
  ctx.set_deadline(In(10));
  v1::RevokeApiTokenRequest req;
  req.set_id(created.token().id());
  req.set_reason("left the team");
  v1::RevokeApiTokenResponse revoked;
  s = Admin("operator-admin")->RevokeApiToken(&ctx, req, &revoked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(revoked.token().has_revoked_at());
  s = ListHostsWith(created.secret());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("revoked"));
}

TEST_F(IdentityTlsTest, ARevokedCertificateIsRefusedOnItsNextCall) {
  grpc::Status s = Report(a_.get(), "agent-fs01");
  EXPECT_NE(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  const std::string serial = Serial("agent-fs01");
  v1::RevokeCertificateResponse revoked;
  s = Revoke(serial, &revoked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(revoked.revocation().serial(), serial);
  EXPECT_EQ(revoked.revocation().revoked_by(), "admin");

  s = Report(a_.get(), "agent-fs01");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(serial));
  EXPECT_NE(Report(a_.get(), "agent-fs02").error_code(), grpc::StatusCode::UNAUTHENTICATED);

  // Listed, and a second revocation of the same serial is refused.
  grpc::ClientContext ctx;
  ctx.set_deadline(In(10));
  v1::ListRevocationsResponse listed;
  ASSERT_TRUE(Admin("operator-viewer")->ListRevocations(&ctx, {}, &listed).ok());
  ASSERT_EQ(listed.revocations_size(), 1);
  EXPECT_EQ(listed.revocations(0).reason(), "host decommissioned");
  EXPECT_EQ(Revoke(serial, &revoked).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  // A viewer may not revoke.
  grpc::ClientContext ctx2;
  ctx2.set_deadline(In(10));
  v1::RevokeCertificateRequest req;
  req.mutable_revocation()->set_serial(Serial("agent-fs02"));
  req.mutable_revocation()->set_reason("x");
  s = Admin("operator-viewer")->RevokeCertificate(&ctx2, req, &revoked);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
}

TEST_F(IdentityTlsTest, APeopleCaCertificateSayingAgentIsRefused) {
  // Made by hand as an attacker with the people CA would: OU=agent, clientAuth, chain attached.
  const std::string p = pki_ + "/";
  Run(absl::StrCat("openssl ecparam -name prime256v1 -genkey -noout -out ", p, "forged.key"));
  Run(absl::StrCat("openssl req -new -key ", p,
                   "forged.key -subj /O=smbfleet/OU=agent/CN=fs01 -out ", p, "forged.csr"));
  std::ofstream(p + "forged.ext") << "extendedKeyUsage=clientAuth\nsubjectAltName=DNS:fs01\n";
  Run(absl::StrCat("openssl x509 -req -in ", p, "forged.csr -CA ", p, "people-ca.pem -CAkey ", p,
                   "people-ca.key -set_serial 0x77 -days 1 -extfile ", p, "forged.ext -out ", p,
                   "forged.pem"));
  std::ofstream(p + "forged.pem", std::ios::app) << ReadAll(p + "people-ca.pem");
  grpc::Status s = Report(a_.get(), "forged");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("OU=agent"));
  EXPECT_THAT(s.error_message(), HasSubstr("fs01"));
}

TEST_F(IdentityTlsTest, RevocationThroughOneReplicaClosesTheStreamOnAnother) {
  // B polls once an hour: only the NOTIFY from A's transaction can close its stream in time.
  std::unique_ptr<Collector> b = Start(std::chrono::hours(1));
  ASSERT_NE(b, nullptr);
  auto agent = v1::AgentService::NewStub(Channel(b.get(), "agent-fs02"));
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(In(60));
  v1::WatchRequest wreq;
  wreq.set_agent_version("test");
  auto reader = agent->Watch(&watch_ctx, wreq);
  v1::WatchResponse greeting;
  ASSERT_TRUE(reader->Read(&greeting));

  v1::RevokeCertificateResponse revoked;
  const absl::Time start = absl::Now();
  grpc::Status s = Revoke(Serial("agent-fs02"), &revoked, a_.get());
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(revoked.streams_closed(), 0u) << "the stream is on B, not A";
  v1::WatchResponse m;
  while (reader->Read(&m)) {
  }
  const absl::Duration latency = absl::Now() - start;
  grpc::Status ended = reader->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::ABORTED) << ended.error_message();
  EXPECT_THAT(ended.error_message(), HasSubstr("revoked"));
  std::cout << "{\"revocation_closes_remote_stream_ms\": " << absl::ToDoubleMilliseconds(latency)
            << "}" << std::endl;
  // And B refuses the certificate from now on.
  s = Report(b.get(), "agent-fs02");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
}

TEST_F(IdentityTlsTest, ARevokedHostIsRefusedClosedOnAnotherReplicaAndMayNotEnrollAgain) {
  // B polls once an hour: only the NOTIFY from A's transaction can tell it in time.
  std::unique_ptr<Collector> b = Start(std::chrono::hours(1));
  ASSERT_NE(b, nullptr);
  // Before: fs01 reports, and enrolls again on B (with a re-enrollment token).
  ASSERT_NE(Report(a_.get(), "agent-fs01").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::EnrollResponse enrolled;
  std::string enrolled_key;
  grpc::Status s = Enroll(b.get(), "fs01", &enrolled, &enrolled_key);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // Kept as Channel() reads them: the certificate with its issuing CA after it.
  const std::string enrolled_path = pki_ + "/enrolled-fs01";
  std::ofstream(enrolled_path + ".pem") << enrolled.certificate_pem() << enrolled.ca_chain_pem();
  std::ofstream(enrolled_path + ".key") << enrolled_key;
  ASSERT_NE(Report(b.get(), "enrolled-fs01").error_code(), grpc::StatusCode::UNAUTHENTICATED);

  auto agent = v1::AgentService::NewStub(Channel(b.get(), "agent-fs01"));
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(In(60));
  v1::WatchRequest wreq;
  wreq.set_agent_version("test");
  auto reader = agent->Watch(&watch_ctx, wreq);
  v1::WatchResponse m;
  ASSERT_TRUE(reader->Read(&m));

  // A malformed name is refused, naming the field; the name is taken in lower case.
  v1::RevokeCertificateResponse revoked;
  s = RevokeHost("fs_01", &revoked, a_.get());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("revocation.host"));
  const absl::Time start = absl::Now();
  s = RevokeHost("FS01", &revoked, a_.get());
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(revoked.revocation().host(), "fs01");
  EXPECT_TRUE(revoked.revocation().serial().empty());
  EXPECT_EQ(revoked.streams_closed(), 0u) << "the stream is on B, not A";

  // Its next call is refused, naming the host; another host is not affected.
  s = Report(a_.get(), "agent-fs01");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("host 'fs01' has been revoked"));
  EXPECT_NE(Report(a_.get(), "agent-fs02").error_code(), grpc::StatusCode::UNAUTHENTICATED);

  // Its stream on B closes.
  while (reader->Read(&m)) {
  }
  const absl::Duration latency = absl::Now() - start;
  grpc::Status ended = reader->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::ABORTED) << ended.error_message();
  EXPECT_THAT(ended.error_message(), HasSubstr("revoked"));
  std::cout << "{\"host_revocation_closes_remote_stream_ms\": "
            << absl::ToDoubleMilliseconds(latency) << "}" << std::endl;

  // Every certificate of the host, on B too: the one from ca.sh and the one it enrolled for.
  for (const std::string who : {"agent-fs01", "enrolled-fs01"}) {
    s = Report(b.get(), who);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << who << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("fs01"));
  }

  // A new enrollment of fs01 is refused on either replica, even with a re-enrollment token;
  // another name enrolls.
  for (Collector* c : {a_.get(), b.get()}) {
    v1::EnrollResponse again;
    s = Enroll(c, "fs01", &again);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("host fs01 is revoked"));
  }
  v1::EnrollResponse renamed;
  s = Enroll(a_.get(), "fs01-new", &renamed);
  EXPECT_TRUE(s.ok()) << s.error_message();

  // Listed as a host revocation; revoking the host twice is refused.
  grpc::ClientContext ctx;
  ctx.set_deadline(In(10));
  v1::ListRevocationsResponse listed;
  ASSERT_TRUE(Admin("operator-viewer", b.get())->ListRevocations(&ctx, {}, &listed).ok());
  ASSERT_EQ(listed.revocations_size(), 1);
  EXPECT_EQ(listed.revocations(0).host(), "fs01");
  EXPECT_EQ(RevokeHost("fs01", &revoked, b.get()).error_code(), grpc::StatusCode::ALREADY_EXISTS);
}

TEST_F(IdentityTlsTest, AReplicaThatMissesTheNotificationClosesTheStreamOnItsPoll) {
  std::unique_ptr<Collector> c = Start(std::chrono::milliseconds(200), /*listen=*/false);
  ASSERT_NE(c, nullptr);
  auto agent = v1::AgentService::NewStub(Channel(c.get(), "agent-fs01"));
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(In(60));
  v1::WatchRequest wreq;
  wreq.set_agent_version("test");
  auto reader = agent->Watch(&watch_ctx, wreq);
  v1::WatchResponse m;
  ASSERT_TRUE(reader->Read(&m));
  v1::RevokeCertificateResponse revoked;
  const absl::Time start = absl::Now();
  ASSERT_TRUE(Revoke(Serial("agent-fs01"), &revoked, a_.get()).ok());
  while (reader->Read(&m)) {
  }
  grpc::Status ended = reader->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::ABORTED) << ended.error_message();
  std::cout << "{\"revocation_closes_stream_by_poll_ms\": "
            << absl::ToDoubleMilliseconds(absl::Now() - start) << "}" << std::endl;
}

}  // namespace
}  // namespace smbfleet::collector

// The collector over real mutual TLS, against a real PostgreSQL: identity from the client
// certificate, refusal of clients without a valid certificate, message size limit, the
// Watch stream carrying a report nudge, a change going from proposal to the agent's ack
// with roles from the operator certificates, and the metrics that this traffic moves.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/ingest/reevaluate.h"
#include "collector/metrics/prometheus_text.h"
#include "collector/server/collector.h"
#include "collector/store/postgres/pg_store.h"
#include "collector/testing/test_policy.h"
#include "common/approval_signing.h"
#include "common/tls.h"
#include "common/version.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "smbfleet/v1/agent.grpc.pb.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

using ::smbfleet::testing::CreateTestDatabase;
using ::testing::HasSubstr;

// Calls `method` with a fresh client context and a 10 s deadline.
template <typename Method>
grpc::Status Call(Method method) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return method(&ctx);
}

// The change the approval tests push: server.requireSigning = true on fs02.
grpc::Status ProposeSigningOnFs02(smbfleet::v1::AdminService::Stub* proposer,
                                  smbfleet::v1::ProposeChangeResponse* proposed) {
  smbfleet::v1::ProposeChangeRequest propose;
  propose.add_hosts("fs02");
  auto* setting = propose.add_settings();
  setting->set_setting("server.requireSigning");
  setting->set_value("true");
  return Call(
      [&](grpc::ClientContext* c) { return proposer->ProposeChange(c, propose, proposed); });
}

class CollectorTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    pki_ = smbfleet::testing::MakeCertificates("fs01 fs02");
    other_pki_ = smbfleet::testing::MakeCertificates("fs01");
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    StartCollector(nullptr);
  }

  // (Re)starts the collector on the test database; `policy` may be null.
  void StartCollector(std::unique_ptr<policy::Policy> policy) {
    collector_.reset();
    auto store = NewPgStore(dsn_, 2);
    ASSERT_TRUE(store.ok());
    if (policy != nullptr) {
      ASSERT_TRUE(
          (*store).compliance->ActivatePolicy(policy->name, policy->version, "# test policy").ok());
    }
    CollectorConfig config;
    config.listen = "127.0.0.1:0";
    config.max_report_bytes = 64 << 10;
    config.keepalive_interval = std::chrono::seconds(30);
    auto tls = LoadTls({pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"});
    ASSERT_TRUE(tls.ok()) << tls.status();
    auto c = Collector::Start(config, *tls, *std::move(store), std::move(policy));
    ASSERT_TRUE(c.ok()) << c.status();
    collector_ = *std::move(c);
    // With a policy, a pass over the stored postures starts in the background; a report sent
    // while it reads could be evaluated by both (the pass's evaluation is then discarded, but
    // counted in the metrics). The tests start from what the pass leaves.
    if (Reevaluator* pass = collector_->reevaluator(); pass != nullptr) {
      for (int i = 0; i < 1000 && !pass->done(); ++i) absl::SleepFor(absl::Milliseconds(10));
      ASSERT_TRUE(pass->done()) << "the re-evaluation at start did not finish within 10 s";
    }
  }

  std::shared_ptr<grpc::Channel> Channel(const std::string& pki, const std::string& who) {
    auto m = LoadTls({pki + "/" + who + ".pem", pki + "/" + who + ".key", pki_ + "/ca.pem"});
    EXPECT_TRUE(m.ok()) << m.status();
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", collector_->port()),
                                     MutualTlsChannelCredentials(*m), args);
  }

  static smbfleet::v1::ReportRequest Report(const std::string& id, const std::string& hostname) {
    smbfleet::v1::ReportRequest r;
    r.set_report_id(id);
    r.mutable_posture()->mutable_host()->set_hostname(hostname);
    r.mutable_posture()->mutable_server()->set_smb1_enabled(false);
    return r;
  }

  grpc::Status Send(std::shared_ptr<grpc::Channel> ch, const smbfleet::v1::ReportRequest& r,
                    smbfleet::v1::ReportResponse* resp) {
    auto stub = smbfleet::v1::AgentService::NewStub(ch);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub->Report(&ctx, r, resp);
  }

  std::string pki_, other_pki_, dsn_;
  std::unique_ptr<Collector> collector_;
};

TEST_F(CollectorTlsTest, HostIdentityComesFromTheCertificate) {
  smbfleet::v1::ReportResponse resp;
  // fs01's agent claims to be dc01 in its report.
  auto s = Send(Channel(pki_, "agent-fs01"), Report("00000000-0000-4000-8000-000000000001", "dc01"),
                &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.host(), "fs01");
  EXPECT_EQ(resp.outcome(), smbfleet::v1::ReportResponse::OUTCOME_STORED);

  auto admin = smbfleet::v1::AdminService::NewStub(Channel(pki_, "operator-admin"));
  {
    grpc::ClientContext ctx;
    smbfleet::v1::GetHostRequest req;
    req.set_name("fs01");
    smbfleet::v1::GetHostResponse host;
    ASSERT_TRUE(admin->GetHost(&ctx, req, &host).ok());
    EXPECT_EQ(host.posture().host().hostname(), "dc01");  // kept as reported, keyed by cert
    EXPECT_EQ(host.summary().name(), "fs01");
  }
  {
    grpc::ClientContext ctx;
    smbfleet::v1::GetHostRequest req;
    req.set_name("dc01");
    smbfleet::v1::GetHostResponse host;
    EXPECT_EQ(admin->GetHost(&ctx, req, &host).error_code(), grpc::StatusCode::NOT_FOUND);
  }
}

TEST_F(CollectorTlsTest, ResentReportIsADuplicate) {
  smbfleet::v1::ReportResponse resp;
  auto ch = Channel(pki_, "agent-fs01");
  auto r = Report("00000000-0000-4000-8000-000000000002", "fs01");
  ASSERT_TRUE(Send(ch, r, &resp).ok());
  ASSERT_TRUE(Send(ch, r, &resp).ok());
  EXPECT_EQ(resp.outcome(), smbfleet::v1::ReportResponse::OUTCOME_DUPLICATE);
  r.set_report_id("00000000-0000-4000-8000-000000000003");
  ASSERT_TRUE(Send(ch, r, &resp).ok());
  EXPECT_EQ(resp.outcome(), smbfleet::v1::ReportResponse::OUTCOME_UNCHANGED);
}

TEST_F(CollectorTlsTest, ClientWithoutCertificateIsRefused) {
  auto m = LoadTls({pki_ + "/agent-fs01.pem", pki_ + "/agent-fs01.key", pki_ + "/ca.pem"});
  ASSERT_TRUE(m.ok());
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = m->ca_pem;  // trusts the server, presents nothing
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto ch = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", collector_->port()),
                                      grpc::SslCredentials(opts), args);
  smbfleet::v1::ReportResponse resp;
  auto s = Send(ch, Report("00000000-0000-4000-8000-000000000004", "fs01"), &resp);
  // The handshake lets it through (enrollment needs that); the call itself is refused.
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
}

TEST_F(CollectorTlsTest, CertificateFromAnotherCaIsRefused) {
  // A certificate for fs01 signed by a different CA, trusting our collector's CA.
  auto m =
      LoadTls({other_pki_ + "/agent-fs01.pem", other_pki_ + "/agent-fs01.key", pki_ + "/ca.pem"});
  ASSERT_TRUE(m.ok()) << m.status();
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto ch = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", collector_->port()),
                                      MutualTlsChannelCredentials(*m), args);
  smbfleet::v1::ReportResponse resp;
  auto s = Send(ch, Report("00000000-0000-4000-8000-000000000005", "fs01"), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_EQ(smbfleet::testing::QueryValue(dsn_, "SELECT count(*) FROM reports"), "0");
}

TEST_F(CollectorTlsTest, AgentCertificateCannotUseAdminCalls) {
  auto admin = smbfleet::v1::AdminService::NewStub(Channel(pki_, "agent-fs01"));
  grpc::ClientContext ctx;
  smbfleet::v1::ListHostsRequest req;
  smbfleet::v1::ListHostsResponse resp;
  auto s = admin->ListHosts(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("operator"));
}

TEST_F(CollectorTlsTest, OperatorCertificateCannotReport) {
  smbfleet::v1::ReportResponse resp;
  auto s = Send(Channel(pki_, "operator-admin"),
                Report("00000000-0000-4000-8000-000000000006", "x"), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(CollectorTlsTest, OversizedReportIsRefusedClearly) {
  auto r = Report("00000000-0000-4000-8000-000000000007", "fs01");
  for (int i = 0; i < 2000; ++i) {
    auto* share = r.mutable_posture()->add_shares();
    share->set_name(absl::StrCat("share", i));
    share->set_path(std::string(100, 'p'));
  }
  ASSERT_GT(r.ByteSizeLong(), 64u << 10);
  smbfleet::v1::ReportResponse resp;
  auto s = Send(Channel(pki_, "agent-fs01"), r, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("larger than max"));
}

TEST_F(CollectorTlsTest, InvalidReportNamesTheField) {
  auto r = Report("not-a-uuid", "fs01");
  smbfleet::v1::ReportResponse resp;
  auto s = Send(Channel(pki_, "agent-fs01"), r, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("reportId"));
}

TEST_F(CollectorTlsTest, RequestReportReachesTheAgentsWatchStream) {
  auto agent = smbfleet::v1::AgentService::NewStub(Channel(pki_, "agent-fs02"));
  grpc::ClientContext watch_ctx;
  smbfleet::v1::WatchRequest wreq;
  wreq.set_agent_version("test");
  auto reader = agent->Watch(&watch_ctx, wreq);
  smbfleet::v1::WatchResponse msg;
  ASSERT_TRUE(reader->Read(&msg));  // the greeting keepalive: the stream is registered
  EXPECT_TRUE(msg.has_keepalive());

  auto admin = smbfleet::v1::AdminService::NewStub(Channel(pki_, "operator-admin"));
  grpc::ClientContext ctx;
  smbfleet::v1::RequestReportRequest req;
  req.set_name("fs02");
  smbfleet::v1::RequestReportResponse resp;
  auto s = admin->RequestReport(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(resp.delivered());
  ASSERT_TRUE(reader->Read(&msg));
  ASSERT_TRUE(msg.has_report_now());
  EXPECT_THAT(msg.report_now().reason(), HasSubstr("admin"));

  grpc::ClientContext ctx2;
  req.set_name("fs01");  // not connected
  auto s2 = admin->RequestReport(&ctx2, req, &resp);
  EXPECT_EQ(s2.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  watch_ctx.TryCancel();
  reader->Finish();
}

TEST_F(CollectorTlsTest, ApprovedChangeReachesTheWatchStreamAndTheAckCompletesIt) {
  for (const char* who : {"pat proposer", "ann approver", "vic viewer"}) {
    std::string cmd = absl::StrCat("bash ", SMBFLEET_SOURCE_DIR, "/deploy/ca.sh operator ", pki_,
                                   " ", who, " >/dev/null");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  auto agent = smbfleet::v1::AgentService::NewStub(Channel(pki_, "agent-fs02"));
  smbfleet::v1::ReportResponse reported;
  ASSERT_TRUE(Send(Channel(pki_, "agent-fs02"),
                   Report("7d0c3a52-7c1f-4a51-9d8e-5f1c2b3a4d01", "fs02"), &reported)
                  .ok());
  grpc::ClientContext watch_ctx;
  smbfleet::v1::WatchRequest wreq;
  wreq.set_agent_version("test");
  auto reader = agent->Watch(&watch_ctx, wreq);
  smbfleet::v1::WatchResponse msg;
  ASSERT_TRUE(reader->Read(&msg));  // the greeting: the stream is registered

  auto pat = smbfleet::v1::AdminService::NewStub(Channel(pki_, "operator-pat"));
  auto ann = smbfleet::v1::AdminService::NewStub(Channel(pki_, "operator-ann"));
  auto vic = smbfleet::v1::AdminService::NewStub(Channel(pki_, "operator-vic"));
  smbfleet::v1::ProposeChangeResponse proposed;
  grpc::Status s = ProposeSigningOnFs02(pat.get(), &proposed);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::string id = proposed.change().id();

  // Ann's key, made on her machine; an admin registers its public half.
  auto ann_key = GenerateEd25519Key();
  ASSERT_TRUE(ann_key.ok()) << ann_key.status();
  auto admin = smbfleet::v1::AdminService::NewStub(Channel(pki_, "operator-admin"));
  smbfleet::v1::RegisterApproverKeyRequest reg;
  reg.set_name("ann");
  reg.set_public_key(ann_key->public_raw);
  smbfleet::v1::RegisterApproverKeyResponse registered;
  s = Call([&](grpc::ClientContext* c) { return admin->RegisterApproverKey(c, reg, &registered); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  smbfleet::v1::GetChangeRequest to_sign;
  to_sign.set_id(id);
  smbfleet::v1::GetChangeResponse fetched;
  s = Call([&](grpc::ClientContext* c) { return ann->GetChange(c, to_sign, &fetched); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_FALSE(fetched.approval_payload().empty());

  smbfleet::v1::ApproveChangeRequest approve;
  approve.set_id(id);
  smbfleet::v1::ApproveChangeResponse approved;
  s = Call([&](grpc::ClientContext* c) { return vic->ApproveChange(c, approve, &approved); });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  s = Call([&](grpc::ClientContext* c) { return pat->ApproveChange(c, approve, &approved); });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  s = Call([&](grpc::ClientContext* c) { return ann->ApproveChange(c, approve, &approved); });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  approve.mutable_signature()->set_approver("ann");
  approve.mutable_signature()->set_key_id(registered.key().key_id());
  approve.mutable_signature()->set_signature(
      *SignEd25519(ann_key->private_pem, fetched.approval_payload()));
  const absl::Time approving = absl::Now();
  s = Call([&](grpc::ClientContext* c) { return ann->ApproveChange(c, approve, &approved); });
  ASSERT_TRUE(s.ok()) << s.error_message();

  // The order comes down the stream (keepalives may come first).
  smbfleet::v1::ChangeOrder order;
  while (reader->Read(&msg)) {
    if (msg.has_change_order()) {
      order = msg.change_order();
      break;
    }
  }
  ASSERT_EQ(order.change_id(), id);
  // A figure, not an assertion: approval call to the order read off the agent's stream.
  std::printf("{\"approval_to_order_ms\": %.1f}\n",
              absl::ToDoubleMilliseconds(absl::Now() - approving));
  ASSERT_EQ(order.settings_size(), 1);
  EXPECT_EQ(order.settings(0).setting(), "server.requireSigning");
  // What the agent verifies: the payload ann signed, with her signature.
  EXPECT_EQ(order.approval_payload(), fetched.approval_payload());
  ASSERT_EQ(order.signatures_size(), 1);
  EXPECT_TRUE(
      VerifyEd25519(ann_key->public_raw, order.approval_payload(), order.signatures(0).signature())
          .ok());
  // The payload commits to the hosts GetChange showed; the order carries this host's own.
  auto payload = ParseApprovalPayload(order.approval_payload());
  ASSERT_TRUE(payload.ok()) << payload.status();
  auto tree =
      ApprovalHostTree::Build({fetched.approval_hosts().begin(), fetched.approval_hosts().end()});
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(tree->root(), payload->hosts_root());
  const std::vector<std::string> proof(order.host_proof().begin(), order.host_proof().end());
  EXPECT_TRUE(
      VerifyHostOrderInclusion(*payload, order.host_order(), order.host_index(), proof).ok());

  smbfleet::v1::AckChangeRequest ack;
  ack.set_change_id(id);
  ack.set_version(order.version());
  ack.set_nonce(order.nonce());
  ack.set_result(smbfleet::v1::AckChangeRequest::RESULT_APPLIED);
  smbfleet::v1::AckChangeResponse acked;
  s = Call([&](grpc::ClientContext* c) { return agent->AckChange(c, ack, &acked); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  ack.set_nonce("forged");
  s = Call([&](grpc::ClientContext* c) { return agent->AckChange(c, ack, &acked); });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();

  smbfleet::v1::GetChangeRequest get;
  get.set_id(id);
  smbfleet::v1::GetChangeResponse shown;
  s = Call([&](grpc::ClientContext* c) { return vic->GetChange(c, get, &shown); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(shown.change().state(), smbfleet::v1::CHANGE_STATE_COMPLETED);
  smbfleet::v1::ListHostsResponse hosts;
  s = Call([&](grpc::ClientContext* c) { return vic->ListHosts(c, {}, &hosts); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(hosts.hosts_size(), 1);
  EXPECT_EQ(hosts.hosts(0).change_status().applied_change_id(), id);
  watch_ctx.TryCancel();
  reader->Finish();
}

// Real traffic over mutual TLS moves the counters it should and no others; the figures come
// from the Prometheus text that /metrics serves.
TEST_F(CollectorTlsTest, MetricsMoveWithRealTraffic) {
  StartCollector(std::make_unique<policy::Policy>(testing::TinyPolicy()));
  Metrics* metrics = collector_->metrics();
  ASSERT_NE(metrics, nullptr);
  auto value = [&](const char* name, std::map<std::string, std::string> labels = {}) {
    std::optional<double> v = SampleIn(metrics->Text(), name, labels);
    return v.value_or(-1);
  };
  auto reports = [&](const char* result) {
    return value("smbfleet_reports_total", {{"result", result}});
  };
  auto refused = [&](const char* reason) {
    return value("smbfleet_reports_refused_total", {{"reason", reason}});
  };
  EXPECT_EQ(reports("received"), 0);
  EXPECT_EQ(value("smbfleet_build_info", {{"version", kVersion}}), 1);

  // fs01: stored, the same report again (duplicate), a new report of the same state (unchanged).
  smbfleet::v1::ReportResponse resp;
  auto fs01 = Channel(pki_, "agent-fs01");
  auto r = Report("00000000-0000-4000-8000-0000000000a1", "fs01");
  ASSERT_TRUE(Send(fs01, r, &resp).ok());
  ASSERT_TRUE(Send(fs01, r, &resp).ok());
  ASSERT_EQ(resp.outcome(), smbfleet::v1::ReportResponse::OUTCOME_DUPLICATE);
  r.set_report_id("00000000-0000-4000-8000-0000000000a2");
  ASSERT_TRUE(Send(fs01, r, &resp).ok());
  ASSERT_EQ(resp.outcome(), smbfleet::v1::ReportResponse::OUTCOME_UNCHANGED);
  EXPECT_EQ(reports("stored"), 1);
  EXPECT_EQ(reports("duplicate"), 1);
  EXPECT_EQ(reports("unchanged"), 1);
  // Evaluated once: the unchanged report has the same evaluation key, the duplicate none.
  EXPECT_EQ(value("smbfleet_policy_evaluation_seconds_count"), 1);

  // Refused: invalid, not an agent, no certificate.
  EXPECT_EQ(Send(fs01, Report("not-a-uuid", "fs01"), &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Send(Channel(pki_, "operator-admin"),
                 Report("00000000-0000-4000-8000-0000000000a3", "x"), &resp)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  auto m = LoadTls({pki_ + "/agent-fs01.pem", pki_ + "/agent-fs01.key", pki_ + "/ca.pem"});
  ASSERT_TRUE(m.ok());
  grpc::SslCredentialsOptions no_cert;
  no_cert.pem_root_certs = m->ca_pem;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto anonymous = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", collector_->port()),
                                             grpc::SslCredentials(no_cert), args);
  EXPECT_EQ(
      Send(anonymous, Report("00000000-0000-4000-8000-0000000000a4", "fs01"), &resp).error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(refused("invalid"), 1);
  EXPECT_EQ(refused("not_agent"), 1);
  EXPECT_EQ(refused("unauthenticated"), 1);
  EXPECT_EQ(refused("database"), 0);
  EXPECT_EQ(refused("busy"), 0);
  EXPECT_EQ(reports("stored"), 1);  // refusals store nothing

  // fs02 reports, opens its Watch stream, gets an approved change and acks it APPLIED.
  for (const char* who : {"pat proposer", "ann approver"}) {
    std::string cmd = absl::StrCat("bash ", SMBFLEET_SOURCE_DIR, "/deploy/ca.sh operator ", pki_,
                                   " ", who, " >/dev/null");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  ASSERT_TRUE(Send(Channel(pki_, "agent-fs02"),
                   Report("00000000-0000-4000-8000-0000000000b1", "fs02"), &resp)
                  .ok());
  EXPECT_EQ(value("smbfleet_agents_connected"), 0);
  auto agent = smbfleet::v1::AgentService::NewStub(Channel(pki_, "agent-fs02"));
  grpc::ClientContext watch_ctx;
  smbfleet::v1::WatchRequest wreq;
  auto reader = agent->Watch(&watch_ctx, wreq);
  smbfleet::v1::WatchResponse msg;
  ASSERT_TRUE(reader->Read(&msg));  // the greeting: the stream is registered
  EXPECT_EQ(value("smbfleet_agents_connected"), 1);

  auto pat = smbfleet::v1::AdminService::NewStub(Channel(pki_, "operator-pat"));
  auto ann = smbfleet::v1::AdminService::NewStub(Channel(pki_, "operator-ann"));
  auto admin = smbfleet::v1::AdminService::NewStub(Channel(pki_, "operator-admin"));
  smbfleet::v1::ProposeChangeResponse proposed;
  grpc::Status s = ProposeSigningOnFs02(pat.get(), &proposed);
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto ann_key = GenerateEd25519Key();
  ASSERT_TRUE(ann_key.ok()) << ann_key.status();
  smbfleet::v1::RegisterApproverKeyRequest reg;
  reg.set_name("ann");
  reg.set_public_key(ann_key->public_raw);
  smbfleet::v1::RegisterApproverKeyResponse registered;
  s = Call([&](grpc::ClientContext* c) { return admin->RegisterApproverKey(c, reg, &registered); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  smbfleet::v1::GetChangeRequest to_sign;
  to_sign.set_id(proposed.change().id());
  smbfleet::v1::GetChangeResponse fetched;
  s = Call([&](grpc::ClientContext* c) { return ann->GetChange(c, to_sign, &fetched); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  smbfleet::v1::ApproveChangeRequest approve;
  approve.set_id(proposed.change().id());
  approve.mutable_signature()->set_approver("ann");
  approve.mutable_signature()->set_key_id(registered.key().key_id());
  approve.mutable_signature()->set_signature(
      *SignEd25519(ann_key->private_pem, fetched.approval_payload()));
  smbfleet::v1::ApproveChangeResponse approved;
  s = Call([&](grpc::ClientContext* c) { return ann->ApproveChange(c, approve, &approved); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  smbfleet::v1::ChangeOrder order;
  while (reader->Read(&msg)) {
    if (msg.has_change_order()) {
      order = msg.change_order();
      break;
    }
  }
  ASSERT_EQ(order.change_id(), proposed.change().id());
  EXPECT_GE(value("smbfleet_change_orders_sent_total"), 1);
  EXPECT_EQ(value("smbfleet_change_orders_total", {{"result", "APPLIED"}}), 0);  // not acked yet
  EXPECT_EQ(value("smbfleet_order_ack_latency_seconds_count"), 0);

  smbfleet::v1::AckChangeRequest ack;
  ack.set_change_id(order.change_id());
  ack.set_version(order.version());
  ack.set_nonce(order.nonce());
  ack.set_result(smbfleet::v1::AckChangeRequest::RESULT_APPLIED);
  smbfleet::v1::AckChangeResponse acked;
  s = Call([&](grpc::ClientContext* c) { return agent->AckChange(c, ack, &acked); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  // The same ack again changes nothing, and a forged one is refused: neither counts.
  s = Call([&](grpc::ClientContext* c) { return agent->AckChange(c, ack, &acked); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  ack.set_nonce("forged");
  s = Call([&](grpc::ClientContext* c) { return agent->AckChange(c, ack, &acked); });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_EQ(value("smbfleet_change_orders_total", {{"result", "APPLIED"}}), 1);
  EXPECT_EQ(value("smbfleet_change_orders_total", {{"result", "FAILED"}}), 0);
  EXPECT_EQ(value("smbfleet_change_orders_total", {{"result", "REFUSED"}}), 0);
  EXPECT_EQ(value("smbfleet_order_ack_latency_seconds_count"), 1);
  EXPECT_GE(value("smbfleet_order_ack_latency_seconds_sum"), 0);
  // A figure, not an assertion: dispatch to ack through the real stack.
  std::printf("{\"order_ack_latency_seconds\": %.3f}\n",
              value("smbfleet_order_ack_latency_seconds_sum"));

  // Every received report ended as exactly one outcome or one refusal.
  const double ended = reports("stored") + reports("unchanged") + reports("duplicate") +
                       refused("invalid") + refused("not_agent") + refused("unauthenticated") +
                       refused("database") + refused("busy");
  EXPECT_EQ(reports("received"), 7);
  EXPECT_EQ(reports("received"), ended);
  // The database was used through the pool, and nothing failed.
  EXPECT_GT(value("smbfleet_database_pool_wait_seconds_count"), 0);
  for (const char* op : {"connect", "read", "write"}) {
    EXPECT_EQ(value("smbfleet_database_errors_total", {{"operation", op}}), 0) << op;
  }
  EXPECT_EQ(value("smbfleet_ingest_queue_depth"), 0);

  // The stream closing takes the agent off the gauge (the server sees it a moment later).
  watch_ctx.TryCancel();
  reader->Finish();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (value("smbfleet_agents_connected") != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(value("smbfleet_agents_connected"), 0);
}

}  // namespace
}  // namespace smbfleet::collector

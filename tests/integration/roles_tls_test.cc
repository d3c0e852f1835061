// The role matrix against the collector over real mutual TLS: every RPC of every service, called
// as each kind of principal with certificates from deploy/ca.sh, gets the decision docs/roles.md
// shows; and the hostile cells around identity: host A's certificate reporting, streaming or
// acknowledging for host B, and expired, not-yet-valid and foreign certificates.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collector/server/collector.h"
#include "collector/store/postgres/pg_store.h"
#include "collector/testing/roles_table.h"
#include "common/approval_signing.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "smbfleet/v1/agent.grpc.pb.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using ::smbfleet::testing::CreateTestDatabase;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Run(const std::string& cmd) {
  if (std::system((cmd + " >/dev/null").c_str()) != 0) {
    throw std::runtime_error(absl::StrCat("failed: ", cmd));
  }
}

std::string CaSh() { return absl::StrCat("bash ", SMBFLEET_SOURCE_DIR, "/deploy/ca.sh"); }

// A certificate ca.sh does not make (no role, or a validity in the past or future), signed by
// the CA in `dir`: subject "OU=agent,CN=fs01" style, valid from now+from to now+to seconds.
void IssueOdd(const std::string& dir, const std::string& base, const std::string& subject,
              long from, long to) {
  using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
  using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
  using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
  BioPtr ca_bio(BIO_new_file((dir + "/ca.pem").c_str(), "r"), BIO_free);
  BioPtr key_bio(BIO_new_file((dir + "/ca.key").c_str(), "r"), BIO_free);
  ASSERT_TRUE(ca_bio && key_bio) << dir << " has no ca.pem/ca.key";
  X509Ptr ca(PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr), X509_free);
  KeyPtr ca_key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  ASSERT_TRUE(ca && ca_key);
  KeyPtr key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  X509Ptr x(X509_new(), X509_free);
  ASSERT_TRUE(key && x);
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set_uint64(X509_get_serialNumber(x.get()),
                          static_cast<uint64_t>(std::hash<std::string>{}(base + subject)));
  X509_gmtime_adj(X509_getm_notBefore(x.get()), from);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), to);
  X509_set_pubkey(x.get(), key.get());
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("smbfleet"), -1, -1, 0);
  std::string cn;
  for (absl::string_view part : absl::StrSplit(subject, ',')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (kv.first == "CN") cn = kv.second;
    X509_NAME_add_entry_by_txt(name, kv.first.c_str(), MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(kv.second.c_str()), -1, -1,
                               0);
  }
  X509_set_issuer_name(x.get(), X509_get_subject_name(ca.get()));
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, ca.get(), x.get(), nullptr, nullptr, 0);
  const std::string san = "DNS:" + cn;
  const std::pair<int, std::string> extensions[] = {
      {NID_basic_constraints, "CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, "clientAuth"},
      {NID_subject_alt_name, san},
  };
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    ASSERT_NE(ext, nullptr) << value;
    X509_add_ext(x.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  ASSERT_GT(X509_sign(x.get(), ca_key.get(), EVP_sha256()), 0);
  BioPtr out(BIO_new_file((dir + "/" + base + ".pem").c_str(), "w"), BIO_free);
  BioPtr key_out(BIO_new_file((dir + "/" + base + ".key").c_str(), "w"), BIO_free);
  ASSERT_TRUE(out && key_out);
  PEM_write_bio_X509(out.get(), x.get());
  PEM_write_bio_PrivateKey(key_out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
}

// The certificates of the test, once: through ca.sh where it can make them.
struct Pki {
  std::string dir;    // the fleet's CA and everyone's certificates
  std::string other;  // another CA, with its own fs01
};

const Pki& Certificates() {
  static const Pki* pki = [] {
    auto* p = new Pki;
    p->dir = smbfleet::testing::MakeTempDir("smbfleet-roles") + "/pki";
    p->other = smbfleet::testing::MakeTempDir("smbfleet-roles-other") + "/pki";
    const std::string ca = CaSh();
    Run(absl::StrCat(ca, " init ", p->dir));
    Run(absl::StrCat(ca, " collector ", p->dir, " localhost"));
    for (const char* host : {"fs01", "fs02"}) Run(absl::StrCat(ca, " agent ", p->dir, " ", host));
    for (const char* role : {"viewer", "proposer", "approver", "admin"}) {
      Run(absl::StrCat(ca, " operator ", p->dir, " ", role, " ", role));
    }
    Run(absl::StrCat(ca, " operator ", p->dir, " multi proposer,approver"));
    Run(absl::StrCat(ca, " init ", p->other));
    Run(absl::StrCat(ca, " agent ", p->other, " fs01"));
    return p;
  }();
  return *pki;
}

class RolesTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const Pki& pki = Certificates();
    IssueOdd(pki.dir, "operator-norole", "OU=operator,CN=nora", -60, 3600);
    IssueOdd(pki.dir, "agent-expired", "OU=agent,CN=fs01", -7200, -3600);
    IssueOdd(pki.dir, "agent-early", "OU=agent,CN=fs01", 3600, 7200);
  }

  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    pki_ = Certificates().dir;
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    auto store = NewPgStore(dsn_, 2);
    ASSERT_TRUE(store.ok()) << store.status();
    CollectorConfig config;
    config.listen = "127.0.0.1:0";
    config.keepalive_interval = std::chrono::seconds(30);
    config.enrollment.ca_cert = pki_ + "/ca.pem";  // enrollment is served, so its cells count
    config.enrollment.ca_key = pki_ + "/ca.key";
    auto tls = LoadTls({pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"});
    ASSERT_TRUE(tls.ok()) << tls.status();
    auto c = Collector::Start(config, *tls, *std::move(store));
    ASSERT_TRUE(c.ok()) << c.status();
    collector_ = *std::move(c);
  }

  // A channel presenting DIR/WHO.pem (no certificate for an empty `who`), trusting our CA.
  std::shared_ptr<grpc::Channel> Channel(const std::string& who, const std::string& dir = "") {
    const std::string from = dir.empty() ? pki_ : dir;
    grpc::SslCredentialsOptions opts;
    opts.pem_root_certs = ReadFile(pki_ + "/ca.pem");
    if (!who.empty()) {
      opts.pem_cert_chain = ReadFile(from + "/" + who + ".pem");
      opts.pem_private_key = ReadFile(from + "/" + who + ".key");
      EXPECT_FALSE(opts.pem_cert_chain.empty()) << who;
    }
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", collector_->port()),
                                     grpc::SslCredentials(opts), args);
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }

  // Any unary RPC by name, with an empty request: the authorization decision comes before the
  // request is looked at.
  static grpc::Status CallEmpty(const std::shared_ptr<grpc::Channel>& ch,
                                const std::string& method) {
    grpc::GenericStub stub(ch);
    auto ctx = Context();
    grpc::Slice empty{std::string()};
    grpc::ByteBuffer request(&empty, 1), response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(ctx.get(), method, grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  }

  static grpc::Status OpenWatch(const std::shared_ptr<grpc::Channel>& ch) {
    auto stub = v1::AgentService::NewStub(ch);
    auto ctx = Context();
    v1::WatchRequest req;
    req.set_agent_version("test");
    auto reader = stub->Watch(ctx.get(), req);
    v1::WatchResponse msg;
    if (reader->Read(&msg)) {  // the greeting: the stream was accepted
      ctx->TryCancel();
      reader->Finish();
      return grpc::Status::OK;
    }
    return reader->Finish();
  }

  grpc::Status Report(const std::shared_ptr<grpc::Channel>& ch, const std::string& id,
                      const std::string& hostname, v1::ReportResponse* resp = nullptr) {
    v1::ReportRequest r;
    r.set_report_id(id);
    r.mutable_posture()->mutable_host()->set_hostname(hostname);
    r.mutable_posture()->mutable_server()->set_smb1_enabled(false);
    v1::ReportResponse ignored;
    auto ctx = Context();
    return v1::AgentService::NewStub(ch)->Report(ctx.get(), r, resp ? resp : &ignored);
  }

  grpc::StatusCode HostStatus(const std::string& name) {
    auto ctx = Context();
    v1::GetHostRequest req;
    req.set_name(name);
    v1::GetHostResponse resp;
    grpc::Status s =
        v1::AdminService::NewStub(Channel("operator-admin"))->GetHost(ctx.get(), req, &resp);
    if (!s.ok()) std::cerr << "GetHost " << name << ": " << s.error_message() << "\n";
    return s.error_code();
  }

  std::string pki_, dsn_;
  std::unique_ptr<Collector> collector_;
};

bool Denied(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
         s.error_code() == grpc::StatusCode::UNAUTHENTICATED;
}

// A caller of the matrix: its certificate and the columns of docs/roles.md it stands for (a
// principal with several roles may do what any of them may).
struct Caller {
  std::string label;
  std::string cert;  // empty: no client certificate
  std::vector<std::string> columns;
};

TEST_F(RolesTlsTest, EveryRpcAsEveryKindOfCallerDecidesAsTheDocsSay) {
  auto table = testing::LoadRolesTable();
  ASSERT_TRUE(table.ok()) << table.status();
  std::map<std::string, testing::RolesTableRow> rows;
  for (const auto& row : *table) rows[row.method] = row;

  const std::vector<Caller> callers = {
      {"viewer", "operator-viewer", {"viewer"}},
      {"proposer", "operator-proposer", {"proposer"}},
      {"approver", "operator-approver", {"approver"}},
      {"admin", "operator-admin", {"admin"}},
      {"no role", "operator-norole", {"no role"}},
      {"proposer+approver", "operator-multi", {"proposer", "approver"}},
      {"agent", "agent-fs01", {"agent"}},
      {"anonymous", "", {"anonymous"}},
  };
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels;
  for (const Caller& caller : callers) channels[caller.label] = Channel(caller.cert);
  (void)v1::ListHostsRequest::descriptor();  // links the services' files into the pool
  (void)v1::ReportRequest::descriptor();
  int cells = 0;
  for (const char* service_name :
       {"smbfleet.v1.AdminService", "smbfleet.v1.AgentService", "smbfleet.v1.EnrollmentService"}) {
    const auto* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service_name);
    ASSERT_NE(service, nullptr) << service_name;
    for (int i = 0; i < service->method_count(); ++i) {
      const auto* method = service->method(i);
      const std::string short_name = absl::StrCat(service->name(), ".", method->name());
      auto row = rows.find(short_name);
      ASSERT_TRUE(row != rows.end()) << short_name << " has no row in docs/roles.md";
      const std::string path = absl::StrCat("/", service->full_name(), "/", method->name());
      for (const Caller& caller : callers) {
        bool allowed = false;
        for (const std::string& column : caller.columns) allowed |= row->second.allowed.at(column);
        const auto& ch = channels[caller.label];
        grpc::Status s = method->server_streaming() ? OpenWatch(ch) : CallEmpty(ch, path);
        ++cells;
        const std::string cell =
            absl::StrCat(caller.label, " x ", short_name, ": ", static_cast<int>(s.error_code()),
                         " ", s.error_message());
        if (allowed) {
          EXPECT_FALSE(Denied(s)) << cell << " -- should be allowed";
        } else {
          EXPECT_TRUE(Denied(s)) << cell << " -- should be denied";
        }
      }
    }
  }
  EXPECT_EQ(cells, static_cast<int>(callers.size() * rows.size()))
      << "a row of docs/roles.md names no RPC";
}

TEST_F(RolesTlsTest, AReportForAnotherHostIsTheCertificatesHosts) {
  v1::ReportResponse resp;
  auto s = Report(Channel("agent-fs01"), "6a1b2c3d-0000-4000-8000-000000000001", "fs02", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.host(), "fs01");
  EXPECT_EQ(HostStatus("fs01"), grpc::StatusCode::OK);
  EXPECT_EQ(HostStatus("fs02"), grpc::StatusCode::NOT_FOUND);
}

TEST_F(RolesTlsTest, AWatchStreamIsTheCertificatesHosts) {
  auto agent = v1::AgentService::NewStub(Channel("agent-fs01"));
  grpc::ClientContext watch_ctx;
  v1::WatchRequest wreq;
  wreq.set_agent_version("test");
  auto reader = agent->Watch(&watch_ctx, wreq);
  v1::WatchResponse msg;
  ASSERT_TRUE(reader->Read(&msg));  // the greeting: the stream is registered

  auto admin = v1::AdminService::NewStub(Channel("operator-admin"));
  v1::RequestReportRequest req;
  v1::RequestReportResponse resp;
  req.set_name("fs02");  // the stream is fs01's, whatever the agent would like to be
  auto ctx = Context();
  EXPECT_EQ(admin->RequestReport(ctx.get(), req, &resp).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  req.set_name("fs01");
  ctx = Context();
  auto s = admin->RequestReport(ctx.get(), req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(reader->Read(&msg));
  EXPECT_TRUE(msg.has_report_now());

  // The second nudge within the interval is refused, naming the host.
  ctx = Context();
  s = admin->RequestReport(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("'fs01'"));
  watch_ctx.TryCancel();
  reader->Finish();
}

TEST_F(RolesTlsTest, AnAckForAnotherHostsOrderChangesNothing) {
  ASSERT_TRUE(Report(Channel("agent-fs02"), "6a1b2c3d-0000-4000-8000-000000000002", "fs02").ok());
  auto fs02 = v1::AgentService::NewStub(Channel("agent-fs02"));
  grpc::ClientContext watch_ctx;
  v1::WatchRequest wreq;
  wreq.set_agent_version("test");
  auto reader = fs02->Watch(&watch_ctx, wreq);
  v1::WatchResponse msg;
  ASSERT_TRUE(reader->Read(&msg));

  auto proposer = v1::AdminService::NewStub(Channel("operator-proposer"));
  auto approver = v1::AdminService::NewStub(Channel("operator-approver"));
  v1::ProposeChangeRequest propose;
  propose.add_hosts("fs02");
  auto* setting = propose.add_settings();
  setting->set_setting("server.requireSigning");
  setting->set_value("true");
  v1::ProposeChangeResponse proposed;
  auto ctx = Context();
  auto s = proposer->ProposeChange(ctx.get(), propose, &proposed);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // The approver signs the change's payload with a key an admin registered for them.
  auto key = GenerateEd25519Key();
  ASSERT_TRUE(key.ok());
  v1::RegisterApproverKeyRequest reg;
  reg.set_name("approver");
  reg.set_public_key(key->public_raw);
  v1::RegisterApproverKeyResponse registered;
  ctx = Context();
  s = v1::AdminService::NewStub(Channel("operator-admin"))
          ->RegisterApproverKey(ctx.get(), reg, &registered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::GetChangeRequest to_sign;
  to_sign.set_id(proposed.change().id());
  v1::GetChangeResponse payload;
  ctx = Context();
  ASSERT_TRUE(approver->GetChange(ctx.get(), to_sign, &payload).ok());
  v1::ApproveChangeRequest approve;
  approve.set_id(proposed.change().id());
  approve.mutable_signature()->set_approver("approver");
  approve.mutable_signature()->set_key_id(registered.key().key_id());
  auto signature = SignEd25519(key->private_pem, payload.approval_payload());
  ASSERT_TRUE(signature.ok()) << signature.status();
  approve.mutable_signature()->set_signature(*signature);
  v1::ApproveChangeResponse approved;
  ctx = Context();
  s = approver->ApproveChange(ctx.get(), approve, &approved);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::ChangeOrder order;
  while (reader->Read(&msg)) {
    if (msg.has_change_order()) {
      order = msg.change_order();
      break;
    }
  }
  ASSERT_EQ(order.change_id(), proposed.change().id());

  // fs01 knows everything about fs02's order and acknowledges it as applied.
  v1::AckChangeRequest ack;
  ack.set_change_id(order.change_id());
  ack.set_version(order.version());
  ack.set_nonce(order.nonce());
  ack.set_result(v1::AckChangeRequest::RESULT_APPLIED);
  v1::AckChangeResponse acked;
  ctx = Context();
  s = v1::AgentService::NewStub(Channel("agent-fs01"))->AckChange(ctx.get(), ack, &acked);
  EXPECT_FALSE(s.ok());
  v1::GetChangeRequest get;
  get.set_id(order.change_id());
  v1::GetChangeResponse shown;
  auto viewer = v1::AdminService::NewStub(Channel("operator-viewer"));
  ctx = Context();
  ASSERT_TRUE(viewer->GetChange(ctx.get(), get, &shown).ok());
  EXPECT_NE(shown.change().state(), v1::CHANGE_STATE_COMPLETED);

  // The host the order is for completes it.
  ctx = Context();
  s = fs02->AckChange(ctx.get(), ack, &acked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ctx = Context();
  ASSERT_TRUE(viewer->GetChange(ctx.get(), get, &shown).ok());
  EXPECT_EQ(shown.change().state(), v1::CHANGE_STATE_COMPLETED);
  watch_ctx.TryCancel();
  reader->Finish();
}

TEST_F(RolesTlsTest, ExpiredNotYetValidAndForeignCertificatesAreRefused) {
  const struct {
    const char* label;
    std::string cert;
    std::string dir;
  } cases[] = {
      {"expired", "agent-expired", pki_},
      {"not yet valid", "agent-early", pki_},
      {"another CA", "agent-fs01", Certificates().other},
  };
  int n = 10;
  for (const auto& c : cases) {
    auto ch = Channel(c.cert, c.dir);
    auto s = Report(ch, absl::StrCat("6a1b2c3d-0000-4000-8000-0000000000", n++), "fs01");
    EXPECT_FALSE(s.ok()) << c.label;
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::UNAVAILABLE || Denied(s))
        << c.label << ": " << s.error_code() << " " << s.error_message();
    EXPECT_FALSE(OpenWatch(ch).ok()) << c.label;
  }
  EXPECT_EQ(HostStatus("fs01"), grpc::StatusCode::NOT_FOUND);  // nothing was stored
}

}  // namespace
}  // namespace smbfleet::collector

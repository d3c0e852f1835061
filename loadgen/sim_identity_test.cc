#include "loadgen/sim_identity.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "collector/ingest/digest.h"
#include "collector/ingest/validate.h"
#include "common/files.h"
#include "common/tls.h"
#include "gtest/gtest.h"
#include "loadgen/sim_posture.h"

namespace smbfleet::loadgen {
namespace {

// The development CA of deploy/ca.sh, made once for these tests.
std::string DevCa() {
  static const std::string dir = [] {
    std::string d = absl::StrCat(::testing::TempDir(), "/loadgen-pki-", getpid());
    const std::string cmd =
        absl::StrCat("bash ", SMBFLEET_SOURCE_DIR, "/deploy/ca.sh init ", d, " >/dev/null");
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return d;
  }();
  return dir;
}

std::unique_ptr<AgentIssuer> Issuer() {
  const std::string dir = DevCa();
  auto issuer = AgentIssuer::Create(*ReadFile(dir + "/agents-ca.pem"),
                                    *ReadFile(dir + "/agents-ca.key"), *ReadFile(dir + "/ca.pem"));
  EXPECT_TRUE(issuer.ok()) << issuer.status();
  return std::move(issuer).value();
}

// Whether the root alone verifies `chain_pem` (leaf, then intermediates) for client auth.
bool VerifiesAgainst(const std::string& chain_pem, const std::string& root_pem) {
  BIO* bio = BIO_new_mem_buf(chain_pem.data(), static_cast<int>(chain_pem.size()));
  X509* leaf = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  STACK_OF(X509)* rest = sk_X509_new_null();
  while (X509* c = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) sk_X509_push(rest, c);
  BIO_free(bio);
  BIO* root_bio = BIO_new_mem_buf(root_pem.data(), static_cast<int>(root_pem.size()));
  X509* root = PEM_read_bio_X509(root_bio, nullptr, nullptr, nullptr);
  BIO_free(root_bio);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, root);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, rest);
  X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
  const bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  X509_free(root);
  X509_free(leaf);
  sk_X509_pop_free(rest, X509_free);
  return ok;
}

TEST(AgentIssuerTest, IssuesAnAgentCertificateTheRootVerifies) {
  auto issuer = Issuer();
  auto tls = issuer->Issue("sim-00042");
  ASSERT_TRUE(tls.ok()) << tls.status();
  auto id = IdentityFromPem(tls->cert_pem);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->kind, "agent");
  EXPECT_EQ(id->common_name, "sim-00042");
  EXPECT_EQ(id->name, "sim-00042");
  EXPECT_TRUE(VerifiesAgainst(tls->cert_pem, *ReadFile(DevCa() + "/ca.pem")));
  // Each agent has its own key.
  auto other = issuer->Issue("sim-00043");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->key_pem, tls->key_pem);
}

TEST(AgentIssuerTest, RefusesANameThatIsNotAHostName) {
  auto tls = Issuer()->Issue("Sim 42");
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AgentIssuerTest, RefusesAKeyOfAnotherCertificate) {
  const std::string dir = DevCa();
  auto issuer = AgentIssuer::Create(*ReadFile(dir + "/agents-ca.pem"),
                                    *ReadFile(dir + "/people-ca.key"), *ReadFile(dir + "/ca.pem"));
  EXPECT_EQ(issuer.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SimulatedPostureTest, PassesIngestValidationAndChangesEachTime) {
  std::mt19937_64 rng(7);
  for (int host = 0; host < 50; ++host) {
    const HostShape shape = DrawShape(rng);
    EXPECT_GE(shape.shares, 1);
    EXPECT_LE(shape.shares, 50);
    EXPECT_GE(shape.sessions, 0);
    EXPECT_LE(shape.sessions, 200);
    smbfleet::v1::ReportRequest request;
    request.set_report_id("0f8fad5b-d9cb-469f-a165-70867728950e");
    *request.mutable_posture() = SimulatedPosture("sim-00001", shape, 0, rng);
    const absl::Status valid = collector::ValidateReport(request, collector::IngestLimits{});
    EXPECT_TRUE(valid.ok()) << valid;
    const smbfleet::v1::Posture& p = request.posture();
    EXPECT_EQ(p.host().hostname(), "sim-00001");
    EXPECT_EQ(p.sessions_size(), shape.sessions);
    EXPECT_EQ(p.events_size(), shape.events);
    EXPECT_EQ(p.host().platform(),
              shape.windows ? smbfleet::v1::PLATFORM_WINDOWS : smbfleet::v1::PLATFORM_SAMBA);
    // Windows adds its administrative shares (ADMIN$, C$, IPC$).
    EXPECT_EQ(p.shares_size(), shape.shares + (shape.windows ? 3 : 0));
    // The next posture of the host is a change as the collector sees it.
    EXPECT_NE(collector::PostureDigest(p),
              collector::PostureDigest(SimulatedPosture("sim-00001", shape, 1, rng)));
  }
}

// Sessions are new in every posture by default; with session_reports N a host's sessions keep
// their clients for N postures, 1/N of them new each time, their counters moving on.
TEST(SimulatedPostureTest, SessionsLastSessionReportsPostures) {
  HostShape shape;
  shape.sessions = 48;
  std::mt19937_64 rng(3);
  auto ids = [](const smbfleet::v1::Posture& p) {
    std::set<std::string> out;
    for (const auto& s : p.sessions()) out.insert(s.session_id());
    return out;
  };
  auto kept = [&](const smbfleet::v1::Posture& a, const smbfleet::v1::Posture& b) {
    const std::set<std::string> x = ids(a), y = ids(b);
    return std::count_if(x.begin(), x.end(), [&](const std::string& id) { return y.count(id); });
  };
  const auto once_a = SimulatedPosture("sim-00001", shape, 5, rng, 24, 1);
  const auto once_b = SimulatedPosture("sim-00001", shape, 6, rng, 24, 1);
  EXPECT_EQ(kept(once_a, once_b), 0);

  const auto a = SimulatedPosture("sim-00001", shape, 5, rng, 24, 4);
  const auto b = SimulatedPosture("sim-00001", shape, 6, rng, 24, 4);
  EXPECT_EQ(kept(a, b), 36);  // a quarter of 48 replaced
  EXPECT_NE(collector::PostureDigest(a), collector::PostureDigest(b));
  const auto c = SimulatedPosture("sim-00001", shape, 9, rng, 24, 4);
  EXPECT_EQ(kept(a, c), 0);  // four postures later every session is new
  // Another host's sessions are its own.
  EXPECT_EQ(kept(a, SimulatedPosture("sim-00002", shape, 5, rng, 24, 4)), 0);
}

TEST(SimulatedPostureTest, ShapesVaryAndFollowTheSeed) {
  std::mt19937_64 a(11), b(11);
  int windows = 0, many_sessions = 0;
  for (int i = 0; i < 1000; ++i) {
    const HostShape x = DrawShape(a), y = DrawShape(b);
    EXPECT_EQ(x.shares, y.shares);
    EXPECT_EQ(x.sessions, y.sessions);
    EXPECT_EQ(x.windows, y.windows);
    windows += x.windows ? 1 : 0;
    many_sessions += x.sessions > 100 ? 1 : 0;
  }
  EXPECT_GT(windows, 200);  // three in ten
  EXPECT_LT(windows, 400);
  EXPECT_GT(many_sessions, 0);
}

}  // namespace
}  // namespace smbfleet::loadgen

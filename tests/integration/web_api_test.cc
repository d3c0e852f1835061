// The console's HTTPS API over real TLS: a Collector configured with `console:` (memory stores),
// and a WebServer on a clock the test moves for session expiry. Tokens and client certificates
// from deploy/ca.sh.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/server/collector.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.pb.h"
#include "smbfleet/v1/console.pb.h"
#include "tests/integration/web_fixture.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using web_testing::Bearer;
using web_testing::Call;
using web_testing::Client;
using web_testing::Parse;
using web_testing::Pki;

constexpr char kCsp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'";

void ExpectSecurityHeaders(const httplib::Response& res, const std::string& what) {
  EXPECT_EQ(res.get_header_value("Content-Security-Policy"), kCsp) << what;
  EXPECT_EQ(res.get_header_value("X-Content-Type-Options"), "nosniff") << what;
  EXPECT_EQ(res.get_header_value("Referrer-Policy"), "no-referrer") << what;
  EXPECT_THAT(res.get_header_value("Strict-Transport-Security"), StartsWith("max-age=")) << what;
  EXPECT_EQ(res.get_header_value_count("Cache-Control"), 1u) << what;
}

void ExpectError(const httplib::Response& res, int status, const std::string& code) {
  EXPECT_EQ(res.status, status) << res.body;
  EXPECT_EQ(res.get_header_value("Content-Type"), "application/json");
  v1::ErrorResponse error = Parse<v1::ErrorResponse>(res);
  EXPECT_EQ(error.code(), code) << res.body;
  EXPECT_FALSE(error.message().empty());
  ExpectSecurityHeaders(res, "error " + code);
  EXPECT_EQ(res.get_header_value("Cache-Control"), "no-store");
}

class WebApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CollectorConfig config;
    config.listen = "127.0.0.1:0";
    config.console.enabled = true;
    config.console.listen = "127.0.0.1:0";
    auto tls = LoadTls({Pki() + "/collector.pem", Pki() + "/collector.key", Pki() + "/ca.pem"});
    ASSERT_TRUE(tls.ok()) << tls.status();
    Stores stores;
    auto hosts = std::make_unique<MemoryHostStore>();
    stores.compliance = std::make_unique<MemoryComplianceStore>(hosts.get());
    stores.hosts = std::move(hosts);
    auto c = Collector::Start(config, *tls, std::move(stores));
    ASSERT_TRUE(c.ok()) << c.status();
    collector_ = *std::move(c);
    ASSERT_GT(collector_->web_port(), 0);
  }

  int port() const { return collector_->web_port(); }

  // A token made by the admin (client certificate) through the API itself.
  std::string MakeToken(const std::string& name, const std::string& roles_json) {
    auto admin = Client(port(), "operator-admin");
    httplib::Response res = Call(
        *admin, "CreateApiToken",
        absl::StrCat(
            R"({"name":")", name, R"(","roles":)", roles_json, R"(,"expiresAt":")",
            absl::FormatTime(absl::RFC3339_sec, absl::Now() + absl::Hours(1), absl::UTCTimeZone()),
            R"("})"));
    EXPECT_EQ(res.status, 200) << res.body;
    return Parse<v1::CreateApiTokenResponse>(res).secret();
  }

  std::unique_ptr<Collector> collector_;
};

TEST_F(WebApiTest, TokenSignInThenSessionCalls) {
  std::string token = MakeToken("vera", R"(["viewer"])");
  ASSERT_THAT(token, StartsWith("sft_"));
  auto cli = Client(port());
  httplib::Response res = Call(*cli, "SignIn", "{}", Bearer(token));
  ASSERT_EQ(res.status, 200) << res.body;
  v1::SignInResponse in = Parse<v1::SignInResponse>(res);
  EXPECT_THAT(in.session(), StartsWith("sfs_"));
  EXPECT_EQ(in.idle_timeout_seconds(), 1800);
  EXPECT_THAT(res.body, HasSubstr(R"("idleTimeoutSeconds":1800,)"));  // a JSON number
  EXPECT_GT(in.expires_at().seconds(), absl::ToUnixSeconds(absl::Now()));
  EXPECT_EQ(in.who().name(), "vera");
  EXPECT_EQ(in.who().credential(), "token");
  EXPECT_EQ(res.get_header_value("Cache-Control"), "no-store");
  EXPECT_TRUE(res.get_header_value("Set-Cookie").empty());

  res = Call(*cli, "WhoAmI", "{}", Bearer(in.session()));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(Parse<v1::WhoAmIResponse>(res).name(), "vera");
  res = Call(*cli, "ListHosts", R"({"pageSize":10})", Bearer(in.session()));
  EXPECT_EQ(res.status, 200) << res.body;
  ExpectSecurityHeaders(res, "API");
  EXPECT_EQ(res.get_header_value("Cache-Control"), "no-store");

  // The token itself works on every call too (scripts).
  res = Call(*cli, "WhoAmI", "{}", Bearer(token));
  EXPECT_EQ(res.status, 200) << res.body;
}

TEST_F(WebApiTest, SignOutEndsTheSession) {
  std::string token = MakeToken("vera", R"(["viewer"])");
  auto cli = Client(port());
  std::string session =
      Parse<v1::SignInResponse>(Call(*cli, "SignIn", "{}", Bearer(token))).session();
  ASSERT_EQ(Call(*cli, "WhoAmI", "{}", Bearer(session)).status, 200);
  EXPECT_EQ(Call(*cli, "SignOut", "{}", Bearer(session)).status, 200);
  ExpectError(Call(*cli, "WhoAmI", "{}", Bearer(session)), 401, "UNAUTHENTICATED");
  ExpectError(Call(*cli, "SignOut", "{}", Bearer(session)), 401, "UNAUTHENTICATED");
}

TEST_F(WebApiTest, ViewerCannotApprove) {
  std::string token = MakeToken("vera", R"(["viewer"])");
  auto cli = Client(port());
  std::string session =
      Parse<v1::SignInResponse>(Call(*cli, "SignIn", "{}", Bearer(token))).session();
  httplib::Response res = Call(*cli, "ApproveChange", R"({"id":"CHG-1"})", Bearer(session));
  ExpectError(res, 403, "PERMISSION_DENIED");
  EXPECT_THAT(res.body, HasSubstr("vera"));
  // A viewer's client certificate directly: the same.
  auto viewer = Client(port(), "operator-viewer");
  ExpectError(Call(*viewer, "ApproveChange", R"({"id":"CHG-1"})"), 403, "PERMISSION_DENIED");
}

TEST_F(WebApiTest, NoCredentialIsUnauthenticated) {
  auto cli = Client(port());
  httplib::Response res = Call(*cli, "ListHosts");
  ExpectError(res, 401, "UNAUTHENTICATED");
  EXPECT_EQ(res.get_header_value("WWW-Authenticate"), "Bearer");
  ExpectError(Call(*cli, "SignIn"), 401, "UNAUTHENTICATED");
  ExpectError(Call(*cli, "ListHosts", "{}", Bearer("sft_0000000000000000_" + std::string(64, '0'))),
              401, "UNAUTHENTICATED");
  ExpectError(Call(*cli, "ListHosts", "{}", Bearer("sfs_" + std::string(64, '0'))), 401,
              "UNAUTHENTICATED");
}

TEST_F(WebApiTest, CertificateSignIn) {
  auto cli = Client(port(), "operator-viewer");
  httplib::Response res = Call(*cli, "SignIn");
  ASSERT_EQ(res.status, 200) << res.body;
  v1::SignInResponse in = Parse<v1::SignInResponse>(res);
  EXPECT_EQ(in.who().credential(), "certificate");
  EXPECT_THAT(in.who().roles(), ::testing::ElementsAre("viewer"));
  // The session works without the certificate too.
  auto plain = Client(port());
  EXPECT_EQ(Call(*plain, "ListHosts", "{}", Bearer(in.session())).status, 200);
  // A session cannot make another session.
  ExpectError(Call(*plain, "SignIn", "{}", Bearer(in.session())), 401, "UNAUTHENTICATED");
}

TEST_F(WebApiTest, AgentsDoNotSignIn) {
  auto agent = Client(port(), "agent-fs01");
  ExpectError(Call(*agent, "SignIn"), 403, "PERMISSION_DENIED");
}

TEST_F(WebApiTest, BadRequestsAreRefusedAndNamed) {
  auto cli = Client(port(), "operator-admin");
  httplib::Response res = Call(*cli, "GetHost", R"({"name": )");
  ExpectError(res, 400, "INVALID_ARGUMENT");
  EXPECT_THAT(res.body, HasSubstr("request body"));
  ExpectError(Call(*cli, "GetHost", R"({"hostname":"fs01"})"), 400, "INVALID_ARGUMENT");

  res = Call(*cli, "DropAllTables");
  ExpectError(res, 404, "NOT_FOUND");
  EXPECT_THAT(res.body, HasSubstr("DropAllTables"));

  httplib::Result big =
      cli->Post("/api/v1/ListHosts", std::string((1 << 20) + 1, ' '), "application/json");
  ASSERT_TRUE(big);
  ExpectError(big.value(), 413, "RESOURCE_EXHAUSTED");

  httplib::Result text = cli->Post("/api/v1/ListHosts", "{}", "text/plain");
  ASSERT_TRUE(text);
  ExpectError(text.value(), 415, "INVALID_ARGUMENT");
  httplib::Result form = cli->Post("/api/v1/ListHosts", "a=b", "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  ExpectError(form.value(), 415, "INVALID_ARGUMENT");
  // With a charset, JSON is JSON.
  httplib::Result charset = cli->Post("/api/v1/WhoAmI", "{}", "application/json; charset=utf-8");
  ASSERT_TRUE(charset);
  EXPECT_EQ(charset->status, 200) << charset->body;

  httplib::Result get = cli->Get("/api/v1/ListHosts");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  httplib::Result del = cli->Delete("/api/v1/ListHosts");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
}

TEST_F(WebApiTest, IndexHealthAndMetrics) {
  auto cli = Client(port());
  for (const char* path : {"/", "/hosts?q=fs&label=site:paris", "/hosts/fs01", "/changes/CHG-1"}) {
    httplib::Result r = cli->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_THAT(r->get_header_value("Content-Type"), StartsWith("text/html")) << path;
    EXPECT_THAT(r->body, HasSubstr("<!doctype html>")) << path;
    EXPECT_EQ(r->get_header_value("Cache-Control"), "no-store") << path;
    ExpectSecurityHeaders(r.value(), path);
  }
  httplib::Result health = cli->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  ExpectSecurityHeaders(health.value(), "/healthz");
  httplib::Result ready = cli->Get("/readyz");  // memory stores: nothing to wait for
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200) << ready->body;
  httplib::Result metrics = cli->Get("/metrics");  // no credential: counts only
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->get_header_value("Content-Type"), StartsWith("text/plain"));
  EXPECT_THAT(metrics->body, HasSubstr("\nsmbfleet_agents_connected 0\n"));
  ExpectSecurityHeaders(metrics.value(), "/metrics");
  httplib::Result asset = cli->Get("/assets/none.js");
  ASSERT_TRUE(asset);
  ExpectError(asset.value(), 404, "NOT_FOUND");
}

TEST(WebServerTest, AssetsAreCachedTheRestIsNot) {
  web_testing::StandaloneWeb web;
  auto cli = Client(web.port());
  httplib::Result js = cli->Get("/assets/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->body, "console.log('x');");
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_THAT(js->get_header_value("Cache-Control"), StartsWith("public, max-age="));
  ExpectSecurityHeaders(js.value(), "asset");
  httplib::Result css = cli->Get("/assets/app.css");
  ASSERT_TRUE(css);
  EXPECT_EQ(css->get_header_value("Content-Type"), "text/css; charset=utf-8");
  httplib::Result index = cli->Get("/hosts/fs01");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->body, "<!doctype html><title>console</title>");
  EXPECT_EQ(index->get_header_value("Cache-Control"), "no-store");
  ExpectSecurityHeaders(index.value(), "index");
}

TEST(WebServerTest, IdleSessionExpiresOnTheClock) {
  web_testing::StandaloneWeb web;
  auto cli = Client(web.port());
  std::string token = web.Token("vera", {"viewer"});
  std::string session =
      Parse<v1::SignInResponse>(Call(*cli, "SignIn", "{}", Bearer(token))).session();
  web.Advance(absl::Minutes(29));
  ASSERT_EQ(Call(*cli, "WhoAmI", "{}", Bearer(session)).status, 200);
  web.Advance(absl::Minutes(29));  // idle restarts with each call
  ASSERT_EQ(Call(*cli, "WhoAmI", "{}", Bearer(session)).status, 200);
  web.Advance(absl::Minutes(31));
  httplib::Response res = Call(*cli, "WhoAmI", "{}", Bearer(session));
  ExpectError(res, 401, "UNAUTHENTICATED");
  EXPECT_THAT(res.body, HasSubstr("expired"));
  EXPECT_EQ(web.sessions()->size(), 0u);
}

TEST(WebServerTest, RevokedTokenEndsItsSessionsWithinAMinute) {
  web_testing::StandaloneWeb web;
  auto cli = Client(web.port());
  std::string id;
  std::string token = web.Token("vera", {"viewer"}, &id);
  std::string session =
      Parse<v1::SignInResponse>(Call(*cli, "SignIn", "{}", Bearer(token))).session();
  ASSERT_TRUE(web.identity()->RevokeApiToken(id, "admin", "left", absl::Now()).ok());
  ExpectError(Call(*cli, "WhoAmI", "{}", Bearer(token)), 401, "UNAUTHENTICATED");
  web.Advance(absl::Seconds(61));
  httplib::Response res = Call(*cli, "WhoAmI", "{}", Bearer(session));
  ExpectError(res, 401, "UNAUTHENTICATED");
  EXPECT_THAT(res.body, HasSubstr("revoked"));
  EXPECT_THAT(res.body, Not(HasSubstr(session.substr(4))));
}

TEST_F(WebApiTest, ForeignClientCertificateFailsTheHandshake) {
  // Another deployment's CA and its admin: not ours, so the TLS layer refuses it.
  static const std::string* other = new std::string(smbfleet::testing::MakeCertificates("fs09"));
  auto cli = Client(port());
  SSL_CTX* ctx = cli->ssl_context();
  ASSERT_EQ(SSL_CTX_use_certificate_chain_file(ctx, (*other + "/operator-admin.pem").c_str()), 1);
  ASSERT_EQ(
      SSL_CTX_use_PrivateKey_file(ctx, (*other + "/operator-admin.key").c_str(), SSL_FILETYPE_PEM),
      1);
  httplib::Result r = cli->Post("/api/v1/SignIn", "{}", "application/json");
  EXPECT_FALSE(r) << r->status << " " << r->body;
}

// Figures, not assertions: WhoAmI with a session over one keep-alive HTTPS connection.
TEST(WebServerTest, SessionCallLatencyFigures) {
  web_testing::StandaloneWeb web;
  auto cli = Client(web.port());
  cli->set_keep_alive(true);
  std::string token = web.Token("vera", {"viewer"});
  std::string session =
      Parse<v1::SignInResponse>(Call(*cli, "SignIn", "{}", Bearer(token))).session();
  constexpr int kCalls = 200;
  std::vector<double> ms;
  for (int i = 0; i < kCalls; ++i) {
    absl::Time start = absl::Now();
    ASSERT_EQ(Call(*cli, "WhoAmI", "{}", Bearer(session)).status, 200);
    ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"web_session_whoami\": {\"calls\": %d, \"p50_ms\": %.3f, \"p95_ms\": %.3f}}\n",
              kCalls, ms[kCalls / 2], ms[kCalls * 95 / 100]);
}

TEST(WebServerTest, NotReadyIs503) {
  web_testing::StandaloneWeb web([] { return absl::UnavailableError("database: refused"); });
  auto cli = Client(web.port());
  httplib::Result r = cli->Get("/readyz");
  ASSERT_TRUE(r);
  ExpectError(r.value(), 503, "UNAVAILABLE");
  EXPECT_THAT(r->body, HasSubstr("database: refused"));
  httplib::Result h = cli->Get("/healthz");  // alive all the same
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

}  // namespace
}  // namespace smbfleet::collector

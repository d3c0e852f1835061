#ifndef SMBFLEET_TESTS_INTEGRATION_WEB_FIXTURE_H_
#define SMBFLEET_TESTS_INTEGRATION_WEB_FIXTURE_H_

// The console's HTTPS server for tests: certificates from deploy/ca.sh, an HTTPS client that
// presents a certificate chain, and a WebServer over memory stores with a clock the test moves.

#include <openssl/ssl.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "collector/admin/admin_api.h"
#include "collector/auth/api_tokens.h"
#include "collector/auth/authenticate.h"
#include "collector/store/identity_store.h"
#include "collector/store/memory/memory_store.h"
#include "collector/web/credential_check.h"
#include "collector/web/session_store.h"
#include "collector/web/web_server.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector::web_testing {

// ca.sh dev: ca.pem, collector.pem (localhost), operator-{admin,viewer,proposer,...}.pem.
inline const std::string& Pki() {
  static const std::string* dir = new std::string(smbfleet::testing::MakeCertificates("fs01"));
  return *dir;
}

inline std::string ReadAll(const std::string& path) {
  std::string out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

// An HTTPS client of 127.0.0.1:port that checks the server against the test CA and presents
// PKI/<who>.pem (leaf and chain) when `who` is not empty.
inline std::unique_ptr<httplib::SSLClient> Client(int port, const std::string& who = "") {
  auto cli = std::make_unique<httplib::SSLClient>("localhost", port);
  cli->set_ca_cert_path((Pki() + "/ca.pem").c_str());
  cli->enable_server_certificate_verification(true);
  cli->set_connection_timeout(10);
  cli->set_read_timeout(30);
  if (!who.empty()) {
    SSL_CTX* ctx = cli->ssl_context();
    EXPECT_EQ(SSL_CTX_use_certificate_chain_file(ctx, (Pki() + "/" + who + ".pem").c_str()), 1);
    EXPECT_EQ(
        SSL_CTX_use_PrivateKey_file(ctx, (Pki() + "/" + who + ".key").c_str(), SSL_FILETYPE_PEM),
        1);
  }
  return cli;
}

inline httplib::Headers Bearer(const std::string& token) {
  return {{"Authorization", "Bearer " + token}};
}

// POST /api/v1/<rpc> with a JSON body; fails the test when no answer came.
inline httplib::Response Call(httplib::SSLClient& cli, const std::string& rpc,
                              const std::string& body = "{}", const httplib::Headers& h = {}) {
  httplib::Result r = cli.Post(("/api/v1/" + rpc).c_str(), h, body, "application/json");
  EXPECT_TRUE(r) << rpc << ": " << httplib::to_string(r.error());
  return r ? r.value() : httplib::Response();
}

// The JSON body of an answer as a message; fails the test when it is not one.
template <typename M>
M Parse(const httplib::Response& res) {
  M m;
  absl::Status s = FromJson(res.body, "answer", &m, /*ignore_unknown=*/false);
  EXPECT_TRUE(s.ok()) << s << "\n" << res.body;
  return m;
}

// A WebServer over memory stores, bearer tokens and a session store on a clock the test moves.
class StandaloneWeb {
 public:
  explicit StandaloneWeb(std::function<absl::Status()> ready = nullptr,
                         SessionOptions options = SessionOptions())
      : compliance_(&hosts_),
        identity_(NewMemoryIdentityStore()),
        tokens_(identity_.get()),
        api_(&hosts_, &compliance_, nullptr) {
    auto auth = Authenticator::Create(IssuerCertificates());
    EXPECT_TRUE(auth.ok());
    auth_ = *std::move(auth);
    auth_->set_token_verifier(&tokens_);
    api_.SetIdentity(identity_.get(), &tokens_, nullptr);
    auto clock = [this] { return absl::Now() + absl::Seconds(offset_seconds_.load()); };
    sessions_ = std::make_unique<SessionStore>(
        options, CredentialStillStands(identity_.get(), nullptr, clock), clock);
    files_ = {{"index.html", "<!doctype html><title>console</title>"},
              {"assets/app.js", "console.log('x');"},
              {"assets/app.css", "body{}"}};
    WebOptions web;
    web.listen = "127.0.0.1:0";
    web.cert_pem = ReadAll(Pki() + "/collector.pem");
    web.key_pem = ReadAll(Pki() + "/collector.key");
    web.client_ca_pem = ReadAll(Pki() + "/ca.pem");
    web.threads = 4;
    WebDeps deps;
    deps.api = &api_;
    deps.authenticator = auth_.get();
    deps.sessions = sessions_.get();
    deps.ready = std::move(ready);
    deps.files = files_;
    auto server = WebServer::Start(web, std::move(deps));
    EXPECT_TRUE(server.ok()) << server.status();
    if (server.ok()) server_ = *std::move(server);
  }

  int port() const { return server_ ? server_->port() : 0; }
  void Advance(absl::Duration d) { offset_seconds_ += absl::ToInt64Seconds(d); }
  // A bearer token (sft_...) for `name` with `roles`, valid for an hour.
  std::string Token(const std::string& name, const std::vector<std::string>& roles,
                    std::string* id = nullptr) {
    auto created = tokens_.Create(name, roles, absl::Now() + absl::Hours(1), "test");
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return "";
    if (id != nullptr) *id = created->token.id();
    return created->bearer;
  }
  IdentityStore* identity() { return identity_.get(); }
  SessionStore* sessions() { return sessions_.get(); }

 private:
  MemoryHostStore hosts_;
  MemoryComplianceStore compliance_;
  std::unique_ptr<IdentityStore> identity_;
  ApiTokens tokens_;
  AdminApi api_;
  std::unique_ptr<Authenticator> auth_;
  std::atomic<int64_t> offset_seconds_{0};
  std::unique_ptr<SessionStore> sessions_;
  std::vector<EmbeddedFile> files_;
  std::unique_ptr<WebServer> server_;
};

}  // namespace smbfleet::collector::web_testing

#endif  // SMBFLEET_TESTS_INTEGRATION_WEB_FIXTURE_H_

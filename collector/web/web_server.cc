#include "collector/web/web_server.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/json.h"
#include "common/logging.h"
#include "httplib.h"
#include "smbfleet/v1/console.pb.h"

namespace smbfleet::collector {

namespace v1 = smbfleet::v1;

namespace {

constexpr absl::string_view kJson = "application/json";
constexpr absl::string_view kAssetCache = "public, max-age=86400";

httplib::Headers SecurityHeaders() {
  return {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
       "form-action 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"Strict-Transport-Security", "max-age=31536000"},
      {"X-Frame-Options", "DENY"},
      {"Cross-Origin-Opener-Policy", "same-origin"},
      {"Cross-Origin-Resource-Policy", "same-origin"},
      {"Cache-Control", "no-store"},
  };
}

absl::string_view MimeOf(absl::string_view path) {
  struct Type {
    absl::string_view ext;
    absl::string_view mime;
  };
  static constexpr Type kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"},
  };
  for (const Type& t : kTypes) {
    if (absl::EndsWith(path, t.ext)) return t.mime;
  }
  return "application/octet-stream";
}

absl::string_view ReasonOf(int status) {
  switch (status) {
    case 400:
      return "INVALID_ARGUMENT";
    case 401:
      return "UNAUTHENTICATED";
    case 403:
      return "PERMISSION_DENIED";
    case 404:
      return "NOT_FOUND";
    case 405:
    case 415:
      return "INVALID_ARGUMENT";
    case 409:
      return "FAILED_PRECONDITION";
    case 413:
    case 429:
      return "RESOURCE_EXHAUSTED";
    case 501:
      return "UNIMPLEMENTED";
    case 503:
      return "UNAVAILABLE";
    default:
      return "INTERNAL";
  }
}

void SetHeader(httplib::Response& res, const std::string& name, const std::string& value) {
  res.headers.erase(name);
  res.set_header(name, value);
}

void SendError(httplib::Response& res, int status, absl::string_view code,
               absl::string_view message) {
  v1::ErrorResponse error;
  error.set_code(std::string(code));
  error.set_message(std::string(message));
  absl::StatusOr<std::string> body = ToJson(error, /*pretty=*/false);
  res.status = status;
  res.set_content(body.ok() ? *body : std::string(R"({"code":"INTERNAL"})"), std::string(kJson));
  if (status == 401) SetHeader(res, "WWW-Authenticate", "Bearer");
}

void SendStatus(httplib::Response& res, const absl::Status& status) {
  SendError(res, HttpStatusOf(status.code()), absl::StatusCodeToString(status.code()),
            status.message());
}

bool IsJsonContentType(absl::string_view value) {
  absl::string_view media = value.substr(0, value.find(';'));
  return absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(media), kJson);
}

// The client certificate the TLS layer verified against the CA bundle, as PEM; empty if none.
std::string PeerCertificatePem(const httplib::Request& req) {
  if (req.ssl == nullptr) return "";
  X509* cert = SSL_get1_peer_certificate(req.ssl);
  if (cert == nullptr) return "";
  std::string pem;
  if (SSL_get_verify_result(req.ssl) == X509_V_OK) {
    BIO* bio = BIO_new(BIO_s_mem());
    if (bio != nullptr && PEM_write_bio_X509(bio, cert) == 1) {
      char* data = nullptr;
      long len = BIO_get_mem_data(bio, &data);
      if (len > 0) pem.assign(data, static_cast<size_t>(len));
    }
    BIO_free(bio);
  }
  X509_free(cert);
  return pem;
}

// Every PEM certificate of `pem`, in order; empty when none parses.
std::vector<X509*> ReadCertificates(const std::string& pem) {
  std::vector<X509*> certs;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return certs;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) certs.push_back(cert);
  BIO_free(bio);
  return certs;
}

// TLS 1.2 and up, the server's certificate and key, and a client certificate asked for (not
// required) and verified against the client CA bundle.
bool SetUpTls(SSL_CTX& ctx, const WebOptions& options, std::string* error) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  std::vector<X509*> chain = ReadCertificates(options.cert_pem);
  if (chain.empty()) {
    *error = "console: the server certificate is not PEM";
    return false;
  }
  bool ok = SSL_CTX_use_certificate(&ctx, chain[0]) == 1;
  X509_free(chain[0]);
  for (size_t i = 1; i < chain.size(); ++i) {
    // add0: the context takes the certificate.
    if (ok && SSL_CTX_add0_chain_cert(&ctx, chain[i]) == 1) continue;
    X509_free(chain[i]);
  }
  if (!ok) {
    *error = "console: the server certificate cannot be used";
    return false;
  }
  BIO* bio = BIO_new_mem_buf(options.key_pem.data(), static_cast<int>(options.key_pem.size()));
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  if (key == nullptr) {
    *error = "console: the server key is not a PEM private key";
    return false;
  }
  ok = SSL_CTX_use_PrivateKey(&ctx, key) == 1 && SSL_CTX_check_private_key(&ctx) == 1;
  EVP_PKEY_free(key);
  if (!ok) {
    *error = "console: the server key does not match its certificate";
    return false;
  }
  std::vector<X509*> cas = ReadCertificates(options.client_ca_pem);
  X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
  for (X509* ca : cas) {
    X509_STORE_add_cert(store, ca);
    SSL_CTX_add_client_CA(&ctx, ca);
    X509_free(ca);
  }
  if (!cas.empty()) {
    // Asked for, not required: people with a token sign in without one. A certificate that
    // does not verify fails the handshake.
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
    static constexpr unsigned char kContext[] = "smbfleet-console";
    SSL_CTX_set_session_id_context(&ctx, kContext, sizeof(kContext) - 1);
  }
  return true;
}

}  // namespace

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

class WebServer::Handlers {
 public:
  Handlers(const WebDeps& deps, const ApiRoutes& routes) : deps_(deps), routes_(routes) {}

  void Install(httplib::Server& server) {
    server.set_default_headers(SecurityHeaders());
    // Answers the library makes itself (413, 400 for a malformed request) get the JSON body.
    server.set_error_handler(
        httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          absl::string_view message = res.status == 413   ? "request body too large"
                                      : res.status == 404 ? "not found"
                                                          : "request refused";
          SendError(res, res.status, ReasonOf(res.status), message);
          return httplib::Server::HandlerResponse::Handled;
        }));
    server.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
          SendError(res, 500, "INTERNAL", "internal error");
        });
    server.Post(R"(/api/v1/([A-Za-z0-9]+))",
                [this](const httplib::Request& req, httplib::Response& res) { Api(req, res); });
    server.Post(".*", [](const httplib::Request& req, httplib::Response& res) {
      SendError(res, 404, "NOT_FOUND", "no such API path: POST /api/v1/<Rpc>");
    });
    server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain; charset=utf-8");
    });
    server.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) { Ready(res); });
    server.Get("/metrics",
               [this](const httplib::Request&, httplib::Response& res) { Metrics(res); });
    server.Get(R"(/api(/.*)?)", [](const httplib::Request&, httplib::Response& res) {
      SetHeader(res, "Allow", "POST");
      SendError(res, 405, "INVALID_ARGUMENT", "API calls are POST /api/v1/<Rpc>");
    });
    server.Get(".*",
               [this](const httplib::Request& req, httplib::Response& res) { Static(req, res); });
    auto refuse = [](const httplib::Request&, httplib::Response& res) {
      SetHeader(res, "Allow", "GET, HEAD, POST");
      SendError(res, 405, "INVALID_ARGUMENT", "method not allowed");
    };
    server.Put(".*", refuse);
    server.Patch(".*", refuse);
    server.Delete(".*", refuse);
    server.Options(".*", refuse);
  }

 private:
  void Api(const httplib::Request& req, httplib::Response& res) {
    const std::string rpc = req.matches[1];
    if (!IsJsonContentType(req.get_header_value("Content-Type"))) {
      SendError(res, 415, "INVALID_ARGUMENT",
                "Content-Type: API calls take application/json (protobuf JSON)");
      return;
    }
    if (rpc == "SignIn") return SignIn(req, res);
    if (rpc == "SignOut") return SignOut(req, res);
    const ApiRoute* route = routes_.Find(rpc);
    if (route == nullptr) {
      SendError(res, 404, "NOT_FOUND", absl::StrCat("no API call named ", rpc));
      return;
    }
    absl::StatusOr<Principal> caller = Caller(req);
    if (!caller.ok()) return SendStatus(res, caller.status());
    absl::StatusOr<std::string> out = route->call(*caller, req.body);
    if (!out.ok()) {
      if (HttpStatusOf(out.status().code()) >= 500) {
        Logger("web")->warn("{} by {}: {}", rpc, LogSafe(caller->name), LogSafe(out.status()));
      }
      return SendStatus(res, out.status());
    }
    res.set_content(*out, std::string(kJson));
  }

  // The session, the API token or the client certificate of the call, in that order: the
  // Authorization header, when present, decides (a browser may send a certificate anyway).
  absl::StatusOr<Principal> Caller(const httplib::Request& req, bool allow_session = true) {
    std::string authorization = req.get_header_value("Authorization");
    if (!authorization.empty()) {
      absl::string_view value = authorization;
      if (absl::ConsumePrefix(&value, "Bearer sfs_") ||
          absl::ConsumePrefix(&value, "bearer sfs_")) {
        if (!allow_session) {
          return absl::UnauthenticatedError(
              "sign in with an API token or a client certificate, not a session");
        }
        return deps_.sessions->Resolve(absl::StrCat("sfs_", absl::StripAsciiWhitespace(value)));
      }
      return deps_.authenticator->FromAuthorization(authorization);
    }
    std::string pem = PeerCertificatePem(req);
    if (!pem.empty()) return deps_.authenticator->FromCertificate(pem);
    return absl::UnauthenticatedError(
        "no credential: sign in (POST /api/v1/SignIn) with an API token or a client certificate");
  }

  void SignIn(const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Principal> who = Caller(req, /*allow_session=*/false);
    if (!who.ok()) return SendStatus(res, who.status());
    if (who->kind != PrincipalKind::kOperator) {
      return SendError(res, 403, "PERMISSION_DENIED",
                       absl::StrCat(who->name, " is not a person (", who->kind_text,
                                    "): only operators sign in to the console"));
    }
    absl::StatusOr<v1::WhoAmIResponse> me = deps_.api->WhoAmI(*who, v1::WhoAmIRequest());
    if (!me.ok()) return SendStatus(res, me.status());
    absl::StatusOr<SessionStore::Created> session = deps_.sessions->Create(*who);
    if (!session.ok()) return SendStatus(res, session.status());
    v1::SignInResponse out;
    out.set_session(session->id);
    out.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(session->expires_at));
    out.set_idle_timeout_seconds(
        static_cast<int32_t>(absl::ToInt64Seconds(deps_.sessions->options().idle)));
    *out.mutable_who() = *std::move(me);
    absl::StatusOr<std::string> body = ToJson(out, /*pretty=*/false);
    if (!body.ok()) return SendStatus(res, body.status());
    Logger("web")->info("console sign-in: {} by {}", LogSafe(who->name),
                        who->token_id.empty() ? absl::StrCat("certificate ", who->fingerprint)
                                              : absl::StrCat("token ", who->token_id));
    res.set_content(*body, std::string(kJson));
  }

  void SignOut(const httplib::Request& req, httplib::Response& res) {
    const std::string authorization = req.get_header_value("Authorization");
    absl::string_view id = authorization;
    if (!absl::ConsumePrefix(&id, "Bearer ") || !deps_.sessions->End(id)) {
      return SendError(res, 401, "UNAUTHENTICATED", "SignOut: no live session in Authorization");
    }
    res.set_content("{}", std::string(kJson));
  }

  void Ready(httplib::Response& res) {
    absl::Status ready = deps_.ready ? deps_.ready() : absl::OkStatus();
    if (!ready.ok()) {
      return SendError(res, 503, "UNAVAILABLE", absl::StrCat("not ready: ", ready.message()));
    }
    res.set_content("ready\n", "text/plain; charset=utf-8");
  }

  void Metrics(httplib::Response& res) {
    if (!deps_.metrics) {
      return SendError(res, 404, "NOT_FOUND", "this collector exports no metrics");
    }
    res.set_content(deps_.metrics(), "text/plain; version=0.0.4; charset=utf-8");
  }

  const EmbeddedFile* FindFile(absl::string_view path) const {
    for (const EmbeddedFile& f : deps_.files) {
      if (f.path == path) return &f;
    }
    return nullptr;
  }

  // Assets by name (cached); any other GET is the single-page app's index.html (no-store), so
  // that a shared link (/hosts/fs01) opens its view.
  void Static(const httplib::Request& req, httplib::Response& res) {
    absl::string_view path = req.path;
    absl::ConsumePrefix(&path, "/");
    const EmbeddedFile* file = FindFile(path);
    if (absl::StartsWith(path, "assets/")) {
      if (file == nullptr) return SendError(res, 404, "NOT_FOUND", "no such asset");
      SetHeader(res, "Cache-Control", std::string(kAssetCache));
    } else if (file == nullptr) {
      file = FindFile("index.html");
      if (file == nullptr) return SendError(res, 404, "NOT_FOUND", "no console in this build");
    }
    res.set_content(std::string(file->content), std::string(MimeOf(file->path)));
  }

  const WebDeps& deps_;
  const ApiRoutes& routes_;
};

WebServer::WebServer(WebDeps deps)
    : deps_(std::move(deps)), routes_(deps_.api, deps_.approver_sets) {
  if (deps_.files.empty()) deps_.files = ConsoleFiles();
}

absl::StatusOr<std::unique_ptr<WebServer>> WebServer::Start(const WebOptions& options,
                                                            WebDeps deps) {
  if (deps.api == nullptr || deps.authenticator == nullptr || deps.sessions == nullptr) {
    return absl::InvalidArgumentError(
        "console: the web server needs the API, an authenticator "
        "and a session store");
  }
  size_t colon = options.listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(options.listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("console.listen: '", options.listen, "' is not host:port"));
  }
  std::string host = options.listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::unique_ptr<WebServer> web(new WebServer(std::move(deps)));
  std::string error;
  web->server_ = std::make_unique<httplib::SSLServer>(
      [&](SSL_CTX& ctx) { return SetUpTls(ctx, options, &error); });
  if (!web->server_->is_valid()) {
    return absl::InvalidArgumentError(error.empty() ? "console: cannot set up TLS" : error);
  }
  httplib::SSLServer& server = *web->server_;
  const size_t threads = options.threads == 0 ? 1 : options.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_read_timeout(absl::ToChronoSeconds(options.read_timeout));
  server.set_write_timeout(absl::ToChronoSeconds(options.write_timeout));
  server.set_keep_alive_timeout(5);
  server.set_payload_max_length(options.max_body_bytes);
  web->handlers_ = std::make_unique<Handlers>(web->deps_, web->routes_);
  web->handlers_->Install(server);

  if (port == 0) {
    web->port_ = server.bind_to_any_port(host);
  } else if (server.bind_to_port(host, port)) {
    web->port_ = port;
  }
  if (web->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("console: cannot listen on ", options.listen));
  }
  web->thread_ = std::thread([&server] { server.listen_after_bind(); });
  // stop() is a no-op until the loop runs: wait for it, so that Stop() always ends it.
  for (int waited = 0; !server.is_running(); ++waited) {
    if (waited == 5'000) {
      web->thread_.detach();
      return absl::UnavailableError(absl::StrCat("console: not serving on ", options.listen));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Logger("web")->info("console on https://{}:{}/", host, web->port_);
  return web;
}

void WebServer::Stop() {
  if (server_ && thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

WebServer::~WebServer() { Stop(); }

}  // namespace smbfleet::collector

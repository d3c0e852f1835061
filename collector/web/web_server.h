#ifndef SMBFLEET_COLLECTOR_WEB_WEB_SERVER_H_
#define SMBFLEET_COLLECTOR_WEB_WEB_SERVER_H_

// The console's HTTPS server (docs/console.md): the AdminService as protobuf JSON under
// POST /api/v1/<Rpc>, SignIn/SignOut sessions, /healthz, /readyz, /metrics and the embedded
// front end. HTTP adapter only: every call is AdminApi's, which authorizes it.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collector/admin/admin_api.h"
#include "collector/auth/authenticate.h"
#include "collector/trust/approver_sets.h"
#include "collector/web/api_routes.h"
#include "collector/web/console_files.h"
#include "collector/web/session_store.h"

namespace httplib {
class SSLServer;
}

namespace smbfleet::collector {

struct WebOptions {
  std::string listen = "127.0.0.1:8443";  // host:port; port 0 picks a free one
  std::string cert_pem;                   // server certificate chain
  std::string key_pem;
  // CAs a client certificate is verified against; one is asked for but not required.
  std::string client_ca_pem;
  size_t threads = 8;  // connections served at once
  absl::Duration read_timeout = absl::Seconds(30);
  absl::Duration write_timeout = absl::Seconds(30);
  size_t max_body_bytes = 1 << 20;  // larger: 413
};

struct WebDeps {
  AdminApi* api = nullptr;                       // required
  ApproverSets* approver_sets = nullptr;         // may be null
  const Authenticator* authenticator = nullptr;  // required
  SessionStore* sessions = nullptr;              // required
  // GET /readyz: OK, or why not (503). Null: ready.
  std::function<absl::Status()> ready;
  // GET /metrics: the Prometheus text. Null: 404.
  std::function<std::string()> metrics;
  // Null: ConsoleFiles().
  absl::Span<const EmbeddedFile> files;
};

class WebServer {
 public:
  // Listening when it returns. INVALID_ARGUMENT naming a bad listen address, certificate or
  // key; UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<WebServer>> Start(const WebOptions& options, WebDeps deps);
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  int port() const { return port_; }
  void Stop();

 private:
  WebServer(WebDeps deps);
  class Handlers;

  WebDeps deps_;
  ApiRoutes routes_;
  std::unique_ptr<Handlers> handlers_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
};

// The HTTP status of a gRPC/absl code, as the console's contract says.
int HttpStatusOf(absl::StatusCode code);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_WEB_WEB_SERVER_H_

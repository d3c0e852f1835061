#ifndef SMBFLEET_COMMON_TLS_H_
#define SMBFLEET_COMMON_TLS_H_

// Mutual TLS material for agents, tools and the collector, and the identity a peer's
// certificate carries. Identity always comes from the certificate, never from a request.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tls_files.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"

namespace smbfleet {

struct TlsMaterial {
  std::string cert_pem;
  std::string key_pem;
  std::string ca_pem;
};

// Reads and sanity-checks the three files (present, PEM, key matches certificate); errors
// name the file. The key itself is never logged.
absl::StatusOr<TlsMaterial> LoadTls(const TlsFiles& files);

// Server credentials that ask for a client certificate and verify it when presented; a
// connection without one reaches the call as an anonymous caller.
std::shared_ptr<grpc::ServerCredentials> MutualTlsServerCredentials(const TlsMaterial& m);
std::shared_ptr<grpc::ChannelCredentials> MutualTlsChannelCredentials(const TlsMaterial& m);

// As MutualTlsServerCredentials, from the files themselves, re-read every `refresh`: a renewed
// certificate, key or CA bundle is served without a restart (a certificate and key that do not
// match yet, mid-rotation, are skipped until they do). TLS 1.2 at least, 1.3 preferred (gRPC's
// defaults; tests/integration/tls_reload_test.cc shows both).
std::shared_ptr<grpc::ServerCredentials> ReloadingMutualTlsServerCredentials(
    const TlsFiles& files, std::chrono::seconds refresh);

// What a certificate says about its holder. kind is the first OU ("agent", "operator", ...).
struct PeerIdentity {
  std::string common_name;  // as written in the certificate
  std::string kind;
  std::string role;  // second OU for people ("viewer", "proposer", "approver", "admin")
  std::vector<std::string> roles = {};  // every OU after the kind: one person, several roles
  // Who the holder is: the first DNS subjectAltName, else the CN, in lower case (host names
  // and user names compare case-insensitively: FS01 is fs01). Empty in an identity built by
  // hand: then the CN in lower case stands for it.
  std::string name = {};
  std::string serial = {};       // lower-case hex, no leading zeros ("1a2b")
  std::string fingerprint = {};  // SHA-256 of the DER certificate, lower-case hex
  int64_t not_before_unix = 0;
  int64_t not_after_unix = 0;
};

absl::StatusOr<PeerIdentity> IdentityFromPem(const std::string& pem);
absl::StatusOr<PeerIdentity> PeerIdentityOf(const grpc::ServerContextBase& context);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_TLS_H_

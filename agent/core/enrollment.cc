#include "agent/core/enrollment.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agent/core/transport.h"
#include "common/csr.h"
#include "common/files.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/tls.h"
#include "common/version.h"
#include "grpcpp/grpcpp.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::agent {
namespace {

constexpr size_t kMaxTokenFile = 4096;
constexpr int kCertMode = 0644;

std::shared_ptr<grpc::Channel> EnrollmentChannel(const AgentConfig& config,
                                                 const std::string& ca_pem,
                                                 const std::string& cert_pem,
                                                 const std::string& key_pem) {
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = ca_pem;  // the fleet CA, pinned: never the system's roots
  opts.pem_cert_chain = cert_pem;
  opts.pem_private_key = key_pem;
  grpc::ChannelArguments args;
  if (!config.collector_server_name.empty()) {
    args.SetSslTargetNameOverride(config.collector_server_name);
  }
  args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, absl::StrCat("smbfleet-agent/", kVersion));
  return grpc::CreateCustomChannel(config.collector_address, grpc::SslCredentials(opts), args);
}

absl::Status WriteKeyAndCert(const AgentConfig& config, const KeyAndCsr& key,
                             const std::string& cert_pem) {
  for (const std::string* path : {&config.tls.key, &config.tls.cert}) {
#ifdef _WIN32
    const size_t slash = path->find_last_of("/\\");
#else
    const size_t slash = path->rfind('/');
#endif
    if (slash != std::string::npos && slash > 0) {
      RETURN_IF_ERROR(MakeDirs(path->substr(0, slash), 0700));
    }
  }
  // The key first, so that a certificate on disk always has its key next to it.
  RETURN_IF_ERROR(WritePrivateFileAtomic(config.tls.key, key.key_pem));
  return WriteFileAtomic(config.tls.cert, cert_pem, kCertMode);
}

// What tls.cert holds: the certificate, then the issuing CA's chain, so that a collector that
// trusts only the fleet's root still verifies it (the issuing CA may be an intermediate).
std::string CertificateWithChain(const std::string& cert_pem, const std::string& chain_pem) {
  std::string out = cert_pem;
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + chain_pem;
}

std::unique_ptr<grpc::ClientContext> Context(const AgentConfig& config) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + config.report_timeout);
  return ctx;
}

}  // namespace

bool NeedsEnrollment(const AgentConfig& config) {
  return !config.enroll.token_file.empty() && !FileExists(config.tls.cert);
}

absl::StatusOr<std::string> EnrollNow(const AgentConfig& config) {
  if (config.enroll.token_file.empty()) {
    return absl::FailedPreconditionError("enroll.token_file: not set; nothing to enroll with");
  }
  const std::string host = absl::AsciiStrToLower(config.enroll.host);
  RETURN_IF_ERROR(CheckHostName(host, "enroll.host"));
  absl::StatusOr<std::string> token = ReadFile(config.enroll.token_file, kMaxTokenFile);
  if (!token.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("enroll.token_file: cannot read ", config.enroll.token_file));
  }
  ASSIGN_OR_RETURN(std::string ca_pem, ReadFile(config.tls.ca, 1 << 20));
  ASSIGN_OR_RETURN(KeyAndCsr key, GenerateKeyAndCsr(host));

  smbfleet::v1::EnrollRequest request;
  request.set_token(std::string(absl::StripAsciiWhitespace(*token)));
  request.set_csr_pem(key.csr_pem);
  smbfleet::v1::EnrollResponse response;
  auto stub = smbfleet::v1::EnrollmentService::NewStub(EnrollmentChannel(config, ca_pem, "", ""));
  auto ctx = Context(config);
  // The collector's errors never quote the token; ours name the file, not its content.
  RETURN_IF_ERROR(FromGrpcStatus(stub->Enroll(ctx.get(), request, &response), "enrolling"));
  ASSIGN_OR_RETURN(PeerIdentity id, IdentityFromPem(response.certificate_pem()));
  if (id.name != host) {
    return absl::InternalError(absl::StrCat("the collector issued a certificate for '", id.name,
                                            "', not for '", host, "'"));
  }
  RETURN_IF_ERROR(WriteKeyAndCert(
      config, key, CertificateWithChain(response.certificate_pem(), response.ca_chain_pem())));
  Logger("agent")->info("enrolled as {}: certificate {} valid until {}", host, id.serial,
                        absl::FormatTime(absl::FromUnixSeconds(id.not_after_unix)));
  return host;
}

absl::StatusOr<absl::Time> RenewalDue(const AgentConfig& config) {
  ASSIGN_OR_RETURN(std::string pem, ReadFile(config.tls.cert, 1 << 20));
  ASSIGN_OR_RETURN(PeerIdentity id, IdentityFromPem(pem));
  const int64_t lifetime = id.not_after_unix - id.not_before_unix;
  return absl::FromUnixSeconds(id.not_before_unix + lifetime * 2 / 3);
}

absl::StatusOr<absl::Time> RenewNow(const AgentConfig& config) {
  ASSIGN_OR_RETURN(std::string ca_pem, ReadFile(config.tls.ca, 1 << 20));
  ASSIGN_OR_RETURN(std::string cert_pem, ReadFile(config.tls.cert, 1 << 20));
  ASSIGN_OR_RETURN(std::string key_pem, ReadFile(config.tls.key, 1 << 20));
  ASSIGN_OR_RETURN(PeerIdentity id, IdentityFromPem(cert_pem));
  ASSIGN_OR_RETURN(KeyAndCsr key, GenerateKeyAndCsr(id.name));
  smbfleet::v1::RenewCertificateRequest request;
  request.set_csr_pem(key.csr_pem);
  smbfleet::v1::RenewCertificateResponse response;
  auto stub = smbfleet::v1::EnrollmentService::NewStub(
      EnrollmentChannel(config, ca_pem, cert_pem, key_pem));
  auto ctx = Context(config);
  RETURN_IF_ERROR(FromGrpcStatus(stub->RenewCertificate(ctx.get(), request, &response),
                                 "renewing the certificate"));
  ASSIGN_OR_RETURN(PeerIdentity renewed, IdentityFromPem(response.certificate_pem()));
  if (renewed.name != id.name) {
    return absl::InternalError(
        absl::StrCat("the collector renewed for '", renewed.name, "', not for '", id.name, "'"));
  }
  RETURN_IF_ERROR(WriteKeyAndCert(
      config, key, CertificateWithChain(response.certificate_pem(), response.ca_chain_pem())));
  Logger("agent")->info("renewed the certificate of {}: {} valid until {}", id.name, renewed.serial,
                        absl::FormatTime(absl::FromUnixSeconds(renewed.not_after_unix)));
  return absl::FromUnixSeconds(renewed.not_after_unix);
}

}  // namespace smbfleet::agent

#include "common/tls.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace smbfleet {
namespace {

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<X509, X509Deleter> ParseCert(const std::string& pem) {
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return nullptr;
  return std::unique_ptr<X509, X509Deleter>(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

std::vector<std::string> NameEntries(X509_NAME* name, int nid) {
  std::vector<std::string> out;
  int idx = -1;
  while ((idx = X509_NAME_get_index_by_NID(name, nid, idx)) >= 0) {
    X509_NAME_ENTRY* e = X509_NAME_get_entry(name, idx);
    ASN1_STRING* data = X509_NAME_ENTRY_get_data(e);
    unsigned char* utf8 = nullptr;
    int len = ASN1_STRING_to_UTF8(&utf8, data);
    if (len >= 0) {
      out.emplace_back(reinterpret_cast<char*>(utf8), static_cast<size_t>(len));
      OPENSSL_free(utf8);
    }
  }
  return out;
}

// The first DNS subjectAltName, or "" when there is none.
std::string FirstDnsSan(X509* cert) {
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return "";
  std::string out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names) && out.empty(); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type != GEN_DNS) continue;
    const ASN1_STRING* s = n->d.dNSName;
    out.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
               static_cast<size_t>(ASN1_STRING_length(s)));
  }
  GENERAL_NAMES_free(names);
  return out;
}

std::string SerialHex(X509* cert) {
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  if (bn == nullptr) return "";
  char* hex = BN_bn2hex(bn);
  std::string out = hex == nullptr ? "" : absl::AsciiStrToLower(hex);
  OPENSSL_free(hex);
  BN_free(bn);
  if (out == "0") return out;
  size_t first = out.find_first_not_of('0');
  return first == std::string::npos ? out : out.substr(first);
}

std::string Sha256Fingerprint(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (X509_digest(cert, EVP_sha256(), md, &len) != 1) return "";
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(md), static_cast<size_t>(len)));
}

int64_t UnixTime(const ASN1_TIME* t) {
  struct tm tm = {};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
  // absl rather than timegm, which Windows does not have.
  return absl::ToUnixSeconds(absl::FromTM(tm, absl::UTCTimeZone()));
}

}  // namespace

absl::StatusOr<TlsMaterial> LoadTls(const TlsFiles& files) {
  TlsMaterial m;
  ASSIGN_OR_RETURN(m.cert_pem, ReadFile(files.cert, 1 << 20));
  ASSIGN_OR_RETURN(m.key_pem, ReadFile(files.key, 1 << 20));
  ASSIGN_OR_RETURN(m.ca_pem, ReadFile(files.ca, 4 << 20));

  auto x509 = ParseCert(m.cert_pem);
  if (!x509) {
    return absl::InvalidArgumentError(absl::StrCat(files.cert, ": not a PEM certificate"));
  }
  if (!ParseCert(m.ca_pem)) {
    return absl::InvalidArgumentError(absl::StrCat(files.ca, ": not a PEM CA certificate"));
  }
  std::unique_ptr<BIO, BioDeleter> bio(
      BIO_new_mem_buf(m.key_pem.data(), static_cast<int>(m.key_pem.size())));
  std::unique_ptr<EVP_PKEY, PkeyDeleter> pkey(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!pkey) {
    return absl::InvalidArgumentError(
        absl::StrCat(files.key, ": not an unencrypted PEM private key"));
  }
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(files.key, ": private key does not match the certificate in ", files.cert));
  }
  return m;
}

std::shared_ptr<grpc::ServerCredentials> MutualTlsServerCredentials(const TlsMaterial& m) {
  // A client certificate is asked for and, when presented, verified against the CA; a caller
  // without one (an agent enrolling, a person with a bearer token) is let through the handshake
  // and each call decides (collector/auth: only enrollment is open to it).
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = m.ca_pem;
  options.pem_key_cert_pairs.push_back({m.key_pem, m.cert_pem});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ServerCredentials> ReloadingMutualTlsServerCredentials(
    const TlsFiles& files, std::chrono::seconds refresh) {
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key, files.cert, files.ca, static_cast<unsigned int>(refresh.count()));
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  // As MutualTlsServerCredentials: asked for, verified when presented, not required.
  options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  return grpc::experimental::TlsServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> MutualTlsChannelCredentials(const TlsMaterial& m) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = m.ca_pem;
  options.pem_private_key = m.key_pem;
  options.pem_cert_chain = m.cert_pem;
  return grpc::SslCredentials(options);
}

absl::StatusOr<PeerIdentity> IdentityFromPem(const std::string& pem) {
  auto x509 = ParseCert(pem);
  if (!x509) return absl::UnauthenticatedError("peer certificate cannot be parsed");
  X509_NAME* subject = X509_get_subject_name(x509.get());
  PeerIdentity id;
  auto cns = NameEntries(subject, NID_commonName);
  if (cns.empty() || cns[0].empty()) {
    return absl::UnauthenticatedError("peer certificate has no common name");
  }
  id.common_name = cns[0];
  std::string san = FirstDnsSan(x509.get());
  id.name = absl::AsciiStrToLower(san.empty() ? id.common_name : san);
  id.serial = SerialHex(x509.get());
  id.fingerprint = Sha256Fingerprint(x509.get());
  id.not_before_unix = UnixTime(X509_get0_notBefore(x509.get()));
  id.not_after_unix = UnixTime(X509_get0_notAfter(x509.get()));
  auto ous = NameEntries(subject, NID_organizationalUnitName);
  if (!ous.empty()) id.kind = ous[0];
  if (ous.size() > 1) id.role = ous[1];
  if (ous.size() > 1) id.roles.assign(ous.begin() + 1, ous.end());
  return id;
}

absl::StatusOr<PeerIdentity> PeerIdentityOf(const grpc::ServerContextBase& context) {
  auto auth = context.auth_context();
  if (!auth || !auth->IsPeerAuthenticated()) {
    return absl::UnauthenticatedError("no verified client certificate");
  }
  auto pems = auth->FindPropertyValues("x509_pem_cert");
  if (pems.empty()) return absl::UnauthenticatedError("no client certificate presented");
  return IdentityFromPem(std::string(pems[0].data(), pems[0].size()));
}

}  // namespace smbfleet

#include "common/tls.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "grpcpp/security/auth_context.h"

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
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = m.ca_pem;
  options.pem_key_cert_pairs.push_back({m.key_pem, m.cert_pem});
  return grpc::SslServerCredentials(options);
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

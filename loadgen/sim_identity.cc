#include "loadgen/sim_identity.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/csr.h"

namespace smbfleet::loadgen {
namespace {

constexpr long kValiditySeconds = 7L * 24 * 3600;  // NOLINT(google-runtime-int): OpenSSL's type
constexpr long kBackdateSeconds = 3600;            // NOLINT(google-runtime-int): clock skew

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct ExtFree {
  void operator()(X509_EXTENSION* e) const { X509_EXTENSION_free(e); }
};
struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};

using Bio = std::unique_ptr<BIO, BioFree>;

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);  // NOLINT(google-runtime-int): OpenSSL's type
  return {data, static_cast<size_t>(len)};
}

Bio ReadBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

bool AddExtension(X509* cert, X509V3_CTX* ctx, int nid, const std::string& value) {
  std::unique_ptr<X509_EXTENSION, ExtFree> ext(
      X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str()));
  return ext != nullptr && X509_add_ext(cert, ext.get(), -1) == 1;
}

}  // namespace

struct AgentIssuer::Impl {
  std::string ca_cert_pem;
  std::string trust_pem;
  std::unique_ptr<X509, X509Free> ca_cert;
  std::unique_ptr<EVP_PKEY, PkeyFree> ca_key;
};

AgentIssuer::AgentIssuer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentIssuer::~AgentIssuer() = default;

absl::StatusOr<std::unique_ptr<AgentIssuer>> AgentIssuer::Create(std::string ca_cert_pem,
                                                                 const std::string& ca_key_pem,
                                                                 std::string trust_pem) {
  auto impl = std::make_unique<Impl>();
  Bio cert_bio = ReadBio(ca_cert_pem);
  impl->ca_cert.reset(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (impl->ca_cert == nullptr) {
    return absl::InvalidArgumentError("issuing CA certificate: not a PEM certificate");
  }
  Bio key_bio = ReadBio(ca_key_pem);
  impl->ca_key.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (impl->ca_key == nullptr) {
    return absl::InvalidArgumentError("issuing CA key: not a PEM private key");
  }
  if (X509_check_private_key(impl->ca_cert.get(), impl->ca_key.get()) != 1) {
    return absl::InvalidArgumentError("issuing CA key does not match its certificate");
  }
  impl->ca_cert_pem = std::move(ca_cert_pem);
  impl->trust_pem = std::move(trust_pem);
  return std::unique_ptr<AgentIssuer>(new AgentIssuer(std::move(impl)));
}

absl::StatusOr<TlsMaterial> AgentIssuer::Issue(absl::string_view host) const {
  if (absl::Status s = CheckHostName(host, "simulated agent"); !s.ok()) return s;
  const std::string name(host);
  std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_EC_gen("P-256"));
  std::unique_ptr<X509, X509Free> cert(X509_new());
  if (key == nullptr || cert == nullptr) return absl::InternalError("cannot make a key");
  unsigned char serial_bytes[16];
  if (RAND_bytes(serial_bytes, sizeof(serial_bytes)) != 1) {
    return absl::InternalError("no randomness for a serial number");
  }
  serial_bytes[0] &= 0x7f;  // a positive INTEGER
  std::unique_ptr<BIGNUM, BnFree> serial(BN_bin2bn(serial_bytes, sizeof(serial_bytes), nullptr));
  X509_NAME* subject = X509_get_subject_name(cert.get());
  auto add_entry = [subject](const char* field, const std::string& value) {
    return X509_NAME_add_entry_by_txt(subject, field, MBSTRING_UTF8,
                                      reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                      0) == 1;
  };
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, impl_->ca_cert.get(), cert.get(), nullptr, nullptr, 0);
  const bool ok =
      serial != nullptr && X509_set_version(cert.get(), 2) == 1 &&
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr &&
      X509_set_issuer_name(cert.get(), X509_get_subject_name(impl_->ca_cert.get())) == 1 &&
      add_entry("O", "smbfleet") && add_entry("OU", "agent") && add_entry("CN", name) &&
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kBackdateSeconds) != nullptr &&
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), kValiditySeconds) != nullptr &&
      X509_set_pubkey(cert.get(), key.get()) == 1 &&
      AddExtension(cert.get(), &ctx, NID_basic_constraints, "CA:FALSE") &&
      AddExtension(cert.get(), &ctx, NID_key_usage, "critical,digitalSignature") &&
      AddExtension(cert.get(), &ctx, NID_ext_key_usage, "clientAuth") &&
      AddExtension(cert.get(), &ctx, NID_subject_alt_name, absl::StrCat("DNS:", name)) &&
      AddExtension(cert.get(), &ctx, NID_authority_key_identifier, "keyid") &&
      X509_sign(cert.get(), impl_->ca_key.get(), EVP_sha256()) > 0;
  if (!ok) return absl::InternalError(absl::StrCat("cannot issue a certificate for ", name));
  Bio cert_out(BIO_new(BIO_s_mem()));
  Bio key_out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cert_out.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return absl::InternalError("cannot encode the certificate or key as PEM");
  }
  // As ca.sh writes a client certificate: the issuing CA after it, so the root alone verifies it.
  return TlsMaterial{BioText(cert_out.get()) + impl_->ca_cert_pem, BioText(key_out.get()),
                     impl_->trust_pem};
}

}  // namespace smbfleet::loadgen

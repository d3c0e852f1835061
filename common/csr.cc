#include "common/csr.h"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace smbfleet {
namespace {

constexpr size_t kMaxHostName = 253;
constexpr size_t kMaxLabel = 63;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct ReqFree {
  void operator()(X509_REQ* r) const { X509_REQ_free(r); }
};

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);  // NOLINT(google-runtime-int): OpenSSL's type
  return {data, static_cast<size_t>(len)};
}

}  // namespace

absl::Status CheckHostName(absl::string_view host, absl::string_view what) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": '", absl::CEscape(host.substr(0, 80)),
                                                   "' is not a host name (", why, ")"));
  };
  if (host.empty() || host.size() > kMaxHostName) return bad("1 to 253 characters");
  for (absl::string_view label : absl::StrSplit(host, '.')) {
    if (label.empty() || label.size() > kMaxLabel) return bad("each label 1 to 63 characters");
    if (label.front() == '-' || label.back() == '-') return bad("a label starts or ends with '-'");
    for (char ch : label) {
      const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
      if (!ok) return bad("lower-case letters, digits, '-' and '.' only");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<KeyAndCsr> GenerateKeyAndCsr(absl::string_view host) {
  if (absl::Status s = CheckHostName(host, "host"); !s.ok()) return s;
  std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_EC_gen("P-256"));
  if (key == nullptr) return absl::InternalError("cannot generate an EC P-256 key");
  std::unique_ptr<X509_REQ, ReqFree> req(X509_REQ_new());
  X509_NAME* name = X509_REQ_get_subject_name(req.get());
  const std::string cn(host);
  if (X509_REQ_set_version(req.get(), 0) != 1 ||
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1 ||
      X509_REQ_set_pubkey(req.get(), key.get()) != 1 ||
      X509_REQ_sign(req.get(), key.get(), EVP_sha256()) <= 0) {
    return absl::InternalError("cannot make the certificate signing request");
  }
  std::unique_ptr<BIO, BioFree> key_bio(BIO_new(BIO_s_mem()));
  std::unique_ptr<BIO, BioFree> csr_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1 ||
      PEM_write_bio_X509_REQ(csr_bio.get(), req.get()) != 1) {
    return absl::InternalError("cannot encode the key or the request as PEM");
  }
  return KeyAndCsr{BioText(key_bio.get()), BioText(csr_bio.get())};
}

}  // namespace smbfleet

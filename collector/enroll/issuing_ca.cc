#include "collector/enroll/issuing_ca.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/csr.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "common/tls.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kMinRsaBits = 2048;
constexpr size_t kSerialBytes = 16;  // 128 random bits
// Agents' clocks drift: a certificate is valid from a little before it was made.
constexpr absl::Duration kBackdate = absl::Minutes(5);

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct ReqFree {
  void operator()(X509_REQ* r) const { X509_REQ_free(r); }
};
struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Req = std::unique_ptr<X509_REQ, ReqFree>;

Bio MemBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

absl::Status BadCsr(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("csr_pem: ", why));
}

absl::StatusOr<Req> ParseCsr(const std::string& csr_pem) {
  if (csr_pem.empty()) return BadCsr("required (a PEM certificate signing request)");
  if (csr_pem.size() > 64 * 1024) return BadCsr("larger than 64 KiB");
  Bio bio = MemBio(csr_pem);
  Req req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  if (req == nullptr) return BadCsr("not a PEM certificate signing request");
  return req;
}

// The subject's single CN, or an error.
absl::StatusOr<std::string> CommonNameOf(X509_REQ* req) {
  X509_NAME* subject = X509_REQ_get_subject_name(req);
  if (subject == nullptr || X509_NAME_entry_count(subject) != 1) {
    return BadCsr("the subject must be exactly CN=<host name>");
  }
  const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index < 0) return BadCsr("the subject has no CN");
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  unsigned char* utf8 = nullptr;
  const int len = ASN1_STRING_to_UTF8(&utf8, data);
  if (len < 0) return BadCsr("the subject CN is not text");
  std::string cn(reinterpret_cast<const char*>(utf8), static_cast<size_t>(len));
  OPENSSL_free(utf8);
  return cn;
}

absl::Status CheckKey(EVP_PKEY* key) {
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_EC: {
      std::array<char, 64> group{};
      size_t len = 0;
      if (EVP_PKEY_get_group_name(key, group.data(), group.size(), &len) != 1 ||
          std::string(group.data(), len) != "prime256v1") {
        return BadCsr("an EC key must be on P-256");
      }
      return absl::OkStatus();
    }
    case EVP_PKEY_RSA:
      if (EVP_PKEY_get_bits(key) < kMinRsaBits) {
        return BadCsr(absl::StrCat("an RSA key of ", EVP_PKEY_get_bits(key),
                                   " bits; at least 2048 are required"));
      }
      return absl::OkStatus();
    default:
      return BadCsr("the key must be EC P-256 or RSA of 2048 bits or more");
  }
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return absl::InternalError(absl::StrCat("cannot make extension ", nid));
  const int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (added != 1) return absl::InternalError(absl::StrCat("cannot add extension ", nid));
  return absl::OkStatus();
}

google::protobuf::Timestamp Ts(int64_t unix_seconds) {
  return TimeUtil::SecondsToTimestamp(unix_seconds);
}

}  // namespace

struct IssuingCa::Keys {
  Cert cert;
  Pkey key;
};

IssuingCa::IssuingCa(std::unique_ptr<Keys> keys, std::string ca_pem, absl::Duration lifetime)
    : keys_(std::move(keys)), ca_pem_(std::move(ca_pem)), lifetime_(lifetime) {}

IssuingCa::~IssuingCa() = default;

absl::StatusOr<std::unique_ptr<IssuingCa>> IssuingCa::Load(const std::string& cert_file,
                                                           const std::string& key_file,
                                                           absl::Duration lifetime) {
  struct stat st {};
  if (::stat(key_file.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("enrollment.ca_key: cannot read ", key_file));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("enrollment.ca_key: ", key_file, " may be read by its group or others (mode ",
                     absl::StrFormat("%04o", st.st_mode & 07777),
                     "); chmod 600 it before the collector will use it"));
  }
  ASSIGN_OR_RETURN(std::string cert_pem, ReadFile(cert_file, 1 << 20));
  ASSIGN_OR_RETURN(std::string key_pem, ReadFile(key_file, 1 << 20));
  return FromPem(cert_pem, key_pem, lifetime);
}

absl::StatusOr<std::unique_ptr<IssuingCa>> IssuingCa::FromPem(const std::string& cert_pem,
                                                              const std::string& key_pem,
                                                              absl::Duration lifetime) {
  if (lifetime < absl::Minutes(5) || lifetime > absl::Hours(24 * 398)) {
    return absl::InvalidArgumentError(
        "enrollment.certificate_lifetime: must be between 5m and 398 days");
  }
  auto keys = std::make_unique<Keys>();
  Bio cert_bio = MemBio(cert_pem);
  keys->cert.reset(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (keys->cert == nullptr) {
    return absl::InvalidArgumentError("enrollment.ca_cert: not a PEM certificate");
  }
  if (X509_check_ca(keys->cert.get()) == 0) {
    return absl::InvalidArgumentError("enrollment.ca_cert: the certificate is not a CA");
  }
  Bio key_bio = MemBio(key_pem);
  keys->key.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (keys->key == nullptr) {
    return absl::InvalidArgumentError("enrollment.ca_key: not an unencrypted PEM private key");
  }
  if (X509_check_private_key(keys->cert.get(), keys->key.get()) != 1) {
    return absl::InvalidArgumentError(
        "enrollment.ca_key: the key does not belong to enrollment.ca_cert");
  }
  return std::unique_ptr<IssuingCa>(new IssuingCa(std::move(keys), cert_pem, lifetime));
}

absl::StatusOr<std::string> IssuingCa::CsrCommonName(const std::string& csr_pem) {
  ASSIGN_OR_RETURN(Req req, ParseCsr(csr_pem));
  return CommonNameOf(req.get());
}

absl::StatusOr<IssuedCertificatePem> IssuingCa::Sign(const std::string& csr_pem,
                                                     const std::string& host,
                                                     absl::Time now) const {
  RETURN_IF_ERROR(CheckHostName(host, "host"));
  ASSIGN_OR_RETURN(Req req, ParseCsr(csr_pem));
  Pkey key(X509_REQ_get_pubkey(req.get()));
  if (key == nullptr) return BadCsr("no public key");
  if (X509_REQ_verify(req.get(), key.get()) != 1) {
    return BadCsr("its signature does not verify with its own key");
  }
  RETURN_IF_ERROR(CheckKey(key.get()));
  ASSIGN_OR_RETURN(std::string cn, CommonNameOf(req.get()));
  RETURN_IF_ERROR(CheckHostName(cn, "csr_pem: the subject CN"));
  if (cn != host) {
    return BadCsr(absl::StrCat("the subject CN '", cn, "' is not the host name '", host, "'"));
  }

  Cert cert(X509_new());
  std::array<unsigned char, kSerialBytes> serial_bytes{};
  if (RAND_bytes(serial_bytes.data(), static_cast<int>(serial_bytes.size())) != 1) {
    return absl::InternalError("no random bytes for a serial");
  }
  serial_bytes[0] &= 0x7f;  // positive
  serial_bytes[0] |= 0x01;  // non-zero first byte: every serial is 16 bytes long
  std::unique_ptr<BIGNUM, BnFree> serial(
      BN_bin2bn(serial_bytes.data(), static_cast<int>(serial_bytes.size()), nullptr));
  const int64_t not_before = absl::ToUnixSeconds(now - kBackdate);
  const int64_t not_after = absl::ToUnixSeconds(now + lifetime_);
  X509_NAME* subject = X509_NAME_new();
  const bool built =
      X509_set_version(cert.get(), 2) == 1 && serial != nullptr &&
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr &&
      ASN1_TIME_set(X509_getm_notBefore(cert.get()), static_cast<time_t>(not_before)) != nullptr &&
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), static_cast<time_t>(not_after)) != nullptr &&
      X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(host.c_str()), -1, -1,
                                 0) == 1 &&
      X509_NAME_add_entry_by_txt(subject, "OU", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>("agent"), -1, -1, 0) == 1 &&
      X509_set_subject_name(cert.get(), subject) == 1 &&
      X509_set_issuer_name(cert.get(), X509_get_subject_name(keys_->cert.get())) == 1 &&
      X509_set_pubkey(cert.get(), key.get()) == 1;
  X509_NAME_free(subject);
  if (!built) return absl::InternalError("cannot build the certificate");
  X509* issuer = keys_->cert.get();
  const std::string san = absl::StrCat("DNS:", host);
  RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:FALSE"));
  RETURN_IF_ERROR(
      AddExtension(cert.get(), issuer, NID_key_usage, "critical,digitalSignature,keyEncipherment"));
  RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_ext_key_usage, "clientAuth"));
  RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_subject_alt_name, san.c_str()));
  RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_subject_key_identifier, "hash"));
  RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_authority_key_identifier, "keyid"));
  if (X509_sign(cert.get(), keys_->key.get(), EVP_sha256()) <= 0) {
    return absl::InternalError("cannot sign the certificate");
  }
  Bio out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(out.get(), cert.get()) != 1) {
    return absl::InternalError("cannot encode the certificate");
  }
  char* data = nullptr;
  const long len = BIO_get_mem_data(out.get(), &data);  // NOLINT(google-runtime-int)
  IssuedCertificatePem issued;
  issued.certificate_pem.assign(data, static_cast<size_t>(len));
  ASSIGN_OR_RETURN(PeerIdentity id, IdentityFromPem(issued.certificate_pem));
  issued.record.set_serial(id.serial);
  issued.record.set_fingerprint(id.fingerprint);
  issued.record.set_host(host);
  *issued.record.mutable_not_before() = Ts(not_before);
  *issued.record.mutable_not_after() = Ts(not_after);
  *issued.record.mutable_issued_at() = TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(now));
  return issued;
}

}  // namespace smbfleet::collector

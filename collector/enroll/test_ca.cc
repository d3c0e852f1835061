#include "collector/enroll/test_ca.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>

namespace smbfleet::collector::testing_ca {
namespace {

std::string Drain(BIO* bio) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);  // NOLINT(google-runtime-int)
  std::string out(data, static_cast<size_t>(len));
  BIO_free(bio);
  return out;
}

void AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

}  // namespace

std::string Pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  return Drain(bio);
}

std::string Pem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  return Drain(bio);
}

std::string Pem(X509_REQ* req) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509_REQ(bio, req);
  return Drain(bio);
}

TestCa MakeCa() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_time_adj_ex(X509_getm_notAfter(cert), 3650, 0, nullptr);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>("test agents CA"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_set_pubkey(cert, key);
  AddExtension(cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(cert, NID_subject_key_identifier, "hash");
  X509_sign(cert, key, EVP_sha256());
  TestCa ca{Pem(cert), Pem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return ca;
}

}  // namespace smbfleet::collector::testing_ca

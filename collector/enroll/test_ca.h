#ifndef SMBFLEET_COLLECTOR_ENROLL_TEST_CA_H_
#define SMBFLEET_COLLECTOR_ENROLL_TEST_CA_H_

// Tests only: a throwaway agents CA made with OpenSSL, and PEM text of OpenSSL objects.

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <string>

namespace smbfleet::collector::testing_ca {

struct TestCa {
  std::string cert_pem;
  std::string key_pem;
};

// A self-signed EC P-256 CA ("test agents CA"), valid from an hour ago for ten years.
TestCa MakeCa();

std::string Pem(X509* cert);
std::string Pem(EVP_PKEY* key);
std::string Pem(X509_REQ* req);

}  // namespace smbfleet::collector::testing_ca

#endif  // SMBFLEET_COLLECTOR_ENROLL_TEST_CA_H_

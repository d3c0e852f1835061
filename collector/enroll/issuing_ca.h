#ifndef SMBFLEET_COLLECTOR_ENROLL_ISSUING_CA_H_
#define SMBFLEET_COLLECTOR_ENROLL_ISSUING_CA_H_

// The collector's issuing CA for agents (config `enrollment: {ca_cert, ca_key}`): signs an
// agent's CSR for its own host name, and nothing else it asks for. Every certificate gets the
// same shape whatever the CSR says: subject CN=<host>, OU=agent; SAN DNS:<host>; EKU clientAuth;
// a random 128-bit serial; the configured (short) lifetime. The CSR's extensions are ignored.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::collector {

struct IssuedCertificatePem {
  std::string certificate_pem;
  smbfleet::v1::IssuedCertificate record;  // serial, fingerprint, host, not_before/after
};

class IssuingCa {
 public:
  // Refuses a key file that the group or others may read (FAILED_PRECONDITION naming it), a
  // certificate that is not a CA or does not match the key.
  static absl::StatusOr<std::unique_ptr<IssuingCa>> Load(const std::string& cert_file,
                                                         const std::string& key_file,
                                                         absl::Duration lifetime);
  static absl::StatusOr<std::unique_ptr<IssuingCa>> FromPem(const std::string& cert_pem,
                                                            const std::string& key_pem,
                                                            absl::Duration lifetime);
  ~IssuingCa();
  IssuingCa(const IssuingCa&) = delete;
  IssuingCa& operator=(const IssuingCa&) = delete;

  // Checks the CSR (PEM, valid self-signature, EC P-256 or RSA of 2048 bits or more, subject
  // CN exactly `host`, which must be a lower-case host name) and issues. INVALID_ARGUMENT
  // naming csr_pem and what is wrong.
  absl::StatusOr<IssuedCertificatePem> Sign(const std::string& csr_pem, const std::string& host,
                                            absl::Time now) const;

  // The subject CN of a CSR (INVALID_ARGUMENT when it does not parse or has none).
  static absl::StatusOr<std::string> CsrCommonName(const std::string& csr_pem);

  const std::string& ca_pem() const { return ca_pem_; }
  absl::Duration lifetime() const { return lifetime_; }

 private:
  struct Keys;
  IssuingCa(std::unique_ptr<Keys> keys, std::string ca_pem, absl::Duration lifetime);

  std::unique_ptr<Keys> keys_;
  std::string ca_pem_;
  absl::Duration lifetime_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_ENROLL_ISSUING_CA_H_

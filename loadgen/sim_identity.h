#ifndef SMBFLEET_LOADGEN_SIM_IDENTITY_H_
#define SMBFLEET_LOADGEN_SIM_IDENTITY_H_

// Client certificates for simulated agents, made in process the way an enrolling agent gets one:
// a fresh key and CSR (common/csr.h) signed by the collector's issuing CA code with the agents
// CA's key (CN and DNS SAN = host name, OU=agent, clientAuth).

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collector/enroll/issuing_ca.h"
#include "common/tls.h"

namespace smbfleet::loadgen {

class AgentIssuer {
 public:
  // `ca_cert_pem` and `ca_key_pem` are the issuing CA (deploy/ca.sh's agents-ca.pem and .key);
  // `trust_pem` is the root the agents verify the collector with (ca.pem).
  static absl::StatusOr<std::unique_ptr<AgentIssuer>> Create(const std::string& ca_cert_pem,
                                                             const std::string& ca_key_pem,
                                                             std::string trust_pem);

  // A fresh EC P-256 key and a 7-day certificate for `host`, chained with the issuing CA.
  absl::StatusOr<TlsMaterial> Issue(absl::string_view host) const;

 private:
  AgentIssuer(std::unique_ptr<collector::IssuingCa> ca, std::string trust_pem)
      : ca_(std::move(ca)), trust_pem_(std::move(trust_pem)) {}

  std::unique_ptr<collector::IssuingCa> ca_;
  std::string trust_pem_;
};

}  // namespace smbfleet::loadgen

#endif  // SMBFLEET_LOADGEN_SIM_IDENTITY_H_

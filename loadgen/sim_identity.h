#ifndef SMBFLEET_LOADGEN_SIM_IDENTITY_H_
#define SMBFLEET_LOADGEN_SIM_IDENTITY_H_

// Client certificates for simulated agents, minted in process from the agents CA's key exactly
// as deploy/ca.sh issues a real agent's (CN and DNS SAN = host name, OU=agent, clientAuth).

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/tls.h"

namespace smbfleet::loadgen {

class AgentIssuer {
 public:
  // `ca_cert_pem` and `ca_key_pem` are the issuing CA (deploy/ca.sh's agents-ca.pem and .key);
  // `trust_pem` is the root the agents verify the collector with (ca.pem).
  static absl::StatusOr<std::unique_ptr<AgentIssuer>> Create(std::string ca_cert_pem,
                                                             const std::string& ca_key_pem,
                                                             std::string trust_pem);
  ~AgentIssuer();
  AgentIssuer(const AgentIssuer&) = delete;
  AgentIssuer& operator=(const AgentIssuer&) = delete;

  // A fresh EC P-256 key and a 7-day certificate for `host`, chained with the issuing CA.
  absl::StatusOr<TlsMaterial> Issue(absl::string_view host) const;

 private:
  struct Impl;
  explicit AgentIssuer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace smbfleet::loadgen

#endif  // SMBFLEET_LOADGEN_SIM_IDENTITY_H_

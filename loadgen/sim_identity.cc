#include "loadgen/sim_identity.h"

#include <utility>

#include "absl/time/clock.h"
#include "common/csr.h"
#include "common/status_macros.h"

namespace smbfleet::loadgen {

absl::StatusOr<std::unique_ptr<AgentIssuer>> AgentIssuer::Create(const std::string& ca_cert_pem,
                                                                 const std::string& ca_key_pem,
                                                                 std::string trust_pem) {
  ASSIGN_OR_RETURN(std::unique_ptr<collector::IssuingCa> ca,
                   collector::IssuingCa::FromPem(ca_cert_pem, ca_key_pem, absl::Hours(7 * 24)));
  return std::unique_ptr<AgentIssuer>(new AgentIssuer(std::move(ca), std::move(trust_pem)));
}

absl::StatusOr<TlsMaterial> AgentIssuer::Issue(absl::string_view host) const {
  ASSIGN_OR_RETURN(KeyAndCsr request, GenerateKeyAndCsr(host));
  ASSIGN_OR_RETURN(collector::IssuedCertificatePem issued,
                   ca_->Sign(request.csr_pem, std::string(host), absl::Now()));
  // As ca.sh writes a client certificate: the issuing CA after it, so the root alone verifies it.
  std::string chain = std::move(issued.certificate_pem);
  if (chain.find(ca_->ca_pem()) == std::string::npos) chain += ca_->ca_pem();
  return TlsMaterial{std::move(chain), std::move(request.key_pem), trust_pem_};
}

}  // namespace smbfleet::loadgen

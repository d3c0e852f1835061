#ifndef SMBFLEET_AGENT_CORE_ENROLLMENT_H_
#define SMBFLEET_AGENT_CORE_ENROLLMENT_H_

// How an agent gets and keeps its certificate from the collector's issuing CA
// (docs/enrollment.md). The key is made here and never leaves the host: only a CSR is sent.
// Enroll: with the one-time token read from `enroll.token_file`, over TLS that pins `tls.ca` and
// presents no certificate. Renew: with the current certificate, at 2/3 of its lifetime. The
// token's text never reaches a log line, an error message or argv.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/core/agent_config.h"

namespace smbfleet::agent {

// True when the config has an `enroll:` section and tls.cert does not exist yet.
bool NeedsEnrollment(const AgentConfig& config);

// Makes a key, enrolls with the token and writes tls.key (0600, created with that mode before
// any byte is written) and tls.cert. Returns the host name the certificate names.
absl::StatusOr<std::string> EnrollNow(const AgentConfig& config);

// When the certificate at tls.cert should be renewed: 2/3 of the way from not_before to
// not_after.
absl::StatusOr<absl::Time> RenewalDue(const AgentConfig& config);

// Renews with the current certificate: a new key and CSR for the same host, the new certificate
// and key written in place of the old ones. Returns the new certificate's not_after.
absl::StatusOr<absl::Time> RenewNow(const AgentConfig& config);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_ENROLLMENT_H_

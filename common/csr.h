#ifndef SMBFLEET_COMMON_CSR_H_
#define SMBFLEET_COMMON_CSR_H_

// What an agent sends to enroll: a fresh EC P-256 key made on the host (it never leaves it) and
// a PKCS#10 request for its host name. Also the host-name rule the issuing CA applies.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smbfleet {

struct KeyAndCsr {
  std::string key_pem;  // PKCS#8, unencrypted: write it 0600 before anything else
  std::string csr_pem;
};

// A new EC P-256 key and a CSR signed with it whose subject is CN=<host>.
absl::StatusOr<KeyAndCsr> GenerateKeyAndCsr(absl::string_view host);

// OK when `host` is a lower-case DNS-style host name: labels of 1 to 63 letters, digits and
// '-' (not first or last), separated by dots, at most 253 characters. INVALID_ARGUMENT naming
// `what` and the problem otherwise.
absl::Status CheckHostName(absl::string_view host, absl::string_view what);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_CSR_H_

#ifndef SMBFLEET_CLI_CTL_CONFIG_H_
#define SMBFLEET_CLI_CTL_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tls.h"

namespace smbfleet::cli {

// Where smbfleetctl finds the collector and the operator's certificate. Read from
// --config FILE, else $SMBFLEET_CTL_CONFIG; --collector/--cert/--key/--ca override.
struct CtlConfig {
  std::string collector_address = "127.0.0.1:7443";
  std::string server_name;  // empty = host part of the address
  TlsFiles tls;
  // A file holding a bearer token (`token_file:`); $SMBFLEET_TOKEN takes precedence. With a
  // token, no client certificate is presented (the collector refuses a call carrying both).
  // Never a flag: it would show in `ps`.
  std::string token_file;
};

absl::StatusOr<CtlConfig> LoadCtlConfig(const std::string& file);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_CTL_CONFIG_H_

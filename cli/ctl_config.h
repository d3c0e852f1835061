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
};

absl::StatusOr<CtlConfig> LoadCtlConfig(const std::string& file);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_CTL_CONFIG_H_

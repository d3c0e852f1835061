#ifndef SMBFLEET_COLLECTOR_SERVER_STARTUP_H_
#define SMBFLEET_COLLECTOR_SERVER_STARTUP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "collector/config.h"
#include "collector/server/collector.h"

namespace smbfleet::collector {

// Everything a production start does, in order: TLS material, schema migrations, the
// PostgreSQL stores, the policy (registered as the active version), then the server.
absl::StatusOr<std::unique_ptr<Collector>> StartFromConfig(const CollectorConfig& config);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_SERVER_STARTUP_H_

#ifndef SMBFLEET_COMMON_LOGGING_H_
#define SMBFLEET_COMMON_LOGGING_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "spdlog/spdlog.h"

namespace smbfleet {

// One named logger per component ("agent", "collector", "store", ...), all writing to stderr.
std::shared_ptr<spdlog::logger> Logger(const std::string& component);

// "trace", "debug", "info", "warn", "error", "off".
absl::Status SetLogLevel(const std::string& level);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_LOGGING_H_

#ifndef SMBFLEET_COMMON_LOGGING_H_
#define SMBFLEET_COMMON_LOGGING_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "spdlog/spdlog.h"

namespace smbfleet {

// One named logger per component ("agent", "collector", "store", ...), all writing to stderr.
std::shared_ptr<spdlog::logger> Logger(const std::string& component);

// "trace", "debug", "info", "warn", "error", "off".
absl::Status SetLogLevel(const std::string& level);

// Every field a host, a person or the network supplied (names, versions, labels, ids, reasons,
// error text that quotes them) goes into a log line through LogSafe: one double-quoted field with
// newlines, control characters, bidirectional controls and invalid UTF-8 escaped and the length
// capped, so that it cannot forge a line or hide what follows.
inline constexpr size_t kLogFieldMaxBytes = 256;
inline constexpr size_t kLogErrorMaxBytes = 2048;
std::string LogSafe(absl::string_view field, size_t max_bytes = kLogFieldMaxBytes);
// An error's message, which often quotes such fields.
std::string LogSafe(const absl::Status& status);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_LOGGING_H_

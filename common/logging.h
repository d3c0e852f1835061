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

// Every field a host, a person or the network supplied (names, ids, versions, labels, reasons,
// errors quoting them) reaches a log line through LogSafe, so it cannot forge a line: a plain
// token (letters, digits, . _ - : / @ +) as is; else one double-quoted field with quotes, control
// and bidi characters and invalid UTF-8 escaped, capped in length.
inline constexpr size_t kLogFieldMaxBytes = 256;
inline constexpr size_t kLogErrorMaxBytes = 2048;
std::string LogSafe(absl::string_view field, size_t max_bytes = kLogFieldMaxBytes);
// An error's message, which often quotes such fields.
std::string LogSafe(const absl::Status& status);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_LOGGING_H_

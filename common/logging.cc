#include "common/logging.h"

#include <algorithm>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/safe_text.h"
#include "spdlog/sinks/stdout_color_sinks.h"

namespace smbfleet {

std::shared_ptr<spdlog::logger> Logger(const std::string& component) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto existing = spdlog::get(component);
  if (existing) return existing;
  auto logger = spdlog::stderr_color_mt(component);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ [%n] %v");
  logger->set_level(spdlog::get_level());
  return logger;
}

absl::Status SetLogLevel(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("log level '", level, "' is not one of trace, debug, info, warn, error, off"));
  }
  spdlog::set_level(parsed);
  spdlog::apply_all([parsed](const std::shared_ptr<spdlog::logger>& l) { l->set_level(parsed); });
  return absl::OkStatus();
}

std::string LogSafe(absl::string_view field, size_t max_bytes) {
  auto plain = [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
           absl::string_view("._-:/@+").find(c) != absl::string_view::npos;
  };
  if (!field.empty() && field.size() <= max_bytes &&
      std::all_of(field.begin(), field.end(), plain)) {
    return std::string(field);
  }
  return QuoteUnsafeText(field, max_bytes);
}

std::string LogSafe(const absl::Status& status) {
  return QuoteUnsafeText(status.message(), kLogErrorMaxBytes);
}

}  // namespace smbfleet

#include "agent/platform/samba/probe_errors.h"

#include "absl/strings/ascii.h"

namespace smbfleet::agent::samba {

std::string ProbeCodeOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      return "NOT_FOUND";
    case absl::StatusCode::kDeadlineExceeded:
      return "TIMEOUT";
    case absl::StatusCode::kResourceExhausted:
      return "OUTPUT_TOO_LARGE";
    case absl::StatusCode::kInvalidArgument:
      return "PARSE";
    default:
      return "ERROR";
  }
}

std::string ToolMessage(const CommandResult& result, size_t max_bytes) {
  const std::string& raw = result.stderr_data.empty() ? result.stdout_data : result.stderr_data;
  std::string out;
  bool space = false;
  for (char c : raw) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    // Keep messages printable: a hostile tool output must not smuggle control bytes into logs.
    out.push_back(absl::ascii_isprint(static_cast<unsigned char>(c)) ? c : '?');
    if (out.size() >= max_bytes) {
      out.append("...");
      break;
    }
  }
  return out;
}

void AddProbeError(smbfleet::v1::Posture* posture, absl::string_view probe,
                   absl::string_view code, absl::string_view message) {
  auto* e = posture->add_probe_errors();
  e->set_probe(std::string(probe));
  e->set_code(std::string(code));
  e->set_message(std::string(message));
}

}  // namespace smbfleet::agent::samba

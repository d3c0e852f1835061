#include "agent/platform/samba/probe_errors.h"

#include "absl/strings/ascii.h"

namespace smbfleet::agent::samba {

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

}  // namespace smbfleet::agent::samba

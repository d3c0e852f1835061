#include "agent/core/probe_errors.h"

namespace smbfleet::agent {

void AddProbeError(smbfleet::v1::Posture* posture, const Probe& probe, absl::string_view code,
                   absl::string_view message) {
  smbfleet::v1::ProbeError* e = posture->add_probe_errors();
  e->set_probe(std::string(probe.name));
  e->set_code(std::string(code));
  e->set_message(std::string(message));
  for (int s = smbfleet::v1::PostureSection_MIN; s <= smbfleet::v1::PostureSection_MAX; ++s) {
    auto section = static_cast<smbfleet::v1::PostureSection>(s);
    if (smbfleet::v1::PostureSection_IsValid(s) && probe.sections.Has(section)) {
      e->add_sections(section);
    }
  }
}

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
    case absl::StatusCode::kUnknown:
      return "EXIT_STATUS";
    default:
      return "ERROR";
  }
}

}  // namespace smbfleet::agent

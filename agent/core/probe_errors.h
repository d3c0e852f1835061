#ifndef SMBFLEET_AGENT_CORE_PROBE_ERRORS_H_
#define SMBFLEET_AGENT_CORE_PROBE_ERRORS_H_

// A failed probe (one command, one cmdlet, one file) is data: a ProbeError in the posture that
// names the probe and the sections it leaves unknown, so that policy reports "unknown" for those
// rules instead of guessing from the probe's name.

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent {

// A set of PostureSection values.
class Sections {
 public:
  constexpr Sections() = default;
  constexpr Sections(std::initializer_list<smbfleet::v1::PostureSection> sections) {
    for (auto s : sections) bits_ |= Bit(s);
  }
  constexpr bool Has(smbfleet::v1::PostureSection s) const { return (bits_ & Bit(s)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }

 private:
  static constexpr uint32_t Bit(smbfleet::v1::PostureSection s) {
    return 1u << static_cast<uint32_t>(s);
  }
  uint32_t bits_ = 0;
};

// One probe: its name in probe_errors ("testparm", "Get-SmbShare") and what it fills.
struct Probe {
  absl::string_view name;
  Sections sections;
};

// Appends posture.probe_errors[] = {probe, code, message, sections}.
void AddProbeError(smbfleet::v1::Posture* posture, const Probe& probe, absl::string_view code,
                   absl::string_view message);

// ProbeError.code for a runner, reader or parse status: "NOT_FOUND", "TIMEOUT",
// "OUTPUT_TOO_LARGE", "PARSE", "EXIT_STATUS" (Unknown: a script or tool that failed), "ERROR".
std::string ProbeCodeOf(const absl::Status& status);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_PROBE_ERRORS_H_

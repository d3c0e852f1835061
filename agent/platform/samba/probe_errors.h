#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_PROBE_ERRORS_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_PROBE_ERRORS_H_

// Running a Samba tool where a failure is data (posture.probe_errors), not an error return.

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/core/command_runner.h"
#include "agent/core/probe_errors.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::samba {

// The Samba probes. testparm is the whole configuration: server, client and shares.
inline constexpr Probe kTestparmProbe{
    "testparm",
    {v1::POSTURE_SECTION_SERVER, v1::POSTURE_SECTION_CLIENT, v1::POSTURE_SECTION_SHARES}};
inline constexpr Probe kSmbstatusProbe{
    "smbstatus", {v1::POSTURE_SECTION_SESSIONS, v1::POSTURE_SECTION_OPEN_FILES}};
inline constexpr Probe kSambaLogProbe{"samba-log", {v1::POSTURE_SECTION_EVENTS}};
// Sessions' round-trip times. No section: the sessions themselves are still known.
inline constexpr Probe kSockDiagProbe{"sock_diag", {}};
inline constexpr Probe kNicsProbe{"nics", {v1::POSTURE_SECTION_NETWORK}};

// The tool's own complaint for messages: stderr (else stdout), whitespace-collapsed, at most
// max_bytes.
std::string ToolMessage(const CommandResult& result, size_t max_bytes = 400);

// Runs `command`; a runner error or a non-zero exit becomes a probe error. Output is still parsed
// after a non-zero exit when there is any (testparm exits 1 on a bad value but prints the rest).
template <typename T, typename ParseFn>
std::optional<T> RunAndParse(CommandRunner* runner, const Command& command, const Probe& probe,
                             smbfleet::v1::Posture* posture, ParseFn parse) {
  absl::StatusOr<CommandResult> result = runner->Run(command);
  if (!result.ok()) {
    AddProbeError(posture, probe, ProbeCodeOf(result.status()),
                  absl::StrCat(DescribeCommand(command), ": ", result.status().message()));
    return std::nullopt;
  }
  if (result->exit_code != 0) {
    AddProbeError(posture, probe, "EXIT_STATUS",
                  absl::StrCat(DescribeCommand(command), " exited with ", result->exit_code, ": ",
                               ToolMessage(*result)));
    if (result->stdout_data.empty()) return std::nullopt;
  }
  absl::StatusOr<T> parsed = parse(*result);
  if (!parsed.ok()) {
    AddProbeError(posture, probe, "PARSE", parsed.status().message());
    return std::nullopt;
  }
  return *std::move(parsed);
}

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_PROBE_ERRORS_H_

#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_APPLIER_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_APPLIER_H_

// Applies allowlisted typed settings (policy/settings.h) on Windows through
// Set-SmbServerConfiguration / Set-SmbClientConfiguration / Set-SmbShare, without prompts.
// The apply script is one constant; the target, share name and values travel as data, so a
// share called `Reports'; Remove-Item C:\ -Recurse; '` reaches the cmdlet as exactly that name.
// Before and after values are read back with the same probes the report uses.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/core/settings_applier.h"
#include "agent/platform/windows/windows_source.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::agent::windows {

// The apply script (constant text).
const std::string& ApplyScript();

// One Set-Smb* call: which cmdlet, which share, which parameters with typed values.
struct ApplyCall {
  std::string target;                 // "server", "client" or "share"
  std::string share;                  // for "share"
  std::string data_json;              // {"target":..., "share":..., "parameters": {...}}
  std::vector<std::string> settings;  // the setting names it carries
};

// Validates and groups changes into calls: every setting on the allowlist, every value
// normalised; InvalidArgument/NotFound naming the setting otherwise. Pure.
absl::StatusOr<std::vector<ApplyCall>> PlanApply(
    const std::vector<smbfleet::v1::SettingChange>& changes);

// The current value of a setting in a posture as the allowlist writes it ("true", "SMB_3_0"),
// or nullopt when the build does not report it.
std::optional<std::string> CurrentValue(const smbfleet::v1::Posture& posture,
                                        const smbfleet::v1::SettingChange& change);

class WindowsApplier : public SettingsApplier {
 public:
  WindowsApplier(WindowsOptions options, PowerShellRunner* runner);

  // Apply (SettingsApplier) reads the current values, checks expected_current preconditions (and
  // that the build has the setting, e.g. Smb2DialectMin only on WS2025+), applies, re-reads.
  // OK (APPLIED) only when every re-read value equals the requested one. Statuses:
  //   PermissionDenied    a setting is not on the allowlist (REFUSED); nothing run
  //   InvalidArgument     malformed value or share name, or an option (Windows has none)
  //   FailedPrecondition  expected_current does not hold, the build does not report the setting
  //                       or the share does not exist (PRECONDITION_FAILED); nothing run
  //   Aborted             a Set-Smb* call failed after earlier ones succeeded; those were undone
  //                       from the before-values, newest first (ROLLED_BACK)
  //   Internal            reading failed, the first Set-Smb* call failed, undoing failed, or a
  //                       value did not stick (e.g. a Group Policy sets it) (FAILED; the change
  //                       executor then restores the before-values)

  absl::StatusOr<std::vector<smbfleet::v1::SettingChange>> Read(
      const std::vector<smbfleet::v1::SettingChange>& settings) override;

 private:
  ApplyResult DoApply(const std::vector<smbfleet::v1::SettingChange>& changes,
                      const std::vector<std::string>& options) override;
  absl::Status ApplyInto(const std::vector<smbfleet::v1::SettingChange>& changes,
                         const std::vector<std::string>& options, ApplyResult* result);
  absl::StatusOr<smbfleet::v1::Posture> ReadPosture();
  absl::StatusOr<std::string> RunApply(const ApplyCall& call);
  // Re-applies the before-values of plan[0, done) in reverse order.
  absl::Status Undo(const std::vector<ApplyCall>& plan, size_t done,
                    const std::vector<smbfleet::v1::SettingChange>& changes, ApplyResult* result);

  WindowsOptions options_;
  PowerShellRunner* runner_;
};

}  // namespace smbfleet::agent::windows

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_APPLIER_H_

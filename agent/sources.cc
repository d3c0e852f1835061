#include "agent/sources.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/platform/platform.h"
#ifndef _WIN32
#include "agent/platform/samba/samba_applier.h"
#include "agent/platform/samba/samba_source.h"
#endif
#include "agent/platform/windows/applier.h"
#include "agent/platform/windows/windows_source.h"
#include "common/files.h"

namespace smbfleet::agent {

absl::StatusOr<std::unique_ptr<PostureSource>> MakeSource(const std::string& spec,
                                                          const SourceContext& context) {
  if (spec == "samba" || absl::StartsWith(spec, "samba:")) {
#ifdef _WIN32
    return absl::InvalidArgumentError(
        absl::StrCat("source ", spec, ": Samba is read by the Linux agent, not the Windows one"));
#else
    SambaOptions options;
    if (spec.size() > 6) options.smb_conf = spec.substr(6);
    if (!FileExists(options.smb_conf)) {
      return absl::NotFoundError(
          absl::StrCat("source ", spec, ": ", options.smb_conf, " does not exist"));
    }
    options.env = context.tool_env;
    return NewSambaSource(options, context.runner);
#endif
  }
  if (absl::StartsWith(spec, "windows-capture:")) {
    std::string dir = spec.substr(16);
    if (dir.empty() || !FileExists(dir)) {
      return absl::NotFoundError(
          absl::StrCat("source ", spec, ": capture folder '", dir, "' does not exist"));
    }
    return windows::NewWindowsCaptureSource(dir);
  }
  if (spec == "windows") return platform::NewLiveWindowsSource(context);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown source '", spec,
                   "' (expected samba, samba:SMB_CONF, windows or windows-capture:DIR)"));
}

namespace {

// WindowsApplier with the PowerShell runner it borrows.
class OwningWindowsApplier : public SettingsApplier {
 public:
  explicit OwningWindowsApplier(CommandRunner* runner)
      : powershell_(windows::NewPowerShellRunner(runner, platform::PowerShellPath())),
        applier_(windows::WindowsOptions{}, powershell_.get()) {}

  absl::StatusOr<std::vector<smbfleet::v1::SettingChange>> Read(
      const std::vector<smbfleet::v1::SettingChange>& settings) override {
    return applier_.Read(settings);
  }

 private:
  ApplyResult DoApply(const std::vector<smbfleet::v1::SettingChange>& changes,
                      const std::vector<std::string>& options) override {
    return applier_.Apply(changes, options);
  }

  std::unique_ptr<windows::PowerShellRunner> powershell_;
  windows::WindowsApplier applier_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SettingsApplier>> MakeApplier(const std::string& spec,
                                                             const SourceContext& context) {
#ifndef _WIN32
  if (spec == "samba" || absl::StartsWith(spec, "samba:")) {
    samba::SambaApplierOptions options;
    if (spec.size() > 6) options.samba.smb_conf = spec.substr(6);
    options.samba.env = context.tool_env;
    return std::unique_ptr<SettingsApplier>(
        std::make_unique<samba::SambaApplier>(options, context.runner));
  }
#endif
  if (spec == "windows") {
    return std::unique_ptr<SettingsApplier>(std::make_unique<OwningWindowsApplier>(context.runner));
  }
  return absl::NotFoundError(absl::StrCat("source ", spec, " cannot apply changes"));
}

}  // namespace smbfleet::agent

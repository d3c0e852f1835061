#include "collector/changes/stale_plan.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "policy/plan.h"
#include "policy/settings.h"

namespace smbfleet::collector::changes {
namespace {

using smbfleet::policy::SettingInfo;
using smbfleet::policy::SettingKey;

// The value PlanRemediation recorded as expected_current. For the share flags that is the
// share's own flag, not the computed "encrypted" view that CurrentSettingValue gives.
std::string CurrentValue(const SettingInfo& info, const smbfleet::v1::Posture& posture,
                         const std::string& share) {
  if (info.key == SettingKey::kShareEncryptData || info.key == SettingKey::kShareCompressData) {
    for (const auto& s : posture.shares()) {
      if (s.name() != share) continue;
      bool encrypt = info.key == SettingKey::kShareEncryptData;
      if (encrypt ? !s.has_encrypt_data() : !s.has_compress_data()) return "";
      return (encrypt ? s.encrypt_data() : s.compress_data()) ? "true" : "false";
    }
    return "";
  }
  return smbfleet::policy::CurrentSettingValue(info, posture, share);
}

}  // namespace

std::string StaleSetting::Describe() const {
  std::string where =
      share.empty() ? absl::StrCat("host ", host) : absl::StrCat("host ", host, " share ", share);
  std::string now = current.empty() ? "unknown now" : absl::StrCat("now \"", current, "\"");
  return absl::StrCat(where, ": ", setting, " is ", now, ", the plan expected \"", expected, "\"");
}

absl::StatusOr<std::optional<StaleSetting>> FindStaleSetting(
    const std::vector<smbfleet::v1::RemediationPlan>& plans,
    const std::map<std::string, const smbfleet::v1::Posture*>& latest) {
  for (const auto& plan : plans) {
    auto found = latest.find(plan.hostname());
    const smbfleet::v1::Posture* posture = found == latest.end() ? nullptr : found->second;
    for (const auto& step : plan.steps()) {
      ASSIGN_OR_RETURN(SettingInfo info, smbfleet::policy::LookupSetting(step.setting()));
      if (step.expected_current().empty()) continue;
      std::string current = posture == nullptr ? "" : CurrentValue(info, *posture, step.share());
      if (current != step.expected_current()) {
        return StaleSetting{plan.hostname(), step.setting(), step.share(), step.expected_current(),
                            current};
      }
    }
  }
  return std::nullopt;
}

}  // namespace smbfleet::collector::changes

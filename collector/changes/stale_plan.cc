#include "collector/changes/stale_plan.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "policy/plan.h"
#include "policy/settings.h"

namespace smbfleet::collector::changes {

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
      ASSIGN_OR_RETURN(smbfleet::policy::SettingInfo info,
                       smbfleet::policy::LookupSetting(step.setting()));
      if (step.expected_current().empty()) continue;
      std::string current =
          posture == nullptr ? ""
                             : smbfleet::policy::CurrentSettingValue(info, *posture, step.share());
      if (current != step.expected_current()) {
        return StaleSetting{plan.hostname(), step.setting(), step.share(), step.expected_current(),
                            current};
      }
    }
  }
  return std::nullopt;
}

}  // namespace smbfleet::collector::changes

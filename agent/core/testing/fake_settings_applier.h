#ifndef SMBFLEET_AGENT_CORE_TESTING_FAKE_SETTINGS_APPLIER_H_
#define SMBFLEET_AGENT_CORE_TESTING_FAKE_SETTINGS_APPLIER_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent/core/settings_applier.h"

namespace smbfleet::agent::testing {

// A SettingsApplier over settings in memory. Apply sets them one by one; fail_at makes the n-th set
// (0-based, counted over the applier's life) fail with fail_status after the earlier ones took
// effect.
class FakeSettingsApplier : public SettingsApplier {
 public:
  absl::StatusOr<std::vector<smbfleet::v1::SettingChange>> Read(
      const std::vector<smbfleet::v1::SettingChange>& settings) override {
    ++reads;
    if (!read_status.ok()) return read_status;
    std::vector<smbfleet::v1::SettingChange> out;
    for (const auto& s : settings) {
      smbfleet::v1::SettingChange v;
      v.set_setting(s.setting());
      v.set_share(s.share());
      v.set_value(values[{s.setting(), s.share()}]);
      out.push_back(v);
    }
    return out;
  }

  std::map<std::pair<std::string, std::string>, std::string> values;
  int applies = 0;
  std::vector<std::string> last_options;  // of the latest Apply
  int reads = 0;
  int sets = 0;
  int fail_at = -1;
  int fail_from = -1;  // every set from this one on fails
  absl::Status fail_status = absl::InternalError("Set-SmbShare: access denied");
  absl::Status read_status;

 private:
  ApplyResult DoApply(const std::vector<smbfleet::v1::SettingChange>& changes,
                      const std::vector<std::string>& options) override {
    ++applies;
    last_options = options;
    ApplyResult r;
    for (const auto& c : changes) {
      int n = sets++;
      if (n == fail_at || (fail_from >= 0 && n >= fail_from)) {
        r.set_status(fail_status);
        return r;
      }
      values[{c.setting(), c.share()}] = c.value();
      r.actions.push_back("set " + c.setting());
    }
    r.after = *Read(changes);
    return r;
  }
};

}  // namespace smbfleet::agent::testing

#endif  // SMBFLEET_AGENT_CORE_TESTING_FAKE_SETTINGS_APPLIER_H_

#ifndef SMBFLEET_AGENT_CORE_SETTINGS_APPLIER_H_
#define SMBFLEET_AGENT_CORE_SETTINGS_APPLIER_H_

// Applies allowlisted typed settings (policy/settings.h) to this host. One interface for every
// platform, so that change orders (verify, precondition, apply, ack, rollback) are handled once.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::agent {

// The ack for an apply status, decided here and nowhere else:
//   OK                                 APPLIED
//   PermissionDenied, Unimplemented    REFUSED (not on the allowlist, no equivalent here)
//   FailedPrecondition                 PRECONDITION_FAILED (nothing written)
//   Aborted, Unavailable               ROLLED_BACK (written, did not take, restored)
//   anything else                      FAILED
smbfleet::v1::AckChangeRequest::Result AckResultOf(const absl::Status& status);

// What one Apply did. before/after hold one entry per requested setting, in request order, with
// `value` read from the host (empty when unknown); they are filled as far as the apply got.
class ApplyResult {
 public:
  const absl::Status& status() const { return status_; }
  void set_status(absl::Status status) { status_ = std::move(status); }
  bool ok() const { return status_.ok(); }
  std::string message() const { return std::string(status_.message()); }
  smbfleet::v1::AckChangeRequest::Result ack() const { return AckResultOf(status_); }

  std::vector<smbfleet::v1::SettingChange> before;
  std::vector<smbfleet::v1::SettingChange> after;
  std::vector<std::string> actions;   // files written, reload, cmdlets run, ...
  std::vector<std::string> warnings;  // options that did not fully succeed; settings in effect

 private:
  absl::Status status_;
};

class SettingsApplier {
 public:
  virtual ~SettingsApplier() = default;

  // Validates every change and option before touching anything, checks expected_current, applies,
  // reads back. Options are platform words (ChangeOrder.options), e.g. Samba's "close-share".
  ApplyResult Apply(const std::vector<smbfleet::v1::SettingChange>& changes,
                    const std::vector<std::string>& options = {}) {
    return DoApply(changes, options);
  }

  // The current typed values of these settings (`value` filled, share names canonical), without
  // changing anything: the before-values a journal keeps for rollback.
  virtual absl::StatusOr<std::vector<smbfleet::v1::SettingChange>> Read(
      const std::vector<smbfleet::v1::SettingChange>& settings) = 0;

 private:
  virtual ApplyResult DoApply(const std::vector<smbfleet::v1::SettingChange>& changes,
                              const std::vector<std::string>& options) = 0;
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_SETTINGS_APPLIER_H_

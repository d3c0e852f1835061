#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_APPLIER_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_APPLIER_H_

// Applies typed settings (policy/settings.h allowlist) to a Samba server.
//
//   server.requireSigning          [global] server signing = mandatory | auto
//   server.smb1Enabled             [global] server min protocol = NT1 | SMB2_02 (when it was NT1)
//   server.minDialect              [global] server min protocol = SMB2_02 ... SMB3_11
//   server.encryptData             [global] server smb encrypt = desired | required | if_required
//   server.rejectUnencryptedAccess   (with encryptData: true+true = required, true+false = desired)
//   client.requireSigning          [global] client signing = required | auto
//   client.requireEncryption       [global] client smb encrypt = required | default
//   client.minDialect              [global] client min protocol = SMB2_02 ... SMB3_11
//   share.encryptData              [share]  smb encrypt = required | if_required
// Other allowlisted settings have no Samba equivalent and are refused (Unimplemented).
//
// Options (ChangeOrder.options), so that existing sessions renegotiate:
//   "close-share"           smbcontrol smbd close-share for every share the change touches
//                           ("*" when it touches a server setting)
//   "close-share:NAME"      that share
//   "kill-client-ip"        smbcontrol smbd kill-client-ip for every client address in sessions
//   "kill-client-ip:ADDR"   that IPv4/IPv6 address
// Existing sessions otherwise keep what they negotiated; new connections get the new setting.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/core/command_runner.h"
#include "agent/core/settings_applier.h"
#include "agent/platform/samba/config_writer.h"
#include "agent/platform/samba/samba_source.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::agent::samba {

struct SambaApplierOptions {
  SambaOptions samba;
  // Where the agent-managed include files live; empty = "<directory of smb_conf>/conf.d".
  // smb.conf must include <dir>/posture.conf at the end of [global] and
  // <dir>/share-<name>.conf at the end of each share the agent may change.
  std::string managed_dir;
};

class SambaApplier : public SettingsApplier {
 public:
  SambaApplier(SambaApplierOptions options, CommandRunner* runner);

  // Apply (SettingsApplier): result.before/after hold the typed values ("true", "SMB_3_1_1") read
  // with testparm before and after the change; warnings name options that were applied but did
  // not fully succeed (e.g. kill-client-ip for a client that had already gone).
  // Statuses, and the ack they map to (AckResultOf):
  //   PermissionDenied    a setting is not on the allowlist (REFUSED); nothing written
  //   Unimplemented       an allowlisted setting with no Samba equivalent (REFUSED)
  //   InvalidArgument     malformed value, share name, option or unknown share; nothing written
  //   FailedPrecondition  expected_current does not hold, or the current smb.conf already fails
  //                       testparm (PRECONDITION_FAILED); nothing written
  //   Aborted             testparm rejected the new files or the values did not take effect
  //                       (smb.conf does not include the managed file); restored (ROLLED_BACK)
  //   Unavailable         smbd did not take reload-config; restored (ROLLED_BACK)
  //   Internal            a file could not be written or restored (FAILED)

  absl::StatusOr<std::vector<smbfleet::v1::SettingChange>> Read(
      const std::vector<smbfleet::v1::SettingChange>& settings) override;

  SambaConfigWriter& writer() { return writer_; }

 private:
  ApplyResult DoApply(const std::vector<smbfleet::v1::SettingChange>& changes,
                      const std::vector<std::string>& options) override;
  absl::Status ApplyInto(const std::vector<smbfleet::v1::SettingChange>& changes,
                         const std::vector<std::string>& options, ApplyResult* result);

  SambaApplierOptions options_;
  CommandRunner* runner_;
  SambaConfigWriter writer_;
};

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_APPLIER_H_

#ifndef SMBFLEET_POLICY_SETTINGS_H_
#define SMBFLEET_POLICY_SETTINGS_H_

// The allowlist of typed settings that remediation plans may propose and agents may apply.
// Names are part of the product contract ("server.requireSigning"). Anything not listed here is
// refused by agents, whatever a change order says.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smbfleet::policy {

enum class SettingScope { kServer, kClient, kShare };
enum class SettingType { kBool, kDialect };

enum class SettingKey {
  kServerRequireSigning,
  kServerSmb1Enabled,
  kServerEncryptData,
  kServerRejectUnencryptedAccess,
  kServerMinDialect,
  kServerAuditSmb1Access,
  kServerAuditClientDoesNotSupportEncryption,
  kServerAuditClientDoesNotSupportSigning,
  kServerAuditInsecureGuestLogon,
  kClientRequireSigning,
  kClientEnableInsecureGuestLogons,
  kShareEncryptData,
  kShareCompressData,
  kServerRequestCompression,
  kClientRequireEncryption,
  kClientMinDialect,
};

struct SettingInfo {
  SettingKey key;
  absl::string_view name;  // "server.requireSigning"
  SettingScope scope;
  SettingType type;
};

const std::vector<SettingInfo>& AllSettings();
const SettingInfo& InfoOf(SettingKey key);

// NotFound naming the setting when it is not on the allowlist.
absl::StatusOr<SettingInfo> LookupSetting(absl::string_view name);

// Values travel as strings: "true"/"false" for kBool, "SMB_3_1_1"-style names
// (DIALECT_* without the prefix, e.g. "SMB_3_0") for kDialect. These check and normalise.
absl::StatusOr<std::string> NormalizeSettingValue(const SettingInfo& info, absl::string_view value);

}  // namespace smbfleet::policy

#endif  // SMBFLEET_POLICY_SETTINGS_H_

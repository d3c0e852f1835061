#include "policy/settings.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace smbfleet::policy {

const std::vector<SettingInfo>& AllSettings() {
  static const std::vector<SettingInfo>* kSettings = new std::vector<SettingInfo>{
      {SettingKey::kServerRequireSigning, "server.requireSigning", SettingScope::kServer,
       SettingType::kBool},
      {SettingKey::kServerSmb1Enabled, "server.smb1Enabled", SettingScope::kServer,
       SettingType::kBool},
      {SettingKey::kServerEncryptData, "server.encryptData", SettingScope::kServer,
       SettingType::kBool},
      {SettingKey::kServerRejectUnencryptedAccess, "server.rejectUnencryptedAccess",
       SettingScope::kServer, SettingType::kBool},
      {SettingKey::kServerMinDialect, "server.minDialect", SettingScope::kServer,
       SettingType::kDialect},
      {SettingKey::kServerAuditSmb1Access, "server.auditSmb1Access", SettingScope::kServer,
       SettingType::kBool},
      {SettingKey::kServerAuditClientDoesNotSupportEncryption,
       "server.auditClientDoesNotSupportEncryption", SettingScope::kServer, SettingType::kBool},
      {SettingKey::kServerAuditClientDoesNotSupportSigning,
       "server.auditClientDoesNotSupportSigning", SettingScope::kServer, SettingType::kBool},
      {SettingKey::kServerAuditInsecureGuestLogon, "server.auditInsecureGuestLogon",
       SettingScope::kServer, SettingType::kBool},
      {SettingKey::kClientRequireSigning, "client.requireSigning", SettingScope::kClient,
       SettingType::kBool},
      {SettingKey::kClientEnableInsecureGuestLogons, "client.enableInsecureGuestLogons",
       SettingScope::kClient, SettingType::kBool},
      {SettingKey::kShareEncryptData, "share.encryptData", SettingScope::kShare,
       SettingType::kBool},
      {SettingKey::kShareCompressData, "share.compressData", SettingScope::kShare,
       SettingType::kBool},
      {SettingKey::kServerRequestCompression, "server.requestCompression", SettingScope::kServer,
       SettingType::kBool},
      {SettingKey::kClientRequireEncryption, "client.requireEncryption", SettingScope::kClient,
       SettingType::kBool},
      {SettingKey::kClientMinDialect, "client.minDialect", SettingScope::kClient,
       SettingType::kDialect},
  };
  return *kSettings;
}

const SettingInfo& InfoOf(SettingKey key) {
  for (const auto& s : AllSettings()) {
    if (s.key == key) return s;
  }
  return AllSettings().front();  // unreachable: every key is listed
}

absl::StatusOr<SettingInfo> LookupSetting(absl::string_view name) {
  for (const auto& s : AllSettings()) {
    if (s.name == name) return s;
  }
  return absl::NotFoundError(absl::StrCat("setting '", name, "' is not on the allowlist"));
}

absl::StatusOr<std::string> NormalizeSettingValue(const SettingInfo& info,
                                                  absl::string_view value) {
  std::string v = absl::AsciiStrToLower(absl::StripAsciiWhitespace(value));
  switch (info.type) {
    case SettingType::kBool:
      if (v == "true" || v == "1") return std::string("true");
      if (v == "false" || v == "0") return std::string("false");
      return absl::InvalidArgumentError(
          absl::StrCat(info.name, ": expected true or false, got '", value, "'"));
    case SettingType::kDialect: {
      static constexpr absl::string_view kDialects[] = {"SMB_2_0_2", "SMB_2_1", "SMB_3_0",
                                                        "SMB_3_0_2", "SMB_3_1_1"};
      std::string upper = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(value));
      for (absl::string_view d : kDialects) {
        if (upper == d) return std::string(d);
      }
      return absl::InvalidArgumentError(absl::StrCat(
          info.name, ": expected one of SMB_2_0_2, SMB_2_1, SMB_3_0, SMB_3_0_2, SMB_3_1_1, got '",
          value, "'"));
    }
  }
  return absl::InternalError("unknown setting type");
}

}  // namespace smbfleet::policy

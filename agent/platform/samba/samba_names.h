#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_NAMES_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_NAMES_H_

// Samba's words (smbstatus, testparm) mapped to the Posture enums.

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::samba {

// "NT1", "SMB2_02", "SMB2_10", "SMB3_00", "SMB3_02", "SMB3_11", and testparm's protocol words
// ("SMB2" = SMB2_10, "SMB3" = SMB3_11, "LANMAN1", "CORE", ...). Case-insensitive.
// DIALECT_UNSPECIFIED for anything else.
smbfleet::v1::Dialect DialectFromSamba(absl::string_view name);

// The `server min protocol` word for a dialect: SMB1 -> "NT1", SMB_3_1_1 -> "SMB3_11", ...
std::string SambaProtocolName(smbfleet::v1::Dialect dialect);

// "AES-128-GCM", "HMAC-SHA256", ... Case-insensitive. nullopt for "-", "???" and unknown names.
std::optional<smbfleet::v1::CryptoAlgorithm> CryptoFromSamba(absl::string_view name);

// smbstatus degree: "none", "partial", "full"; PROTECTION_UNSPECIFIED otherwise.
smbfleet::v1::Protection ProtectionFromDegree(absl::string_view degree);

// Whether a share name is safe to look up, name a managed include file after and pass to
// smbcontrol: 1-80 bytes, printable ASCII, none of []/\:*?"<>|=;,%+ and no leading or trailing
// space. The error names the offending byte.
absl::Status ValidateShareName(absl::string_view name);

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_NAMES_H_

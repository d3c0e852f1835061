#ifndef SMBFLEET_POLICY_FIELDS_H_
#define SMBFLEET_POLICY_FIELDS_H_

// The posture fields a policy may test, by their public names ("server.requireSigning").
// Host fields read ServerConfig/ClientConfig; share fields read one Share (and, for the
// computed ones, the server settings that decide what the share really gets).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::policy {

enum class Field : uint8_t {
  kServerSmb1Enabled,
  kServerSmb2Enabled,
  kServerRequireSigning,
  kServerEnableSigning,
  kServerEncryptData,
  kServerRejectUnencryptedAccess,
  kServerMultichannelEnabled,
  kServerCompressionDisabled,
  kServerRequestCompression,
  kServerAuditSmb1Access,
  kServerMinDialect,
  kServerMaxDialect,
  kServerNameHardeningLevel,
  kServerQuicEnabled,
  kServerAuditClientDoesNotSupportEncryption,
  kServerAuditClientDoesNotSupportSigning,
  kServerAuditInsecureGuestLogon,
  kServerAuditClientCertificateAccess,
  kServerNullSessionShares,
  kServerEnableAuthRateLimiter,
  kServerInvalidAuthenticationDelayMs,
  kServerEnableMailslots,
  kServerGuestAccessAllowed,
  kServerAutoDisconnectTimeoutMinutes,
  kServerEnableForcedLogoff,
  kServerNullSessionPipes,
  kServerRestrictNullSessionAccess,
  kClientRequireSigning,
  kClientEnableSigning,
  kClientEnableInsecureGuestLogons,
  kClientSmb1Enabled,
  kClientRequireEncryption,
  kClientMinDialect,
  kClientMaxDialect,
  kClientAuditInsecureGuestLogon,
  kClientAuditServerDoesNotSupportEncryption,
  kClientAuditServerDoesNotSupportSigning,
  kClientBlockNtlm,
  kClientCompressionDisabled,
  kClientRequestCompression,
  kClientEnablePlainTextPassword,
  kClientHardenedUncNetlogon,  // what the \\*\NETLOGON Hardened UNC Paths entry requires
  kClientHardenedUncSysvol,    // what the \\*\SYSVOL entry requires
  kShareEncryptData,
  kShareCompressData,
  kShareGuestOk,
  kShareContinuouslyAvailable,
  kShareEncrypted,           // share.encryptData or server.encryptData
  kShareRejectsUnencrypted,  // encrypted and clients without encryption are refused
  kShareCompressed,          // share.compressData or server.requestCompression
};

enum class FieldType : uint8_t { kBool, kUint, kDialect, kList };
enum class FieldScope : uint8_t { kHost, kShare };
// Which probe delivers a field, so that a missing value with a failed probe is an ERROR.
enum class ProbeGroup : uint8_t { kServer, kClient, kShares, kSessions };

struct FieldInfo {
  Field field;
  absl::string_view name;
  FieldType type;
  FieldScope scope;
  ProbeGroup probe;
};

const std::vector<FieldInfo>& AllFields();
const FieldInfo& InfoOf(Field field);
const FieldInfo* LookupField(absl::string_view name);

// A value read from a posture. Bools are 0/1, dialects their enum number, lists their length.
struct Observed {
  bool known = false;
  uint32_t value = 0;
};

// The names a Hardened UNC Paths field lists: the requirements its entry sets.
inline constexpr absl::string_view kHardenedMutualAuthentication = "mutualAuthentication";
inline constexpr absl::string_view kHardenedIntegrity = "integrity";
inline constexpr absl::string_view kHardenedPrivacy = "privacy";

Observed ReadHostField(Field field, const smbfleet::v1::Posture& posture);
Observed ReadShareField(Field field, const smbfleet::v1::Posture& posture,
                        const smbfleet::v1::Share& share);

// The entries of a list field (views into the posture, or constants), whatever `known` says;
// *out is cleared first.
void ReadListField(Field field, const smbfleet::v1::Posture& posture,
                   std::vector<absl::string_view>* out);
// The only names a list field can hold, when they are fixed (the Hardened UNC Paths
// requirements); empty for lists of free names such as pipes and shares.
absl::Span<const absl::string_view> ListVocabulary(Field field);

// For evidence: "true", "SMB_3_1_1", "2", "[IPC$, COMCFG]" or "(unset)".
std::string FormatObserved(const FieldInfo& info, const Observed& v,
                           const smbfleet::v1::Posture& posture);
std::string FormatValue(FieldType type, uint32_t value);

// "SMB_3_0" (or "3.0", "SMB3_00" are not accepted: one spelling) -> Dialect; false if unknown.
bool ParseDialectName(absl::string_view name, smbfleet::v1::Dialect* out);
absl::string_view DialectName(smbfleet::v1::Dialect d);

}  // namespace smbfleet::policy

#endif  // SMBFLEET_POLICY_FIELDS_H_

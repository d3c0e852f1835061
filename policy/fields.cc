#include "policy/fields.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smbfleet::policy {
namespace {

using smbfleet::v1::Dialect;
using smbfleet::v1::Posture;
using smbfleet::v1::Share;

constexpr FieldType B = FieldType::kBool;
constexpr FieldType U = FieldType::kUint;
constexpr FieldType D = FieldType::kDialect;
constexpr FieldType L = FieldType::kList;
constexpr FieldScope H = FieldScope::kHost;
constexpr FieldScope S = FieldScope::kShare;
constexpr ProbeGroup PS = ProbeGroup::kServer;
constexpr ProbeGroup PC = ProbeGroup::kClient;
constexpr ProbeGroup PSh = ProbeGroup::kShares;

Observed Bool(bool has, bool v) { return has ? Observed{true, v ? 1u : 0u} : Observed{}; }
Observed Uint(bool has, uint32_t v) { return has ? Observed{true, v} : Observed{}; }

absl::string_view Raw(const google::protobuf::Map<std::string, std::string>& raw,
                      absl::string_view key) {
  // Map::find takes a std::string; a reused buffer spares an allocation per lookup.
  thread_local std::string k;
  k.assign(key.data(), key.size());
  auto it = raw.find(k);
  return it == raw.end() ? absl::string_view() : absl::string_view(it->second);
}

bool IsRequired(absl::string_view v) {
  return absl::EqualsIgnoreCase(v, "required") || absl::EqualsIgnoreCase(v, "mandatory");
}

Observed ShareEncrypted(const Posture& p, const Share& s) {
  const auto& srv = p.server();
  if ((s.has_encrypt_data() && s.encrypt_data()) ||
      (srv.has_encrypt_data() && srv.encrypt_data())) {
    return Observed{true, 1};
  }
  if (s.has_encrypt_data() && srv.has_encrypt_data()) return Observed{true, 0};
  return Observed{};
}

// Windows: an encrypted share refuses unencrypted clients when RejectUnencryptedAccess is on.
// Samba: "smb encrypt = required" (share or global) refuses them; "desired" does not.
Observed ShareRejectsUnencrypted(const Posture& p, const Share& s) {
  Observed enc = ShareEncrypted(p, s);
  if (enc.known && enc.value == 0) return Observed{true, 0};
  if (p.host().platform() == smbfleet::v1::PLATFORM_SAMBA) {
    absl::string_view share_mode = Raw(s.raw(), "smb encrypt");
    if (share_mode.empty()) share_mode = Raw(s.raw(), "server smb encrypt");
    absl::string_view global_mode = Raw(p.server().raw(), "server smb encrypt");
    if (global_mode.empty()) global_mode = Raw(p.server().raw(), "smb encrypt");
    if (!share_mode.empty() || !global_mode.empty()) {
      return Observed{true, (IsRequired(share_mode) || IsRequired(global_mode)) ? 1u : 0u};
    }
  }
  if (!enc.known) return Observed{};
  return Bool(p.server().has_reject_unencrypted_access(), p.server().reject_unencrypted_access());
}

// The Hardened UNC Paths entry for `path` (compared without regard to case), or null.
const smbfleet::v1::HardenedPath* HardenedEntry(const smbfleet::v1::ClientConfig& c,
                                                absl::string_view path) {
  for (const auto& h : c.hardened_paths()) {
    if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(h.path()), path)) return &h;
  }
  return nullptr;
}

constexpr absl::string_view kNetlogonPath = "\\\\*\\NETLOGON";
constexpr absl::string_view kSysvolPath = "\\\\*\\SYSVOL";

absl::string_view HardenedPathOf(Field field) {
  return field == Field::kClientHardenedUncNetlogon ? kNetlogonPath : kSysvolPath;
}

// A requirement the entry does not name is not required (Windows reads a missing flag as 0).
void HardenedRequirements(const smbfleet::v1::HardenedPath* h,
                          std::vector<absl::string_view>* out) {
  if (h == nullptr) return;
  if (h->require_mutual_authentication()) out->push_back(kHardenedMutualAuthentication);
  if (h->require_integrity()) out->push_back(kHardenedIntegrity);
  if (h->require_privacy()) out->push_back(kHardenedPrivacy);
}

Observed HardenedField(Field field, const smbfleet::v1::ClientConfig& c) {
  // Like the null session lists: no entry means "none configured" only when the agent read it.
  if (!(c.has_hardened_paths_known() && c.hardened_paths_known()) && c.hardened_paths_size() == 0) {
    return Observed{};
  }
  const smbfleet::v1::HardenedPath* h = HardenedEntry(c, HardenedPathOf(field));
  if (h == nullptr) return Observed{true, 0};
  return Observed{true, (h->require_mutual_authentication() ? 1u : 0u) +
                            (h->require_integrity() ? 1u : 0u) + (h->require_privacy() ? 1u : 0u)};
}

}  // namespace

const std::vector<FieldInfo>& AllFields() {
  static const std::vector<FieldInfo>* kFields = new std::vector<FieldInfo>{
      {Field::kServerSmb1Enabled, "server.smb1Enabled", B, H, PS},
      {Field::kServerSmb2Enabled, "server.smb2Enabled", B, H, PS},
      {Field::kServerRequireSigning, "server.requireSigning", B, H, PS},
      {Field::kServerEnableSigning, "server.enableSigning", B, H, PS},
      {Field::kServerEncryptData, "server.encryptData", B, H, PS},
      {Field::kServerRejectUnencryptedAccess, "server.rejectUnencryptedAccess", B, H, PS},
      {Field::kServerMultichannelEnabled, "server.multichannelEnabled", B, H, PS},
      {Field::kServerCompressionDisabled, "server.compressionDisabled", B, H, PS},
      {Field::kServerRequestCompression, "server.requestCompression", B, H, PS},
      {Field::kServerAuditSmb1Access, "server.auditSmb1Access", B, H, PS},
      {Field::kServerMinDialect, "server.minDialect", D, H, PS},
      {Field::kServerMaxDialect, "server.maxDialect", D, H, PS},
      {Field::kServerNameHardeningLevel, "server.nameHardeningLevel", U, H, PS},
      {Field::kServerQuicEnabled, "server.quicEnabled", B, H, PS},
      {Field::kServerAuditClientDoesNotSupportEncryption,
       "server.auditClientDoesNotSupportEncryption", B, H, PS},
      {Field::kServerAuditClientDoesNotSupportSigning, "server.auditClientDoesNotSupportSigning", B,
       H, PS},
      {Field::kServerAuditInsecureGuestLogon, "server.auditInsecureGuestLogon", B, H, PS},
      {Field::kServerAuditClientCertificateAccess, "server.auditClientCertificateAccess", B, H, PS},
      {Field::kServerNullSessionShares, "server.nullSessionShares", L, H, PS},
      {Field::kServerEnableAuthRateLimiter, "server.enableAuthRateLimiter", B, H, PS},
      {Field::kServerInvalidAuthenticationDelayMs, "server.invalidAuthenticationDelayMs", U, H, PS},
      {Field::kServerEnableMailslots, "server.enableMailslots", B, H, PS},
      {Field::kServerGuestAccessAllowed, "server.guestAccessAllowed", B, H, PS},
      {Field::kServerAutoDisconnectTimeoutMinutes, "server.autoDisconnectTimeoutMinutes", U, H, PS},
      {Field::kServerEnableForcedLogoff, "server.enableForcedLogoff", B, H, PS},
      {Field::kServerNullSessionPipes, "server.nullSessionPipes", L, H, PS},
      {Field::kServerRestrictNullSessionAccess, "server.restrictNullSessionAccess", B, H, PS},
      {Field::kClientRequireSigning, "client.requireSigning", B, H, PC},
      {Field::kClientEnableSigning, "client.enableSigning", B, H, PC},
      {Field::kClientEnableInsecureGuestLogons, "client.enableInsecureGuestLogons", B, H, PC},
      {Field::kClientSmb1Enabled, "client.smb1Enabled", B, H, PC},
      {Field::kClientRequireEncryption, "client.requireEncryption", B, H, PC},
      {Field::kClientMinDialect, "client.minDialect", D, H, PC},
      {Field::kClientMaxDialect, "client.maxDialect", D, H, PC},
      {Field::kClientAuditInsecureGuestLogon, "client.auditInsecureGuestLogon", B, H, PC},
      {Field::kClientAuditServerDoesNotSupportEncryption,
       "client.auditServerDoesNotSupportEncryption", B, H, PC},
      {Field::kClientAuditServerDoesNotSupportSigning, "client.auditServerDoesNotSupportSigning", B,
       H, PC},
      {Field::kClientBlockNtlm, "client.blockNtlm", B, H, PC},
      {Field::kClientCompressionDisabled, "client.compressionDisabled", B, H, PC},
      {Field::kClientRequestCompression, "client.requestCompression", B, H, PC},
      {Field::kClientEnablePlainTextPassword, "client.enablePlainTextPassword", B, H, PC},
      {Field::kClientHardenedUncNetlogon, "client.hardenedUncNetlogon", L, H, PC},
      {Field::kClientHardenedUncSysvol, "client.hardenedUncSysvol", L, H, PC},
      {Field::kShareEncryptData, "share.encryptData", B, S, PSh},
      {Field::kShareCompressData, "share.compressData", B, S, PSh},
      {Field::kShareGuestOk, "share.guestOk", B, S, PSh},
      {Field::kShareContinuouslyAvailable, "share.continuouslyAvailable", B, S, PSh},
      {Field::kShareEncrypted, "share.encrypted", B, S, PSh},
      {Field::kShareRejectsUnencrypted, "share.rejectsUnencrypted", B, S, PSh},
      {Field::kShareCompressed, "share.compressed", B, S, PSh},
  };
  return *kFields;
}

const FieldInfo& InfoOf(Field field) { return AllFields()[static_cast<size_t>(field)]; }

const FieldInfo* LookupField(absl::string_view name) {
  for (const FieldInfo& f : AllFields()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Observed ReadHostField(Field field, const Posture& p) {
  const auto& s = p.server();
  const auto& c = p.client();
  switch (field) {
    case Field::kServerSmb1Enabled:
      return Bool(s.has_smb1_enabled(), s.smb1_enabled());
    case Field::kServerSmb2Enabled:
      return Bool(s.has_smb2_enabled(), s.smb2_enabled());
    case Field::kServerRequireSigning:
      return Bool(s.has_require_signing(), s.require_signing());
    case Field::kServerEnableSigning:
      return Bool(s.has_enable_signing(), s.enable_signing());
    case Field::kServerEncryptData:
      return Bool(s.has_encrypt_data(), s.encrypt_data());
    case Field::kServerRejectUnencryptedAccess:
      return Bool(s.has_reject_unencrypted_access(), s.reject_unencrypted_access());
    case Field::kServerMultichannelEnabled:
      return Bool(s.has_multichannel_enabled(), s.multichannel_enabled());
    case Field::kServerCompressionDisabled:
      return Bool(s.has_compression_disabled(), s.compression_disabled());
    case Field::kServerRequestCompression:
      return Bool(s.has_request_compression(), s.request_compression());
    case Field::kServerAuditSmb1Access:
      return Bool(s.has_audit_smb1_access(), s.audit_smb1_access());
    case Field::kServerMinDialect:
      return Uint(s.has_min_dialect() && s.min_dialect() != v1::DIALECT_UNSPECIFIED,
                  static_cast<uint32_t>(s.min_dialect()));
    case Field::kServerMaxDialect:
      return Uint(s.has_max_dialect() && s.max_dialect() != v1::DIALECT_UNSPECIFIED,
                  static_cast<uint32_t>(s.max_dialect()));
    case Field::kServerNameHardeningLevel:
      return Uint(s.has_name_hardening_level(), s.name_hardening_level());
    case Field::kServerQuicEnabled:
      return Bool(s.has_quic_enabled(), s.quic_enabled());
    case Field::kServerAuditClientDoesNotSupportEncryption:
      return Bool(s.has_audit_client_does_not_support_encryption(),
                  s.audit_client_does_not_support_encryption());
    case Field::kServerAuditClientDoesNotSupportSigning:
      return Bool(s.has_audit_client_does_not_support_signing(),
                  s.audit_client_does_not_support_signing());
    case Field::kServerAuditInsecureGuestLogon:
      return Bool(s.has_audit_insecure_guest_logon(), s.audit_insecure_guest_logon());
    case Field::kServerAuditClientCertificateAccess:
      return Bool(s.has_audit_client_certificate_access(), s.audit_client_certificate_access());
    case Field::kServerNullSessionShares:
      // An empty repeated field is "none" only when the agent says it read the setting.
      return Uint((s.has_null_session_shares_known() && s.null_session_shares_known()) ||
                      s.null_session_shares_size() > 0,
                  static_cast<uint32_t>(s.null_session_shares_size()));
    case Field::kServerEnableAuthRateLimiter:
      return Bool(s.has_enable_auth_rate_limiter(), s.enable_auth_rate_limiter());
    case Field::kServerInvalidAuthenticationDelayMs:
      return Uint(s.has_invalid_authentication_delay_ms(), s.invalid_authentication_delay_ms());
    case Field::kServerEnableMailslots:
      return Bool(s.has_enable_mailslots(), s.enable_mailslots());
    case Field::kServerGuestAccessAllowed:
      return Bool(s.has_guest_access_allowed(), s.guest_access_allowed());
    case Field::kServerAutoDisconnectTimeoutMinutes:
      return Uint(s.has_auto_disconnect_timeout_minutes(), s.auto_disconnect_timeout_minutes());
    case Field::kServerEnableForcedLogoff:
      return Bool(s.has_enable_forced_logoff(), s.enable_forced_logoff());
    case Field::kServerNullSessionPipes:
      return Uint((s.has_null_session_pipes_known() && s.null_session_pipes_known()) ||
                      s.null_session_pipes_size() > 0,
                  static_cast<uint32_t>(s.null_session_pipes_size()));
    case Field::kServerRestrictNullSessionAccess:
      return Bool(s.has_restrict_null_session_access(), s.restrict_null_session_access());
    case Field::kClientRequireSigning:
      return Bool(c.has_require_signing(), c.require_signing());
    case Field::kClientEnableSigning:
      return Bool(c.has_enable_signing(), c.enable_signing());
    case Field::kClientEnableInsecureGuestLogons:
      return Bool(c.has_enable_insecure_guest_logons(), c.enable_insecure_guest_logons());
    case Field::kClientSmb1Enabled:
      return Bool(c.has_smb1_enabled(), c.smb1_enabled());
    case Field::kClientRequireEncryption:
      return Bool(c.has_require_encryption(), c.require_encryption());
    case Field::kClientMinDialect:
      return Uint(c.has_min_dialect() && c.min_dialect() != v1::DIALECT_UNSPECIFIED,
                  static_cast<uint32_t>(c.min_dialect()));
    case Field::kClientMaxDialect:
      return Uint(c.has_max_dialect() && c.max_dialect() != v1::DIALECT_UNSPECIFIED,
                  static_cast<uint32_t>(c.max_dialect()));
    case Field::kClientAuditInsecureGuestLogon:
      return Bool(c.has_audit_insecure_guest_logon(), c.audit_insecure_guest_logon());
    case Field::kClientAuditServerDoesNotSupportEncryption:
      return Bool(c.has_audit_server_does_not_support_encryption(),
                  c.audit_server_does_not_support_encryption());
    case Field::kClientAuditServerDoesNotSupportSigning:
      return Bool(c.has_audit_server_does_not_support_signing(),
                  c.audit_server_does_not_support_signing());
    case Field::kClientBlockNtlm:
      return Bool(c.has_block_ntlm(), c.block_ntlm());
    case Field::kClientCompressionDisabled:
      return Bool(c.has_compression_disabled(), c.compression_disabled());
    case Field::kClientRequestCompression:
      return Bool(c.has_request_compression(), c.request_compression());
    case Field::kClientEnablePlainTextPassword:
      return Bool(c.has_enable_plain_text_password(), c.enable_plain_text_password());
    case Field::kClientHardenedUncNetlogon:
    case Field::kClientHardenedUncSysvol:
      return HardenedField(field, c);
    default:
      return Observed{};
  }
}

Observed ReadShareField(Field field, const Posture& p, const Share& sh) {
  switch (field) {
    case Field::kShareEncryptData:
      return Bool(sh.has_encrypt_data(), sh.encrypt_data());
    case Field::kShareCompressData:
      return Bool(sh.has_compress_data(), sh.compress_data());
    case Field::kShareGuestOk:
      return Bool(sh.has_guest_ok(), sh.guest_ok());
    case Field::kShareContinuouslyAvailable:
      return Bool(sh.has_continuously_available(), sh.continuously_available());
    case Field::kShareEncrypted:
      return ShareEncrypted(p, sh);
    case Field::kShareRejectsUnencrypted:
      return ShareRejectsUnencrypted(p, sh);
    case Field::kShareCompressed: {
      const auto& srv = p.server();
      if ((sh.has_compress_data() && sh.compress_data()) ||
          (srv.has_request_compression() && srv.request_compression())) {
        return Observed{true, 1};
      }
      if (sh.has_compress_data() && srv.has_request_compression()) return Observed{true, 0};
      return Observed{};
    }
    default:
      return ReadHostField(field, p);
  }
}

void ReadListField(Field field, const Posture& p, std::vector<absl::string_view>* out) {
  out->clear();
  switch (field) {
    case Field::kServerNullSessionShares:
      for (const std::string& s : p.server().null_session_shares()) out->push_back(s);
      return;
    case Field::kServerNullSessionPipes:
      for (const std::string& s : p.server().null_session_pipes()) out->push_back(s);
      return;
    case Field::kClientHardenedUncNetlogon:
    case Field::kClientHardenedUncSysvol:
      HardenedRequirements(HardenedEntry(p.client(), HardenedPathOf(field)), out);
      return;
    default:
      return;
  }
}

absl::Span<const absl::string_view> ListVocabulary(Field field) {
  static constexpr absl::string_view kHardened[] = {kHardenedMutualAuthentication,
                                                    kHardenedIntegrity, kHardenedPrivacy};
  if (field == Field::kClientHardenedUncNetlogon || field == Field::kClientHardenedUncSysvol) {
    return kHardened;
  }
  return {};
}

absl::string_view DialectName(Dialect d) {
  switch (d) {
    case v1::DIALECT_SMB1:
      return "SMB1";
    case v1::DIALECT_SMB_2_0_2:
      return "SMB_2_0_2";
    case v1::DIALECT_SMB_2_1:
      return "SMB_2_1";
    case v1::DIALECT_SMB_3_0:
      return "SMB_3_0";
    case v1::DIALECT_SMB_3_0_2:
      return "SMB_3_0_2";
    case v1::DIALECT_SMB_3_1_1:
      return "SMB_3_1_1";
    default:
      return "UNSPECIFIED";
  }
}

bool ParseDialectName(absl::string_view name, Dialect* out) {
  std::string n = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(name));
  if (absl::StartsWith(n, "DIALECT_")) n = n.substr(8);
  for (Dialect d : {v1::DIALECT_SMB1, v1::DIALECT_SMB_2_0_2, v1::DIALECT_SMB_2_1,
                    v1::DIALECT_SMB_3_0, v1::DIALECT_SMB_3_0_2, v1::DIALECT_SMB_3_1_1}) {
    if (n == DialectName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

std::string FormatValue(FieldType type, uint32_t value) {
  switch (type) {
    case FieldType::kBool:
      return value != 0 ? "true" : "false";
    case FieldType::kDialect:
      return std::string(DialectName(static_cast<Dialect>(value)));
    case FieldType::kUint:
    case FieldType::kList:
      return absl::StrCat(value);
  }
  return "";
}

std::string FormatObserved(const FieldInfo& info, const Observed& v, const Posture& p) {
  if (!v.known) return "(unset)";
  if (info.type == FieldType::kList) {
    std::vector<absl::string_view> items;
    ReadListField(info.field, p, &items);
    return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
  }
  return FormatValue(info.type, v.value);
}

}  // namespace smbfleet::policy

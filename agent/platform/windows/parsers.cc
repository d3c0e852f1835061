#include "agent/platform/windows/parsers.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/platform/windows/ps_json.h"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;

std::string Where(absl::string_view what, size_t i) { return absl::StrCat(what, "[", i, "]"); }

// Copies every scalar property not in `typed` into a raw map, so that nothing the host said is
// lost even when the contract has no field for it.
void CopyRaw(const nlohmann::json& object, const std::set<std::string>& typed,
             google::protobuf::Map<std::string, std::string>* raw) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (typed.count(it.key()) != 0 || it->is_object()) continue;
    (*raw)[it.key()] = ScalarText(*it);
  }
}

// Smb2DialectMin/Max are uint32 ValueMap values (514 ... 785), names (SMB202 ... SMB311) or
// "None": 0 for Min, 65535 (65536 in the registry) for Max. "None" means no restriction, so the
// effective bound is the lowest / highest SMB2+ dialect.
std::optional<v1::Dialect> DialectBound(const PsObject& o, absl::string_view name, bool is_min) {
  const nlohmann::json* v = o.Find(name);
  if (v == nullptr) return std::nullopt;
  std::string text = ScalarText(*v);
  std::string stripped(absl::StripAsciiWhitespace(text));
  uint64_t n = 0;
  bool numeric = absl::SimpleAtoi(stripped, &n);
  if (absl::EqualsIgnoreCase(stripped, "None") || (numeric && is_min && n == 0) ||
      (numeric && !is_min && (n == 65535 || n == 65536))) {
    return is_min ? v1::DIALECT_SMB_2_0_2 : v1::DIALECT_SMB_3_1_1;
  }
  v1::Dialect d = ParseDialect(stripped);
  if (d == v1::DIALECT_UNSPECIFIED || d == v1::DIALECT_SMB1) {
    o.Problem(name, absl::StrCat("not a known SMB2 dialect value: ", v->dump()));
    return std::nullopt;
  }
  return d;
}

void Ciphers(const PsObject& o, google::protobuf::RepeatedField<int>* out) {
  auto list = o.StringList("EncryptionCiphers");
  if (!list.has_value()) return;
  for (const auto& c : *list) {
    v1::CryptoAlgorithm a = ParseCipher(c);
    if (a != v1::CRYPTO_ALGORITHM_UNSPECIFIED) out->Add(a);
  }
}

std::string EnumName(const PsObject& o, absl::string_view name,
                     const std::map<uint64_t, absl::string_view>& names) {
  const nlohmann::json* v = o.Find(name);
  if (v == nullptr) return "";
  if (v->is_string()) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(v->get<std::string>(), &n)) {
      return absl::StrReplaceAll(v->get<std::string>(),
                                 {{" ", ""}});  // "Interprocess Communication"
    }
    auto it = names.find(n);
    return it == names.end() ? v->get<std::string>() : std::string(it->second);
  }
  if (v->is_number_unsigned() || v->is_number_integer()) {
    auto it = names.find(v->get<uint64_t>());
    if (it != names.end()) return std::string(it->second);
  }
  return ScalarText(*v);
}

bool IsIpAddress(absl::string_view s) {
  if (s.empty()) return false;
  std::vector<absl::string_view> parts = absl::StrSplit(s, '.');
  if (parts.size() == 4) {
    bool ok = true;
    for (auto p : parts) {
      int n = 0;
      if (p.empty() || p.size() > 3 || !absl::SimpleAtoi(p, &n) || n < 0 || n > 255) ok = false;
    }
    if (ok) return true;
  }
  if (s.find(':') == absl::string_view::npos) return false;
  for (char c : s) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.' && c != '%') {
      return false;
    }
  }
  return true;
}

// ClientComputerName is an address ("192.168.1.5", "[fe80::1]") or, with name resolution, a name.
void SplitClient(absl::string_view client, std::string* address, std::string* name) {
  absl::string_view c = absl::StripAsciiWhitespace(client);
  absl::string_view inner = c;
  if (absl::ConsumePrefix(&inner, "[")) absl::ConsumeSuffix(&inner, "]");
  if (IsIpAddress(inner)) {
    *address = std::string(inner);
  } else {
    *name = std::string(c);
  }
}

using Objects = std::vector<nlohmann::json>;

absl::StatusOr<Objects> Load(absl::string_view bytes, absl::string_view what) {
  return ParsePsObjects(bytes, what);
}

// Returns the single configuration object (the cmdlet returns exactly one).
absl::StatusOr<std::optional<nlohmann::json>> LoadOne(absl::string_view bytes,
                                                      absl::string_view what) {
  auto objects = Load(bytes, what);
  if (!objects.ok()) return objects.status();
  if (objects->empty()) return std::optional<nlohmann::json>();
  if (objects->size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected one configuration object, got ", objects->size()));
  }
  return std::optional<nlohmann::json>(std::move(objects->front()));
}

#define SMBFLEET_SET_OPT(obj, prop, target, setter) \
  do {                                              \
    auto v_ = (obj).prop;                           \
    if (v_.has_value()) (target)->setter(*v_);      \
  } while (0)

}  // namespace

v1::Dialect ParseDialect(absl::string_view text) {
  std::string s = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  uint64_t n = 0;
  if (absl::StartsWith(s, "0X")) {
    if (absl::SimpleHexAtoi(s.substr(2), &n)) {
      s = absl::StrCat(n);
    }
  }
  if (absl::SimpleAtoi(s, &n) && n >= 0x200) {
    switch (n) {
      case 0x0202:
        return v1::DIALECT_SMB_2_0_2;
      case 0x0210:
        return v1::DIALECT_SMB_2_1;
      case 0x0300:
        return v1::DIALECT_SMB_3_0;
      case 0x0302:
        return v1::DIALECT_SMB_3_0_2;
      case 0x0311:
        return v1::DIALECT_SMB_3_1_1;
      default:
        return v1::DIALECT_UNSPECIFIED;
    }
  }
  absl::string_view body = s;
  absl::ConsumePrefix(&body, "SMB");
  std::string compact = absl::StrReplaceAll(body, {{"_", "."}, {" ", ""}});
  if (compact == "1" || compact == "NTLM0.12" || compact == "NTLM.0.12") return v1::DIALECT_SMB1;
  // Major, then the remaining digits: "3.1.1" and "3.11" -> 3,"11"; "3.02" and "3.0.2" -> 3,"02".
  std::string major, rest;
  if (compact.find('.') != std::string::npos) {
    std::vector<std::string> parts = absl::StrSplit(compact, '.');
    major = parts[0];
    for (size_t i = 1; i < parts.size(); ++i) rest += parts[i];
  } else if (compact.size() == 3 || compact.size() == 2) {  // "311", "202", "21", "30"
    major = compact.substr(0, 1);
    rest = compact.substr(1);
  } else {
    major = compact;
  }
  while (!rest.empty() && rest.back() == '0') rest.pop_back();
  if (major == "1") return v1::DIALECT_SMB1;
  if (major == "2") {
    if (rest == "02" || rest == "002") return v1::DIALECT_SMB_2_0_2;
    if (rest == "1") return v1::DIALECT_SMB_2_1;
  }
  if (major == "3") {
    if (rest.empty()) return v1::DIALECT_SMB_3_0;
    if (rest == "02") return v1::DIALECT_SMB_3_0_2;
    if (rest == "11") return v1::DIALECT_SMB_3_1_1;
  }
  return v1::DIALECT_UNSPECIFIED;
}

v1::CryptoAlgorithm ParseCipher(absl::string_view text) {
  std::string s = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  s = absl::StrReplaceAll(s, {{"_", ""}, {"-", ""}, {" ", ""}});
  if (s == "AES128GCM") return v1::AES_128_GCM;
  if (s == "AES128CCM") return v1::AES_128_CCM;
  if (s == "AES256GCM") return v1::AES_256_GCM;
  if (s == "AES256CCM") return v1::AES_256_CCM;
  if (s == "AES128CMAC" || s == "AESCMAC") return v1::AES_128_CMAC;
  if (s == "AES128GMAC" || s == "AESGMAC") return v1::AES_128_GMAC;
  if (s == "HMACSHA256") return v1::HMAC_SHA256;
  return v1::CRYPTO_ALGORITHM_UNSPECIFIED;
}

absl::Status ParseHostInfo(absl::string_view bytes, absl::string_view what, v1::Posture* posture,
                           std::vector<std::string>* problems) {
  auto one = LoadOne(bytes, what);
  if (!one.ok()) return one.status();
  if (!one->has_value()) return absl::OkStatus();
  PsObject o(**one, std::string(what), problems);
  v1::HostInfo* h = posture->mutable_host();
  h->set_platform(v1::PLATFORM_WINDOWS);
  if (auto v = o.String("ComputerName")) h->set_hostname(*v);
  if (auto v = o.String("Domain")) h->set_domain(*v);
  if (auto v = o.String("DnsHostName");
      v.has_value() && !h->domain().empty() && o.Bool("PartOfDomain").value_or(false)) {
    h->set_fqdn(absl::StrCat(*v, ".", h->domain()));
  } else if (v.has_value()) {
    h->set_fqdn(*v);
  }
  SMBFLEET_SET_OPT(o, Bool("PartOfDomain"), h, set_domain_joined);
  if (auto v = o.String("OsCaption")) h->set_os_name(*v);
  if (auto v = o.String("OsVersion")) h->set_os_version(*v);
  if (auto v = o.String("OsBuildNumber")) {
    std::string build = *v;
    if (auto ubr = o.Uint64("UBR")) absl::StrAppend(&build, ".", *ubr);
    h->set_os_build(build);
  }
  if (auto n = o.Uint64("NumberOfLogicalProcessors")) {
    h->set_logical_cores(static_cast<uint32_t>(*n));
  }
  if (auto v = o.String("CpuName")) h->mutable_cpu()->set_model(*v);
  if (const nlohmann::json* f = o.Find("CpuFeatures"); f != nullptr && f->is_object()) {
    PsObject cf(*f, absl::StrCat(what, ".CpuFeatures"), problems);
    v1::CpuFeatures* cpu = h->mutable_cpu();
    SMBFLEET_SET_OPT(cf, Bool("AesNi"), cpu, set_aes_ni);
    SMBFLEET_SET_OPT(cf, Bool("Pclmulqdq"), cpu, set_pclmulqdq);
    SMBFLEET_SET_OPT(cf, Bool("Vaes"), cpu, set_vaes);
    SMBFLEET_SET_OPT(cf, Bool("Vpclmulqdq"), cpu, set_vpclmulqdq);
    SMBFLEET_SET_OPT(cf, Bool("ShaNi"), cpu, set_sha_ni);
    SMBFLEET_SET_OPT(cf, Bool("Avx2"), cpu, set_avx2);
    SMBFLEET_SET_OPT(cf, Bool("Avx512F"), cpu, set_avx512f);
  }
  return absl::OkStatus();
}

namespace {

// Get-SmbServerConfiguration / Get-SmbClientConfiguration always return exactly one object.
absl::StatusOr<nlohmann::json> LoadConfigurationObject(absl::string_view bytes,
                                                       absl::string_view what) {
  auto one = LoadOne(bytes, what);
  if (!one.ok()) return one.status();
  if (!one->has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": empty (no configuration object)"));
  }
  return **std::move(one);
}

// Idle minutes before the server suspends a session. Windows Server 2025 reports
// AutoDisconnectTimeoutInMinutesV1 (and the seconds in AutoDisconnectTimeoutInSecondsV2); earlier
// builds AutoDisconnectTimeout (minutes). The WS2025 documentation's sample still prints
// AutoDisconnectTimeout, so V1 wins when both appear. Only the seconds given: rounded up to whole
// minutes, so that "at most N minutes" never passes on a longer timeout.
std::optional<uint32_t> AutoDisconnectMinutes(const PsObject& o) {
  for (absl::string_view name : {"AutoDisconnectTimeoutInMinutesV1", "AutoDisconnectTimeout"}) {
    if (!o.Has(name)) continue;
    auto n = o.Uint64(name);
    if (!n.has_value()) return std::nullopt;  // the wrong shape: a problem, not a fallback
    if (*n > UINT32_MAX) {
      o.Problem(name, absl::StrCat("beyond a 32-bit count of minutes: ", *n));
      return std::nullopt;
    }
    return static_cast<uint32_t>(*n);
  }
  if (auto seconds = o.Uint64("AutoDisconnectTimeoutInSecondsV2")) {
    uint64_t minutes = *seconds / 60 + (*seconds % 60 != 0 ? 1 : 0);
    if (minutes <= UINT32_MAX) return static_cast<uint32_t>(minutes);
  }
  return std::nullopt;
}

}  // namespace

absl::Status ParseServerConfiguration(absl::string_view bytes, absl::string_view what,
                                      v1::Posture* posture, std::vector<std::string>* problems) {
  auto config = LoadConfigurationObject(bytes, what);
  if (!config.ok()) return config.status();
  PsObject o(*config, std::string(what), problems);
  v1::ServerConfig* s = posture->mutable_server();
  SMBFLEET_SET_OPT(o, Bool("EnableSMB1Protocol"), s, set_smb1_enabled);
  SMBFLEET_SET_OPT(o, Bool("EnableSMB2Protocol"), s, set_smb2_enabled);
  SMBFLEET_SET_OPT(o, Bool("RequireSecuritySignature"), s, set_require_signing);
  SMBFLEET_SET_OPT(o, Bool("EnableSecuritySignature"), s, set_enable_signing);
  SMBFLEET_SET_OPT(o, Bool("EncryptData"), s, set_encrypt_data);
  SMBFLEET_SET_OPT(o, Bool("RejectUnencryptedAccess"), s, set_reject_unencrypted_access);
  SMBFLEET_SET_OPT(o, Bool("EnableMultiChannel"), s, set_multichannel_enabled);
  SMBFLEET_SET_OPT(o, Bool("DisableCompression"), s, set_compression_disabled);
  SMBFLEET_SET_OPT(o, Bool("RequestCompression"), s, set_request_compression);
  SMBFLEET_SET_OPT(o, Bool("AuditSmb1Access"), s, set_audit_smb1_access);
  if (auto d = DialectBound(o, "Smb2DialectMin", true)) s->set_min_dialect(*d);
  if (auto d = DialectBound(o, "Smb2DialectMax", false)) s->set_max_dialect(*d);
  Ciphers(o, s->mutable_encryption_ciphers());
  if (auto n = o.Uint64("SmbServerNameHardeningLevel")) {
    s->set_name_hardening_level(static_cast<uint32_t>(*n));
  }
  SMBFLEET_SET_OPT(o, Bool("EnableSMBQUIC"), s, set_quic_enabled);
  SMBFLEET_SET_OPT(o, Bool("AuditClientDoesNotSupportEncryption"), s,
                   set_audit_client_does_not_support_encryption);
  SMBFLEET_SET_OPT(o, Bool("AuditClientDoesNotSupportSigning"), s,
                   set_audit_client_does_not_support_signing);
  SMBFLEET_SET_OPT(o, Bool("AuditInsecureGuestLogon"), s, set_audit_insecure_guest_logon);
  SMBFLEET_SET_OPT(o, Bool("AuditClientCertificateAccess"), s, set_audit_client_certificate_access);
  if (auto list = o.StringList("NullSessionShares")) {
    for (const auto& share : *list) s->add_null_session_shares(share);
    s->set_null_session_shares_known(true);
  }
  SMBFLEET_SET_OPT(o, Bool("EnableAuthRateLimiter"), s, set_enable_auth_rate_limiter);
  if (auto n = o.Uint64("InvalidAuthenticationDelayTimeInMs")) {
    s->set_invalid_authentication_delay_ms(static_cast<uint32_t>(*n));
  }
  SMBFLEET_SET_OPT(o, Bool("DisableSmbEncryptionOnSecureConnection"), s,
                   set_disable_smb_encryption_on_secure_connection);
  SMBFLEET_SET_OPT(o, Bool("EnableMailslots"), s, set_enable_mailslots);
  if (auto minutes = AutoDisconnectMinutes(o)) s->set_auto_disconnect_timeout_minutes(*minutes);
  SMBFLEET_SET_OPT(o, Bool("EnableForcedLogoff"), s, set_enable_forced_logoff);
  // A comma-joined string ("" = none) or, from the registry's REG_MULTI_SZ, an array.
  if (auto list = o.StringList("NullSessionPipes")) {
    for (const auto& pipe : *list) s->add_null_session_pipes(pipe);
    s->set_null_session_pipes_known(true);
  }
  static const std::set<std::string>* kTyped =
      new std::set<std::string>{"EnableSMB1Protocol",
                                "EnableSMB2Protocol",
                                "RequireSecuritySignature",
                                "EnableSecuritySignature",
                                "EncryptData",
                                "RejectUnencryptedAccess",
                                "EnableMultiChannel",
                                "DisableCompression",
                                "RequestCompression",
                                "AuditSmb1Access",
                                "SmbServerNameHardeningLevel",
                                "EnableSMBQUIC",
                                "AuditClientDoesNotSupportEncryption",
                                "AuditClientDoesNotSupportSigning",
                                "AuditInsecureGuestLogon",
                                "AuditClientCertificateAccess",
                                "EnableAuthRateLimiter",
                                "InvalidAuthenticationDelayTimeInMs",
                                "DisableSmbEncryptionOnSecureConnection",
                                "EnableMailslots",
                                "AutoDisconnectTimeout",
                                "AutoDisconnectTimeoutInMinutesV1",
                                "EnableForcedLogoff"};
  CopyRaw(o.json(), *kTyped, s->mutable_raw());
  return absl::OkStatus();
}

absl::Status ParseClientConfiguration(absl::string_view bytes, absl::string_view what,
                                      v1::Posture* posture, std::vector<std::string>* problems) {
  auto config = LoadConfigurationObject(bytes, what);
  if (!config.ok()) return config.status();
  PsObject o(*config, std::string(what), problems);
  v1::ClientConfig* c = posture->mutable_client();
  SMBFLEET_SET_OPT(o, Bool("RequireSecuritySignature"), c, set_require_signing);
  SMBFLEET_SET_OPT(o, Bool("EnableSecuritySignature"), c, set_enable_signing);
  SMBFLEET_SET_OPT(o, Bool("EnableInsecureGuestLogons"), c, set_enable_insecure_guest_logons);
  SMBFLEET_SET_OPT(o, Bool("RequireEncryption"), c, set_require_encryption);
  SMBFLEET_SET_OPT(o, Bool("EnableMultiChannel"), c, set_multichannel_enabled);
  SMBFLEET_SET_OPT(o, Bool("DisableCompression"), c, set_compression_disabled);
  SMBFLEET_SET_OPT(o, Bool("RequestCompression"), c, set_request_compression);
  if (auto d = DialectBound(o, "Smb2DialectMin", true)) c->set_min_dialect(*d);
  if (auto d = DialectBound(o, "Smb2DialectMax", false)) c->set_max_dialect(*d);
  Ciphers(o, c->mutable_encryption_ciphers());
  SMBFLEET_SET_OPT(o, Bool("AuditInsecureGuestLogon"), c, set_audit_insecure_guest_logon);
  SMBFLEET_SET_OPT(o, Bool("AuditServerDoesNotSupportEncryption"), c,
                   set_audit_server_does_not_support_encryption);
  SMBFLEET_SET_OPT(o, Bool("AuditServerDoesNotSupportSigning"), c,
                   set_audit_server_does_not_support_signing);
  SMBFLEET_SET_OPT(o, Bool("BlockNTLM"), c, set_block_ntlm);
  SMBFLEET_SET_OPT(o, Bool("EnableSMBQUIC"), c, set_quic_enabled);
  SMBFLEET_SET_OPT(o, Bool("EnableCompressibilitySampling"), c,
                   set_enable_compressibility_sampling);
  SMBFLEET_SET_OPT(o, Uint64("CompressibilitySamplingSize"), c, set_compressibility_sampling_size);
  SMBFLEET_SET_OPT(o, Uint64("CompressibleThreshold"), c, set_compressible_threshold);
  static const std::set<std::string>* kTyped =
      new std::set<std::string>{"RequireSecuritySignature",
                                "EnableSecuritySignature",
                                "EnableInsecureGuestLogons",
                                "RequireEncryption",
                                "EnableMultiChannel",
                                "DisableCompression",
                                "RequestCompression",
                                "AuditInsecureGuestLogon",
                                "AuditServerDoesNotSupportEncryption",
                                "AuditServerDoesNotSupportSigning",
                                "BlockNTLM",
                                "EnableSMBQUIC",
                                "EnableCompressibilitySampling",
                                "CompressibilitySamplingSize",
                                "CompressibleThreshold"};
  CopyRaw(o.json(), *kTyped, c->mutable_raw());
  return absl::OkStatus();
}

absl::Status ParseShares(absl::string_view bytes, absl::string_view what, v1::Posture* posture,
                         std::vector<std::string>* problems) {
  auto objects = Load(bytes, what);
  if (!objects.ok()) return objects.status();
  static const std::map<uint64_t, absl::string_view> kShareType = {{0, "FileSystemDirectory"},
                                                                   {1, "PrintQueue"},
                                                                   {2, "CommunicationDevice"},
                                                                   {3, "InterprocessCommunication"},
                                                                   {4, "Unknown"}};
  static const std::map<uint64_t, absl::string_view> kShareState = {
      {0, "Pending"}, {1, "Online"}, {2, "Offline"}};
  static const std::map<uint64_t, absl::string_view> kCaching = {
      {0, "None"},     {1, "Manual"},      {2, "Documents"},
      {3, "Programs"}, {4, "BranchCache"}, {5, "Unknown"}};
  static const std::map<uint64_t, absl::string_view> kFolderEnum = {{0, "AccessBased"},
                                                                    {1, "Unrestricted"}};
  static const std::map<uint64_t, absl::string_view> kAvailability = {
      {0, "NonClustered"}, {1, "Clustered"}, {2, "ScaleOut"}, {3, "CSV"}, {4, "DFS"}};
  static const std::set<std::string>* kTyped = new std::set<std::string>{
      "Name",         "Path",       "EncryptData", "CompressData",          "Description",
      "Special",      "ShareType",  "ScopeName",   "ContinuouslyAvailable", "SecurityDescriptor",
      "CurrentUsers", "ShareState", "CachingMode", "FolderEnumerationMode", "AvailabilityType",
      "PresetPathAcl"};
  for (size_t i = 0; i < objects->size(); ++i) {
    PsObject o((*objects)[i], Where(what, i), problems);
    auto name = o.String("Name");
    if (!name.has_value() || name->empty()) {
      o.Problem("Name", "missing; share skipped");
      continue;
    }
    v1::Share* share = posture->add_shares();
    share->set_name(*name);
    if (auto v = o.String("Path")) share->set_path(*v);
    SMBFLEET_SET_OPT(o, Bool("EncryptData"), share, set_encrypt_data);
    SMBFLEET_SET_OPT(o, Bool("CompressData"), share, set_compress_data);
    if (auto v = o.String("Description")) share->set_description(*v);
    share->set_special(o.Bool("Special").value_or(false));
    share->set_share_type(EnumName(o, "ShareType", kShareType));
    if (auto v = o.String("ScopeName")) share->set_scope_name(*v);
    SMBFLEET_SET_OPT(o, Bool("ContinuouslyAvailable"), share, set_continuously_available);
    if (auto v = o.String("SecurityDescriptor")) share->set_security_descriptor(*v);
    if (auto n = o.Uint64("CurrentUsers")) share->set_current_users(static_cast<uint32_t>(*n));
    auto& raw = *share->mutable_raw();
    for (const auto& [prop, names] :
         std::vector<std::pair<absl::string_view, const std::map<uint64_t, absl::string_view>*>>{
             {"ShareState", &kShareState},
             {"CachingMode", &kCaching},
             {"FolderEnumerationMode", &kFolderEnum},
             {"AvailabilityType", &kAvailability}}) {
      if (o.Has(prop)) raw[std::string(prop)] = EnumName(o, prop, *names);
    }
    CopyRaw(o.json(), *kTyped, &raw);
  }
  return absl::OkStatus();
}

absl::Status ParseSessions(absl::string_view bytes, absl::string_view what, v1::Posture* posture,
                           std::vector<std::string>* problems) {
  auto objects = Load(bytes, what);
  if (!objects.ok()) return objects.status();
  for (size_t i = 0; i < objects->size(); ++i) {
    PsObject o((*objects)[i], Where(what, i), problems);
    auto id = o.IdString("SessionId");
    if (!id.has_value()) {
      o.Problem("SessionId", "missing; session skipped");
      continue;
    }
    v1::Session* s = posture->add_sessions();
    s->set_session_id(*id);
    if (auto v = o.String("ClientComputerName")) {
      SplitClient(*v, s->mutable_client_address(), s->mutable_client_name());
    }
    if (auto v = o.String("ClientUserName")) {
      s->set_user(*v);
      s->set_anonymous(absl::EndsWithIgnoreCase(*v, "ANONYMOUS LOGON"));
    }
    if (auto v = o.String("Dialect")) {
      s->set_dialect_raw(*v);
      s->set_dialect(ParseDialect(*v));
    }
    if (auto n = o.Uint64("NumOpens")) s->set_num_opens(*n);
    if (auto n = o.Uint64("SecondsExists")) s->set_seconds_exists(static_cast<uint32_t>(*n));
    if (auto n = o.Uint64("SecondsIdle")) s->set_seconds_idle(static_cast<uint32_t>(*n));
    // MSFT_SmbSession has no Signed/Encrypted: FinishPosture derives them from open files.
  }
  return absl::OkStatus();
}

absl::Status ParseConnections(absl::string_view bytes, absl::string_view what, v1::Posture* posture,
                              std::vector<std::string>* problems) {
  auto objects = Load(bytes, what);
  if (!objects.ok()) return objects.status();
  for (size_t i = 0; i < objects->size(); ++i) {
    PsObject o((*objects)[i], Where(what, i), problems);
    v1::Connection* c = posture->add_connections();
    if (auto v = o.String("ServerName")) c->set_server_name(*v);
    if (auto v = o.String("ShareName")) c->set_share_name(*v);
    if (auto v = o.String("UserName")) c->set_user(*v);
    if (auto v = o.String("Dialect")) {
      c->set_dialect_raw(*v);
      c->set_dialect(ParseDialect(*v));
    }
    SMBFLEET_SET_OPT(o, Bool("Signed"), c, set_signed_);
    SMBFLEET_SET_OPT(o, Bool("Encrypted"), c, set_encrypted);
    if (auto n = o.Uint64("NumOpens")) c->set_num_opens(*n);
    SMBFLEET_SET_OPT(o, Bool("ContinuouslyAvailable"), c, set_continuously_available);
    SMBFLEET_SET_OPT(o, Bool("Redirected"), c, set_redirected);
  }
  return absl::OkStatus();
}

absl::Status ParseMultichannelConnections(absl::string_view bytes, absl::string_view what,
                                          v1::Posture* posture,
                                          std::vector<std::string>* problems) {
  auto objects = Load(bytes, what);
  if (!objects.ok()) return objects.status();
  for (size_t i = 0; i < objects->size(); ++i) {
    PsObject o((*objects)[i], Where(what, i), problems);
    v1::MultichannelConnection* m = posture->add_multichannel_connections();
    if (auto v = o.String("ServerName")) m->set_server_name(*v);
    if (auto v = o.String("ClientIpAddress")) m->set_client_ip(*v);
    if (auto v = o.String("ServerIpAddress")) m->set_server_ip(*v);
    if (auto n = o.Uint64("ClientLinkSpeed")) m->set_client_link_speed_bps(*n);
    if (auto n = o.Uint64("ServerLinkSpeed")) m->set_server_link_speed_bps(*n);
    SMBFLEET_SET_OPT(o, Bool("ClientRSSCapable"), m, set_client_rss_capable);
    SMBFLEET_SET_OPT(o, Bool("ClientRdmaCapable"), m, set_client_rdma_capable);
    SMBFLEET_SET_OPT(o, Bool("ServerRSSCapable"), m, set_server_rss_capable);
    SMBFLEET_SET_OPT(o, Bool("ServerRdmaCapable"), m, set_server_rdma_capable);
    m->set_selected(o.Bool("Selected").value_or(false));
    m->set_failed(o.Bool("Failed").value_or(false));
    if (auto n = o.Uint64("CurrentChannels")) m->set_current_channels(static_cast<uint32_t>(*n));
    if (auto n = o.Uint64("MaxChannels")) m->set_max_channels(static_cast<uint32_t>(*n));
    if (auto v = o.String("ClientInterfaceFriendlyName")) m->set_client_interface(*v);
  }
  return absl::OkStatus();
}

absl::Status ParseOpenFiles(absl::string_view bytes, absl::string_view what, v1::Posture* posture,
                            std::vector<std::string>* problems) {
  auto objects = Load(bytes, what);
  if (!objects.ok()) return objects.status();
  for (size_t i = 0; i < objects->size(); ++i) {
    PsObject o((*objects)[i], Where(what, i), problems);
    v1::OpenFile* f = posture->add_open_files();
    if (auto v = o.IdString("FileId")) f->set_file_id(*v);
    if (auto v = o.IdString("SessionId")) f->set_session_id(*v);
    if (auto v = o.String("Path")) f->set_path(*v);
    if (auto v = o.String("ShareRelativePath")) f->set_share_relative_path(*v);
    if (auto v = o.String("ClientComputerName")) {
      std::string address, name;
      SplitClient(*v, &address, &name);
      f->set_client_address(address.empty() ? name : address);
    }
    if (auto v = o.String("ClientUserName")) f->set_user(*v);
    SMBFLEET_SET_OPT(o, Bool("Signed"), f, set_signed_);
    SMBFLEET_SET_OPT(o, Bool("Encrypted"), f, set_encrypted);
  }
  return absl::OkStatus();
}

namespace {

// The three NIC cmdlets may arrive in any order and any of them may be missing: each finds the
// interface another already added, by interface index (Get-NetAdapter ifIndex = SMB's
// InterfaceIndex) or else by name (Get-NetAdapter Name = SMB's FriendlyName = RSS's Name).
v1::Nic* NicFor(v1::Posture* posture, absl::string_view name, std::optional<uint64_t> index) {
  if (index.has_value()) {
    for (v1::Nic& nic : *posture->mutable_nics()) {
      if (nic.has_interface_index() && nic.interface_index() == *index) {
        if (nic.name().empty()) nic.set_name(std::string(name));
        return &nic;
      }
    }
  }
  for (v1::Nic& nic : *posture->mutable_nics()) {
    if (!name.empty() && nic.name() == name) {
      if (index.has_value() && !nic.has_interface_index()) {
        nic.set_interface_index(static_cast<uint32_t>(*index));
      }
      return &nic;
    }
  }
  v1::Nic* nic = posture->add_nics();
  nic->set_name(std::string(name));
  if (index.has_value()) nic->set_interface_index(static_cast<uint32_t>(*index));
  return nic;
}

// An index that fits the field (ifIndex is a uint32); anything else is a problem and unknown.
std::optional<uint64_t> InterfaceIndex(const PsObject& o, absl::string_view name) {
  auto n = o.Uint64(name);
  if (n.has_value() && *n > UINT32_MAX) {
    o.Problem(name, absl::StrCat("interface index ", *n, " is beyond 32 bits"));
    return std::nullopt;
  }
  return n;
}

// 0 is "no link"; 2^63-1 is what NDIS reports for "speed not known". Neither is a speed.
std::optional<uint64_t> LinkSpeed(const PsObject& o, absl::string_view name) {
  auto n = o.Uint64(name);
  if (!n.has_value() || *n == 0 || *n >= uint64_t{INT64_MAX}) return std::nullopt;
  return n;
}

// InterfaceOperationalStatus (IF_OPER_STATUS: 1 up, 2 down, ...) when numeric; else the
// Status text Get-NetAdapter shows ("Up", "Disconnected", "Disabled", "Not Present").
std::optional<bool> AdapterUp(const PsObject& o) {
  if (const nlohmann::json* v = o.Find("InterfaceOperationalStatus");
      v != nullptr && v->is_number_unsigned()) {
    return v->get<uint64_t>() == 1;
  }
  for (absl::string_view name : {"ifOperStatus", "Status"}) {
    const nlohmann::json* v = o.Find(name);
    if (v == nullptr || !v->is_string()) continue;
    absl::string_view text = absl::StripAsciiWhitespace(v->get<std::string>());
    if (absl::EqualsIgnoreCase(text, "Up")) return true;
    for (absl::string_view down : {"Down", "Disconnected", "Disabled", "Not Present"}) {
      if (absl::EqualsIgnoreCase(text, down)) return false;
    }
  }
  return std::nullopt;  // "OK", "Degraded" (CIM health, not link state) or nothing
}

}  // namespace

absl::Status ParseNetworkInterfaces(absl::string_view bytes, absl::string_view what,
                                    v1::Posture* posture, std::vector<std::string>* problems) {
  auto objects = Load(bytes, what);
  if (!objects.ok()) return objects.status();
  // Get-SmbServerNetworkInterface lists one row per IP address: one Nic per interface.
  for (size_t i = 0; i < objects->size(); ++i) {
    PsObject o((*objects)[i], Where(what, i), problems);
    std::optional<uint64_t> index = InterfaceIndex(o, "InterfaceIndex");
    std::string name = o.String("FriendlyName").value_or("");
    if (name.empty() && index.has_value()) name = absl::StrCat(*index);
    if (name.empty()) continue;
    v1::Nic* nic = NicFor(posture, name, index);
    // Get-NetAdapter's receive speed wins; SMB's LinkSpeed is the same figure when both exist.
    if (!nic->has_link_speed_bps()) {
      if (auto n = LinkSpeed(o, "LinkSpeed")) nic->set_link_speed_bps(*n);
    }
    SMBFLEET_SET_OPT(o, Bool("RssCapable"), nic, set_rss_capable);
    SMBFLEET_SET_OPT(o, Bool("RdmaCapable"), nic, set_rdma_capable);
  }
  return absl::OkStatus();
}

absl::Status ParseNetAdapters(absl::string_view bytes, absl::string_view what, v1::Posture* posture,
                              std::vector<std::string>* problems) {
  auto objects = Load(bytes, what);
  if (!objects.ok()) return objects.status();
  for (size_t i = 0; i < objects->size(); ++i) {
    PsObject o((*objects)[i], Where(what, i), problems);
    std::optional<uint64_t> index =
        o.Has("ifIndex") ? InterfaceIndex(o, "ifIndex") : InterfaceIndex(o, "InterfaceIndex");
    std::string name = o.String("Name").value_or("");
    if (name.empty()) {
      o.Problem("Name", "adapter without a name: skipped");
      continue;
    }
    v1::Nic* nic = NicFor(posture, name, index);
    if (auto v = o.String("InterfaceDescription")) nic->set_description(*v);
    // ReceiveLinkSpeed is the numeric form of the "10 Gbps" LinkSpeed text.
    std::optional<uint64_t> speed = LinkSpeed(o, "ReceiveLinkSpeed");
    if (!speed.has_value()) speed = LinkSpeed(o, "TransmitLinkSpeed");
    if (!speed.has_value()) speed = LinkSpeed(o, "Speed");
    if (speed.has_value()) nic->set_link_speed_bps(*speed);
    if (auto up = AdapterUp(o)) nic->set_up(*up);
    if (auto n = o.Uint64("MtuSize"); n.has_value() && *n > 0 && *n <= UINT32_MAX) {
      nic->set_mtu(static_cast<uint32_t>(*n));
    }
    std::string mac = o.String("MacAddress").value_or(o.String("PermanentAddress").value_or(""));
    if (!mac.empty()) nic->set_mac(mac);
    SMBFLEET_SET_OPT(o, Bool("HardwareInterface"), nic, set_physical);
  }
  return absl::OkStatus();
}

absl::Status ParseNetAdapterRss(absl::string_view bytes, absl::string_view what,
                                v1::Posture* posture, std::vector<std::string>* problems) {
  auto objects = Load(bytes, what);
  if (!objects.ok()) return objects.status();
  for (size_t i = 0; i < objects->size(); ++i) {
    PsObject o((*objects)[i], Where(what, i), problems);
    std::string name = o.String("Name").value_or("");
    if (name.empty()) {
      o.Problem("Name", "RSS settings without an adapter name: skipped");
      continue;
    }
    v1::Nic* nic = NicFor(posture, name, std::nullopt);
    if (nic->description().empty()) {
      if (auto v = o.String("InterfaceDescription")) nic->set_description(*v);
    }
    SMBFLEET_SET_OPT(o, Bool("Enabled"), nic, set_rss_enabled);
    if (auto n = o.Uint64("NumberOfReceiveQueues"); n.has_value() && *n <= UINT32_MAX) {
      nic->set_rss_queues(static_cast<uint32_t>(*n));
    }
  }
  return absl::OkStatus();
}

const std::vector<ProbeSpec>& WindowsProbes() {
  using v1::POSTURE_SECTION_CLIENT;
  using v1::POSTURE_SECTION_CONNECTIONS;
  using v1::POSTURE_SECTION_HOST;
  using v1::POSTURE_SECTION_NETWORK;
  using v1::POSTURE_SECTION_OPEN_FILES;
  using v1::POSTURE_SECTION_SERVER;
  using v1::POSTURE_SECTION_SESSIONS;
  using v1::POSTURE_SECTION_SHARES;
  static const std::vector<ProbeSpec>* kProbes = new std::vector<ProbeSpec>{
      {"host", "host.json", &ParseHostInfo, {POSTURE_SECTION_HOST}},
      {"Get-SmbServerConfiguration",
       "Get-SmbServerConfiguration.json",
       &ParseServerConfiguration,
       {POSTURE_SECTION_SERVER}},
      {"Get-SmbClientConfiguration",
       "Get-SmbClientConfiguration.json",
       &ParseClientConfiguration,
       {POSTURE_SECTION_CLIENT}},
      {"Get-SmbShare", "Get-SmbShare.json", &ParseShares, {POSTURE_SECTION_SHARES}},
      {"Get-SmbSession", "Get-SmbSession.json", &ParseSessions, {POSTURE_SECTION_SESSIONS}},
      {"Get-SmbConnection",
       "Get-SmbConnection.json",
       &ParseConnections,
       {POSTURE_SECTION_CONNECTIONS}},
      {"Get-SmbMultichannelConnection",
       "Get-SmbMultichannelConnection.json",
       &ParseMultichannelConnections,
       {POSTURE_SECTION_CONNECTIONS}},
      {"Get-SmbOpenFile", "Get-SmbOpenFile.json", &ParseOpenFiles, {POSTURE_SECTION_OPEN_FILES}},
      {"Get-SmbServerNetworkInterface",
       "Get-SmbServerNetworkInterface.json",
       &ParseNetworkInterfaces,
       {POSTURE_SECTION_NETWORK}},
      {"Registry-LanmanServer",
       "Registry-LanmanServer.json",
       &ParseLanmanServerRegistry,
       {POSTURE_SECTION_SERVER}},
      {"Registry-LanmanWorkstation",
       "Registry-LanmanWorkstation.json",
       &ParseLanmanWorkstationRegistry,
       {POSTURE_SECTION_CLIENT}},
      {"Registry-HardenedPaths",
       "Registry-HardenedPaths.json",
       &ParseHardenedPaths,
       {POSTURE_SECTION_CLIENT}},
      // Last, so that the fuzz corpora's probe numbers stay those of the older probes.
      {"Get-NetAdapter", "Get-NetAdapter.json", &ParseNetAdapters, {POSTURE_SECTION_NETWORK}},
      {"Get-NetAdapterRss",
       "Get-NetAdapterRss.json",
       &ParseNetAdapterRss,
       {POSTURE_SECTION_NETWORK}},
  };
  return *kProbes;
}

namespace {

v1::Protection Fraction(int yes, int known, int total) {
  if (total == 0) return v1::PROTECTION_UNSPECIFIED;
  if (known < total) {
    // Some opens did not say: only "some yes and some no" is certain.
    return (yes > 0 && known - yes > 0) ? v1::PROTECTION_PARTIAL : v1::PROTECTION_UNSPECIFIED;
  }
  if (yes == total) return v1::PROTECTION_FULL;
  if (yes == 0) return v1::PROTECTION_NONE;
  return v1::PROTECTION_PARTIAL;
}

struct Tally {
  int total = 0;
  int signed_known = 0, signed_yes = 0;
  int enc_known = 0, enc_yes = 0;
  void Add(const v1::OpenFile& f) {
    ++total;
    if (f.has_encrypted()) {
      ++enc_known;
      if (f.encrypted()) ++enc_yes;
    }
    // Encryption supersedes signing: an encrypted open is integrity-protected even though
    // Windows reports Signed=False for it.
    if (f.has_encrypted() && f.encrypted()) {
      ++signed_known;
      ++signed_yes;
    } else if (f.has_signed_()) {
      ++signed_known;
      if (f.signed_()) ++signed_yes;
    }
  }
};

std::string Lower(absl::string_view s) { return absl::AsciiStrToLower(s); }

// The share whose path is the longest prefix of the open file's path (case-insensitive, as NTFS).
std::string ShareOf(const v1::OpenFile& f, const v1::Posture& posture) {
  std::string path = Lower(f.path());
  std::string best;
  size_t best_len = 0;
  for (const auto& share : posture.shares()) {
    std::string root = Lower(share.path());
    if (root.empty()) continue;
    while (root.size() > 3 && (root.back() == '\\' || root.back() == '/')) root.pop_back();
    bool match = path == root || (absl::StartsWith(path, root) &&
                                  (root.back() == '\\' || path[root.size()] == '\\'));
    if (!match) continue;
    if (!f.share_relative_path().empty() && !absl::EndsWith(path, Lower(f.share_relative_path()))) {
      continue;
    }
    if (root.size() > best_len) {
      best_len = root.size();
      best = share.name();
    }
  }
  return best;
}

}  // namespace

void FinishPosture(v1::Posture* posture) {
  posture->mutable_host()->set_platform(v1::PLATFORM_WINDOWS);
  for (auto& f : *posture->mutable_open_files()) {
    if (f.share_name().empty()) f.set_share_name(ShareOf(f, *posture));
  }
  std::map<std::string, Tally> per_session;
  std::map<std::string, std::map<std::string, Tally>> per_session_share;
  for (const auto& f : posture->open_files()) {
    per_session[f.session_id()].Add(f);
    if (!f.share_name().empty()) per_session_share[f.session_id()][f.share_name()].Add(f);
  }
  for (auto& s : *posture->mutable_sessions()) {
    auto it = per_session.find(s.session_id());
    if (it == per_session.end()) continue;  // no open files: signing/encryption stay unknown
    const Tally& t = it->second;
    s.set_signing(Fraction(t.signed_yes, t.signed_known, t.total));
    s.set_encryption(Fraction(t.enc_yes, t.enc_known, t.total));
    if (s.shares_size() == 0) {
      for (const auto& [share, st] : per_session_share[s.session_id()]) {
        v1::ShareConnection* sc = s.add_shares();
        sc->set_name(share);
        sc->set_signing(Fraction(st.signed_yes, st.signed_known, st.total));
        sc->set_encryption(Fraction(st.enc_yes, st.enc_known, st.total));
      }
    }
  }
}

}  // namespace smbfleet::agent::windows

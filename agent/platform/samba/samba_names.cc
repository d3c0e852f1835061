#include "agent/platform/samba/samba_names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace smbfleet::agent::samba {

using smbfleet::v1::CryptoAlgorithm;
using smbfleet::v1::Dialect;
using smbfleet::v1::Protection;

Dialect DialectFromSamba(absl::string_view name) {
  std::string n = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(name));
  if (n == "NT1" || n == "LANMAN1" || n == "LANMAN2" || n == "CORE" || n == "COREPLUS") {
    return v1::DIALECT_SMB1;
  }
  if (n == "SMB2_02") return v1::DIALECT_SMB_2_0_2;
  if (n == "SMB2_10" || n == "SMB2") return v1::DIALECT_SMB_2_1;
  if (n == "SMB3_00") return v1::DIALECT_SMB_3_0;
  if (n == "SMB3_02") return v1::DIALECT_SMB_3_0_2;
  if (n == "SMB3_11" || n == "SMB3") return v1::DIALECT_SMB_3_1_1;
  return v1::DIALECT_UNSPECIFIED;
}

std::string SambaProtocolName(Dialect dialect) {
  switch (dialect) {
    case v1::DIALECT_SMB1:
      return "NT1";
    case v1::DIALECT_SMB_2_0_2:
      return "SMB2_02";
    case v1::DIALECT_SMB_2_1:
      return "SMB2_10";
    case v1::DIALECT_SMB_3_0:
      return "SMB3_00";
    case v1::DIALECT_SMB_3_0_2:
      return "SMB3_02";
    case v1::DIALECT_SMB_3_1_1:
      return "SMB3_11";
    default:
      return "";
  }
}

std::optional<CryptoAlgorithm> CryptoFromSamba(absl::string_view name) {
  struct Entry {
    absl::string_view samba;
    CryptoAlgorithm algorithm;
  };
  static constexpr Entry kEntries[] = {
      {"AES-128-CCM", v1::AES_128_CCM},   {"AES-128-GCM", v1::AES_128_GCM},
      {"AES-256-CCM", v1::AES_256_CCM},   {"AES-256-GCM", v1::AES_256_GCM},
      {"AES-128-CMAC", v1::AES_128_CMAC}, {"AES-128-GMAC", v1::AES_128_GMAC},
      {"HMAC-SHA256", v1::HMAC_SHA256},   {"HMAC-MD5", v1::HMAC_MD5},
  };
  std::string n = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(name));
  for (const Entry& e : kEntries) {
    if (n == e.samba) return e.algorithm;
  }
  return std::nullopt;
}

Protection ProtectionFromDegree(absl::string_view degree) {
  std::string d = absl::AsciiStrToLower(absl::StripAsciiWhitespace(degree));
  if (d == "none") return v1::PROTECTION_NONE;
  if (d == "partial") return v1::PROTECTION_PARTIAL;
  if (d == "full") return v1::PROTECTION_FULL;
  return v1::PROTECTION_UNSPECIFIED;
}

absl::Status ValidateShareName(absl::string_view name) {
  constexpr size_t kMaxShareName = 80;
  if (name.empty()) return absl::InvalidArgumentError("share name is empty");
  if (name.size() > kMaxShareName) {
    return absl::InvalidArgumentError(
        absl::StrCat("share name: ", name.size(), " bytes, limit ", kMaxShareName));
  }
  static constexpr absl::string_view kForbidden = "[]/\\:*?\"<>|=;,%+";
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c >= 0x7f) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "share name '%s': byte 0x%02x at offset %d is not printable ASCII",
          absl::CHexEscape(name), c, i));
    }
    if (kForbidden.find(static_cast<char>(c)) != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "share name '%s': character '%c' at offset %d is not allowed", name, c, i));
    }
  }
  if (name.front() == ' ' || name.back() == ' ') {
    return absl::InvalidArgumentError(
        absl::StrCat("share name '", name, "': leading or trailing space"));
  }
  if (name == "." || name == "..") {
    return absl::InvalidArgumentError(absl::StrCat("share name '", name, "' is not allowed"));
  }
  return absl::OkStatus();
}

}  // namespace smbfleet::agent::samba

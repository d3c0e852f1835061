// Parsers for the registry probes: the few SMB settings that no Get-Smb* cmdlet reports. Where a
// cmdlet reports a setting, the cmdlet's effective value is used instead (parsers.cc).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/platform/windows/parsers.h"
#include "agent/platform/windows/ps_json.h"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;

constexpr absl::string_view kLanmanServerKey =
    R"(HKLM:\SYSTEM\CurrentControlSet\Services\LanmanServer\Parameters)";
constexpr absl::string_view kLanmanWorkstationKey =
    R"(HKLM:\SYSTEM\CurrentControlSet\Services\LanmanWorkstation\Parameters)";
constexpr absl::string_view kHardenedPathsKey =
    R"(HKLM:\SOFTWARE\Policies\Microsoft\Windows\NetworkProvider\HardenedPaths)";

// What one registry probe printed.
enum class KeyState { kNoOutput, kAbsent, kPresent };

struct RegistryKey {
  KeyState state = KeyState::kNoOutput;
  nlohmann::json values;  // the one object when kPresent
};

absl::StatusOr<RegistryKey> LoadKey(absl::string_view bytes, absl::string_view what,
                                    std::vector<std::string>* problems) {
  auto text = DecodeText(bytes, what);
  if (!text.ok()) return text.status();
  RegistryKey key;
  if (absl::StripAsciiWhitespace(*text).empty()) {
    // The probes print [] for a missing key: no output says nothing about the key.
    problems->push_back(absl::StrCat(what, ": no output (expected [] or the key's values)"));
    return key;
  }
  auto objects = ParsePsObjects(bytes, what);
  if (!objects.ok()) return objects.status();
  if (objects->size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": expected the values of one registry key, got ", objects->size(), " objects"));
  }
  if (objects->empty()) {
    key.state = KeyState::kAbsent;
    return key;
  }
  key.state = KeyState::kPresent;
  key.values = std::move(objects->front());
  return key;
}

// A REG_DWORD as Get-ItemProperty prints it: an Int32, so values past 0x7FFFFFFF are negative.
std::optional<uint32_t> Dword(const PsObject& o, absl::string_view name) {
  const nlohmann::json* v = o.Find(name);
  if (v == nullptr) return std::nullopt;
  int64_t n = 0;
  bool number = false;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    number = u <= UINT32_MAX;
    n = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    n = v->get<int64_t>();
    number = true;
  } else if (v->is_string()) {
    number = absl::SimpleAtoi(absl::StripAsciiWhitespace(v->get<std::string>()), &n);
  }
  if (number && n >= INT32_MIN && n <= static_cast<int64_t>(UINT32_MAX)) {
    return n < 0 ? static_cast<uint32_t>(static_cast<int32_t>(n)) : static_cast<uint32_t>(n);
  }
  o.Problem(name, absl::StrCat("expected a REG_DWORD number, got ", v->dump()));
  return std::nullopt;
}

// A 0/1 value of a key that may not exist: a missing key or value = `windows_default`; nullopt
// when the probe printed nothing or the value has the wrong shape (a problem).
absl::StatusOr<std::optional<bool>> ReadSwitch(absl::string_view bytes, absl::string_view what,
                                               absl::string_view name, bool windows_default,
                                               std::vector<std::string>* problems) {
  auto key = LoadKey(bytes, what, problems);
  if (!key.ok()) return key.status();
  if (key->state == KeyState::kNoOutput) return std::optional<bool>();
  if (key->state == KeyState::kAbsent) return std::optional<bool>(windows_default);
  PsObject o(key->values, std::string(what), problems);
  if (!o.Has(name)) return std::optional<bool>(windows_default);
  auto n = Dword(o, name);
  if (!n.has_value()) return std::optional<bool>();
  return std::optional<bool>(*n != 0);
}

// The properties Get-ItemProperty adds to a key's values (the capture script drops them).
bool IsProviderProperty(absl::string_view name) {
  for (absl::string_view p : {"PSPath", "PSParentPath", "PSChildName", "PSDrive", "PSProvider"}) {
    if (name == p) return true;
  }
  return false;
}

// "RequireMutualAuthentication=1, RequireIntegrity=1, RequirePrivacy=1", spacing and case as
// typed into the policy editor. A flag the value does not name is not required for the path.
void ParseHardenedValue(absl::string_view value, const std::string& where, v1::HardenedPath* entry,
                        std::vector<std::string>* problems) {
  entry->set_require_mutual_authentication(false);
  entry->set_require_integrity(false);
  entry->set_require_privacy(false);
  for (absl::string_view part :
       absl::StrSplit(value, absl::ByAnyChar(",;"), absl::SkipWhitespace())) {
    std::vector<absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    absl::string_view flag = absl::StripAsciiWhitespace(kv[0]);
    absl::string_view setting = kv.size() > 1 ? absl::StripAsciiWhitespace(kv[1]) : "";
    void (v1::HardenedPath::*set)(bool) = nullptr;
    void (v1::HardenedPath::*clear)() = nullptr;
    if (absl::EqualsIgnoreCase(flag, "RequireMutualAuthentication")) {
      set = &v1::HardenedPath::set_require_mutual_authentication;
      clear = &v1::HardenedPath::clear_require_mutual_authentication;
    } else if (absl::EqualsIgnoreCase(flag, "RequireIntegrity")) {
      set = &v1::HardenedPath::set_require_integrity;
      clear = &v1::HardenedPath::clear_require_integrity;
    } else if (absl::EqualsIgnoreCase(flag, "RequirePrivacy")) {
      set = &v1::HardenedPath::set_require_privacy;
      clear = &v1::HardenedPath::clear_require_privacy;
    } else {
      continue;  // a flag this agent does not know: kept in `value`
    }
    if (setting == "1" || setting == "0") {
      (entry->*set)(setting == "1");
    } else {
      (entry->*clear)();  // unknown, not guessed
      problems->push_back(absl::StrCat(where, ": ", flag, " = '", setting, "', expected 0 or 1"));
    }
  }
}

}  // namespace

absl::string_view RegistryKeyOf(absl::string_view probe) {
  if (probe == "Registry-LanmanServer") return kLanmanServerKey;
  if (probe == "Registry-LanmanWorkstation") return kLanmanWorkstationKey;
  if (probe == "Registry-HardenedPaths") return kHardenedPathsKey;
  return "";
}

absl::Status ParseLanmanServerRegistry(absl::string_view bytes, absl::string_view what,
                                       v1::Posture* posture, std::vector<std::string>* problems) {
  // "Network access: Restrict anonymous access to Named Pipes and Shares" is enabled when the
  // value is absent: the CIS benchmark (2.3.10.10) gives the impact of enabling it as "None -
  // this is the default behavior".
  auto on = ReadSwitch(bytes, what, "RestrictNullSessAccess", true, problems);
  if (!on.ok()) return on.status();
  if (on->has_value()) posture->mutable_server()->set_restrict_null_session_access(**on);
  return absl::OkStatus();
}

absl::Status ParseLanmanWorkstationRegistry(absl::string_view bytes, absl::string_view what,
                                            v1::Posture* posture,
                                            std::vector<std::string>* problems) {
  // "Microsoft network client: Send unencrypted password to third-party SMB servers" is disabled
  // when the value is absent: the CIS benchmark's check (2.3.8.3) passes on a missing key or value.
  auto on = ReadSwitch(bytes, what, "EnablePlainTextPassword", false, problems);
  if (!on.ok()) return on.status();
  if (on->has_value()) posture->mutable_client()->set_enable_plain_text_password(**on);
  return absl::OkStatus();
}

absl::Status ParseHardenedPaths(absl::string_view bytes, absl::string_view what,
                                v1::Posture* posture, std::vector<std::string>* problems) {
  auto key = LoadKey(bytes, what, problems);
  if (!key.ok()) return key.status();
  if (key->state == KeyState::kNoOutput) return absl::OkStatus();
  v1::ClientConfig* client = posture->mutable_client();
  client->clear_hardened_paths();
  client->set_hardened_paths_known(true);  // no key: none configured
  if (key->state == KeyState::kAbsent) return absl::OkStatus();
  // Value name = UNC pattern (\\*\NETLOGON), data = the flags.
  for (auto it = key->values.begin(); it != key->values.end(); ++it) {
    if (IsProviderProperty(it.key())) continue;
    std::string where = absl::StrCat(what, ".", it.key());
    if (!absl::StartsWith(it.key(), "\\\\")) {
      problems->push_back(absl::StrCat(where, ": not a UNC path pattern; ignored"));
      continue;
    }
    if (!it->is_string()) {
      problems->push_back(absl::StrCat(where, ": expected a REG_SZ string, got ", it->dump()));
      continue;
    }
    v1::HardenedPath* entry = client->add_hardened_paths();
    entry->set_path(it.key());
    entry->set_value(it->get<std::string>());
    ParseHardenedValue(entry->value(), where, entry, problems);
  }
  return absl::OkStatus();
}

}  // namespace smbfleet::agent::windows

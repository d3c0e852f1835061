#include "agent/platform/samba/testparm_parser.h"

#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/platform/samba/probe_errors.h"
#include "agent/platform/samba/samba_names.h"

namespace smbfleet::agent::samba {
namespace {

using smbfleet::v1::Posture;

constexpr size_t kMaxTestparmBytes = 16 << 20;

// Parameters copied verbatim into ServerConfig.raw / ClientConfig.raw: the words an operator
// recognises, for settings that have no typed field or whose typed field loses detail.
constexpr absl::string_view kServerRawParams[] = {
    "server signing",
    "server smb encrypt",
    "server min protocol",
    "server max protocol",
    "server smb3 encryption algorithms",
    "server smb3 signing algorithms",
    "server multi channel support",
    "server role",
    "map to guest",
    "guest account",
    "restrict anonymous",
    "deadtime",
    "ntlm auth",
    "lanman auth",
    "security",
    "smb ports",
    "interfaces",
    "bind interfaces only",
};
constexpr absl::string_view kClientRawParams[] = {
    "client signing",
    "client smb encrypt",
    "client min protocol",
    "client max protocol",
    "client protection",
    "client smb3 encryption algorithms",
    "client smb3 signing algorithms",
    "client use kerberos",
    "client plaintext auth",
};
constexpr absl::string_view kShareRawParams[] = {
    "server smb encrypt", "guest ok",    "guest only", "read only",  "valid users",
    "invalid users",      "hosts allow", "hosts deny", "browseable", "vfs objects",
};

std::string Lower(absl::string_view s) { return absl::AsciiStrToLower(s); }

void AddUnknown(Posture* posture, absl::string_view param, absl::string_view value,
                absl::string_view why) {
  AddProbeError(posture, kTestparmProbe, "UNKNOWN_VALUE",
                absl::StrCat(param, " = '", value, "': ", why));
}

// Maps a comma/space separated algorithm list; names smbd does not know are reported (smbd
// ignores them silently, which can leave no usable cipher).
template <typename AddFn>
void MapAlgorithms(const std::optional<std::string>& list, absl::string_view param,
                   Posture* posture, AddFn add) {
  if (!list.has_value()) return;
  for (absl::string_view word : absl::StrSplit(*list, absl::ByAnyChar(", \t"), absl::SkipEmpty())) {
    auto alg = CryptoFromSamba(word);
    if (alg.has_value()) {
      add(*alg);
    } else {
      AddUnknown(posture, param, word, "not an algorithm smbd knows; smbd ignores it");
    }
  }
}

// "server min protocol" etc. "default" means Samba's default for that parameter.
std::optional<v1::Dialect> MapProtocol(const std::optional<std::string>& value,
                                       absl::string_view param, v1::Dialect default_dialect,
                                       Posture* posture) {
  if (!value.has_value()) return std::nullopt;
  if (absl::EqualsIgnoreCase(*value, "default")) return default_dialect;
  v1::Dialect d = DialectFromSamba(*value);
  if (d == v1::DIALECT_UNSPECIFIED) {
    AddUnknown(posture, param, *value, "not a protocol name this agent knows");
    return std::nullopt;
  }
  return d;
}

// A non-negative decimal parameter ("deadtime = 15"); other text is reported, not guessed.
std::optional<uint64_t> Count(const TestparmConfig& config, absl::string_view param,
                              Posture* posture) {
  auto value = config.Global(param);
  if (!value.has_value()) return std::nullopt;
  uint64_t n = 0;
  if (!absl::SimpleAtoi(*value, &n)) {
    AddUnknown(posture, param, *value, "not a non-negative number");
    return std::nullopt;
  }
  return n;
}

bool IsDomainController(const TestparmConfig& config) {
  auto role = config.Global("server role");
  return role.has_value() && absl::StrContains(Lower(*role), "domain controller");
}

}  // namespace

absl::StatusOr<TestparmConfig> TestparmConfig::Parse(absl::string_view text) {
  if (text.size() > kMaxTestparmBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("testparm output: ", text.size(), " bytes, limit ", kMaxTestparmBytes));
  }
  TestparmConfig config;
  std::map<std::string, std::string>* current = nullptr;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view stripped = absl::StripAsciiWhitespace(line);
    if (stripped.empty() || stripped.front() == '#' || stripped.front() == ';') continue;
    if (stripped.front() == '[') {
      if (stripped.back() != ']' || stripped.size() < 3) {
        return absl::InvalidArgumentError(
            absl::StrCat("testparm output line ", line_no, ": malformed section header"));
      }
      std::string name(stripped.substr(1, stripped.size() - 2));
      if (absl::EqualsIgnoreCase(name, "global")) {
        current = &config.global_;
      } else {
        config.shares_.push_back(TestparmSection{name, {}});
        current = &config.shares_.back().params;
      }
      continue;
    }
    size_t eq = stripped.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("testparm output line ", line_no, ": expected 'name = value'"));
    }
    if (current == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("testparm output line ", line_no, ": parameter before any section"));
    }
    std::string key = Lower(absl::StripAsciiWhitespace(stripped.substr(0, eq)));
    std::string value(absl::StripAsciiWhitespace(stripped.substr(eq + 1)));
    (*current)[key] = std::move(value);
  }
  return config;
}

std::optional<std::string> TestparmConfig::Global(absl::string_view param) const {
  auto it = global_.find(Lower(param));
  if (it == global_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> TestparmConfig::ShareValue(const TestparmSection& share,
                                                      absl::string_view param) const {
  auto it = share.params.find(Lower(param));
  if (it != share.params.end()) return it->second;
  return Global(param);
}

const TestparmSection* TestparmConfig::FindShare(absl::string_view name) const {
  for (const auto& s : shares_) {
    if (absl::EqualsIgnoreCase(s.name, name)) return &s;
  }
  return nullptr;
}

std::optional<bool> ParseSambaBool(absl::string_view value) {
  std::string v = Lower(absl::StripAsciiWhitespace(value));
  if (v == "yes" || v == "true" || v == "1" || v == "on") return true;
  if (v == "no" || v == "false" || v == "0" || v == "off") return false;
  return std::nullopt;
}

void FillConfig(const TestparmConfig& config, Posture* posture) {
  v1::ServerConfig* server = posture->mutable_server();
  for (absl::string_view p : kServerRawParams) {
    if (auto v = config.Global(p); v && !v->empty()) (*server->mutable_raw())[std::string(p)] = *v;
  }

  // testparm normalises: mandatory/required -> "required", disabled/off/no -> "No",
  // auto/yes -> "if_required"; "default" is "required" only on an AD DC.
  if (auto signing = config.Global("server signing")) {
    std::string s = Lower(*signing);
    bool required =
        s == "required" || s == "mandatory" || (s == "default" && IsDomainController(config));
    server->set_require_signing(required);
    server->set_enable_signing(s != "no" && s != "disabled" && s != "off");
  }
  // Windows' EncryptData ~ Samba "desired" or "required"; RejectUnencryptedAccess ~ "required".
  if (auto encrypt = config.Global("server smb encrypt")) {
    std::string e = Lower(*encrypt);
    server->set_encrypt_data(e == "desired" || e == "required" || e == "mandatory");
    server->set_reject_unencrypted_access(e == "required" || e == "mandatory");
  }
  auto min = MapProtocol(config.Global("server min protocol"), "server min protocol",
                         v1::DIALECT_SMB_2_0_2, posture);
  auto max = MapProtocol(config.Global("server max protocol"), "server max protocol",
                         v1::DIALECT_SMB_3_1_1, posture);
  if (min.has_value()) {
    server->set_min_dialect(*min);
    server->set_smb1_enabled(*min == v1::DIALECT_SMB1);
  }
  if (max.has_value()) {
    server->set_max_dialect(*max);
    server->set_smb2_enabled(*max >= v1::DIALECT_SMB_2_0_2);
  }
  MapAlgorithms(config.Global("server smb3 encryption algorithms"),
                "server smb3 encryption algorithms", posture,
                [&](v1::CryptoAlgorithm a) { server->add_encryption_ciphers(a); });
  MapAlgorithms(config.Global("server smb3 signing algorithms"), "server smb3 signing algorithms",
                posture, [&](v1::CryptoAlgorithm a) { server->add_signing_algorithms(a); });
  if (auto mc = config.Global("server multi channel support")) {
    if (auto b = ParseSambaBool(*mc)) server->set_multichannel_enabled(*b);
  }
  // "restrict anonymous = 2" refuses anonymous access to everything but IPC$ listings, the
  // closest to Windows' RestrictNullSessAccess; 0 and 1 leave anonymous sessions in.
  if (auto level = Count(config, "restrict anonymous", posture)) {
    server->set_restrict_null_session_access(*level >= 2);
  }
  // "deadtime": idle minutes before smbd drops a connection that has no open files, the
  // equivalent of Windows' AutoDisconnectTimeout. 0 = never, reported as the largest value so
  // that "at most N minutes" fails as it should.
  if (auto minutes = Count(config, "deadtime", posture)) {
    server->set_auto_disconnect_timeout_minutes(
        *minutes == 0 || *minutes > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(*minutes));
  }

  // Guest sessions: "map to guest" other than Never lets failed logons become guest, and a
  // share with "guest ok" admits them.
  bool guest = false;
  bool guest_known = false;
  if (auto map = config.Global("map to guest")) {
    guest_known = true;
    guest = !absl::EqualsIgnoreCase(*map, "never");
  }
  if (auto usershare_guests = config.Global("usershare allow guests")) {
    if (ParseSambaBool(*usershare_guests).value_or(false)) guest = true;
  }

  for (const TestparmSection& section : config.shares()) {
    v1::Share* share = posture->add_shares();
    share->set_name(section.name);
    if (auto path = config.ShareValue(section, "path")) share->set_path(*path);
    if (auto comment = config.ShareValue(section, "comment")) share->set_description(*comment);
    if (auto enc = config.ShareValue(section, "server smb encrypt")) {
      std::string e = Lower(*enc);
      share->set_encrypt_data(e == "desired" || e == "required" || e == "mandatory");
    }
    if (auto ok = config.ShareValue(section, "guest ok")) {
      if (auto b = ParseSambaBool(*ok)) {
        share->set_guest_ok(*b);
        if (*b) guest = true;
      }
    }
    if (auto ro = config.ShareValue(section, "read only")) {
      if (auto b = ParseSambaBool(*ro)) share->set_read_only(*b);
    }
    bool printable =
        ParseSambaBool(config.ShareValue(section, "printable").value_or("no")).value_or(false);
    share->set_share_type(printable ? "PrintQueue" : "FileSystemDirectory");
    share->set_special(absl::EndsWith(section.name, "$") ||
                       absl::EqualsIgnoreCase(section.name, "homes") ||
                       absl::EqualsIgnoreCase(section.name, "printers"));
    for (absl::string_view p : kShareRawParams) {
      if (auto v = config.ShareValue(section, p); v && !v->empty()) {
        (*share->mutable_raw())[std::string(p)] = *v;
      }
    }
  }
  if (guest_known) server->set_guest_access_allowed(guest);

  v1::ClientConfig* client = posture->mutable_client();
  for (absl::string_view p : kClientRawParams) {
    if (auto v = config.Global(p); v && !v->empty()) (*client->mutable_raw())[std::string(p)] = *v;
  }
  if (auto signing = config.Global("client signing")) {
    std::string s = Lower(*signing);
    client->set_require_signing(s == "required" || s == "mandatory");
    client->set_enable_signing(s != "no" && s != "disabled" && s != "off");
  }
  if (auto encrypt = config.Global("client smb encrypt")) {
    std::string e = Lower(*encrypt);
    client->set_require_encryption(e == "required" || e == "mandatory");
  }
  // testparm prints the effective value: No while "client NTLMv2 auth" is Yes.
  if (auto plaintext = config.Global("client plaintext auth")) {
    if (auto b = ParseSambaBool(*plaintext)) {
      client->set_enable_plain_text_password(*b);
    } else {
      AddUnknown(posture, "client plaintext auth", *plaintext, "not a yes/no value");
    }
  }
  auto cmin = MapProtocol(config.Global("client min protocol"), "client min protocol",
                          v1::DIALECT_SMB_2_0_2, posture);
  auto cmax = MapProtocol(config.Global("client max protocol"), "client max protocol",
                          v1::DIALECT_SMB_3_1_1, posture);
  if (cmin.has_value()) {
    client->set_min_dialect(*cmin);
    client->set_smb1_enabled(*cmin == v1::DIALECT_SMB1);
  }
  if (cmax.has_value()) client->set_max_dialect(*cmax);
  MapAlgorithms(config.Global("client smb3 encryption algorithms"),
                "client smb3 encryption algorithms", posture,
                [&](v1::CryptoAlgorithm a) { client->add_encryption_ciphers(a); });
}

}  // namespace smbfleet::agent::samba

#include "agent/platform/windows/applier.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "agent/platform/windows/parsers.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "policy/settings.h"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;
using ::smbfleet::policy::SettingKey;

constexpr size_t kMaxShareNameBytes = 240;  // 80 UTF-16 characters at most 3 bytes each

struct Target {
  const char* target;
  const char* parameter;
};

Target TargetOf(SettingKey key) {
  switch (key) {
    case SettingKey::kServerRequireSigning:
      return {"server", "RequireSecuritySignature"};
    case SettingKey::kServerSmb1Enabled:
      return {"server", "EnableSMB1Protocol"};
    case SettingKey::kServerEncryptData:
      return {"server", "EncryptData"};
    case SettingKey::kServerRejectUnencryptedAccess:
      return {"server", "RejectUnencryptedAccess"};
    case SettingKey::kServerMinDialect:
      return {"server", "Smb2DialectMin"};
    case SettingKey::kServerAuditSmb1Access:
      return {"server", "AuditSmb1Access"};
    case SettingKey::kServerAuditClientDoesNotSupportEncryption:
      return {"server", "AuditClientDoesNotSupportEncryption"};
    case SettingKey::kServerAuditClientDoesNotSupportSigning:
      return {"server", "AuditClientDoesNotSupportSigning"};
    case SettingKey::kServerAuditInsecureGuestLogon:
      return {"server", "AuditInsecureGuestLogon"};
    case SettingKey::kClientRequireSigning:
      return {"client", "RequireSecuritySignature"};
    case SettingKey::kClientEnableInsecureGuestLogons:
      return {"client", "EnableInsecureGuestLogons"};
    case SettingKey::kShareEncryptData:
      return {"share", "EncryptData"};
    case SettingKey::kShareCompressData:
      return {"share", "CompressData"};
    case SettingKey::kServerRequestCompression:
      return {"server", "RequestCompression"};
    case SettingKey::kClientRequireEncryption:
      return {"client", "RequireEncryption"};
    case SettingKey::kClientMinDialect:
      return {"client", "Smb2DialectMin"};
  }
  return {"", ""};
}

bool ValidUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

absl::Status CheckShareName(absl::string_view setting, absl::string_view name) {
  if (name.empty())
    return absl::InvalidArgumentError(absl::StrCat(setting, ": share name is empty"));
  if (name.size() > kMaxShareNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(setting, ": share name is ", name.size(),
                                                   " bytes, limit ", kMaxShareNameBytes));
  }
  if (!ValidUtf8(name)) {
    return absl::InvalidArgumentError(absl::StrCat(setting, ": share name is not valid UTF-8"));
  }
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20) {
      return absl::InvalidArgumentError(
          absl::StrCat(setting, ": share name contains a control character"));
    }
  }
  return absl::OkStatus();
}

// "SMB_3_0" (allowlist form) -> "SMB300" (Set-SmbServer/ClientConfiguration -Smb2DialectMin form).
std::string CmdletDialect(const std::string& v) {
  static const std::map<std::string, std::string> kMap = {{"SMB_2_0_2", "SMB202"},
                                                          {"SMB_2_1", "SMB210"},
                                                          {"SMB_3_0", "SMB300"},
                                                          {"SMB_3_0_2", "SMB302"},
                                                          {"SMB_3_1_1", "SMB311"}};
  auto it = kMap.find(v);
  return it == kMap.end() ? "" : it->second;
}

std::string DialectValue(v1::Dialect d) {
  absl::string_view name = v1::Dialect_Name(d);
  absl::ConsumePrefix(&name, "DIALECT_");
  return std::string(name);
}

// Why a build may not report a setting: the cmdlet parameter is newer than the build.
std::string SinceNote(absl::string_view setting) {
  auto info = policy::LookupSetting(setting);
  if (!info.ok()) return "";
  switch (info->key) {
    case SettingKey::kServerMinDialect:
    case SettingKey::kClientMinDialect:
    case SettingKey::kClientRequireEncryption: {
      Target t = TargetOf(info->key);
      return absl::StrCat(" (Set-Smb", std::string(t.target) == "server" ? "Server" : "Client",
                          "Configuration -", t.parameter,
                          " exists from Windows Server 2025 / Windows 11 24H2, build 26100)");
    }
    default:
      return "";
  }
}

std::optional<std::string> BoolValue(bool has, bool value) {
  if (!has) return std::nullopt;
  return std::string(value ? "true" : "false");
}

}  // namespace

const std::string& ApplyScript() {
  static const std::string* kScript = new std::string(R"PS($d = $SmbfleetData
$allowed = @{
  server = @('RequireSecuritySignature', 'EnableSMB1Protocol', 'EncryptData',
             'RejectUnencryptedAccess', 'Smb2DialectMin', 'AuditSmb1Access',
             'AuditClientDoesNotSupportEncryption', 'AuditClientDoesNotSupportSigning',
             'AuditInsecureGuestLogon', 'RequestCompression')
  client = @('RequireSecuritySignature', 'EnableInsecureGuestLogons', 'RequireEncryption',
             'Smb2DialectMin')
  share = @('EncryptData', 'CompressData')
}
$target = [string]$d.target
if (-not $allowed.ContainsKey($target)) { throw 'apply: unknown target' }
$params = @{}
foreach ($p in $d.parameters.PSObject.Properties) {
  if ($allowed[$target] -notcontains $p.Name) { throw ('apply: parameter not allowed: ' + $p.Name) }
  $params[[string]$p.Name] = $p.Value
}
switch ($target) {
  'server' { Set-SmbServerConfiguration @params -Force -Confirm:$false }
  'client' { Set-SmbClientConfiguration @params -Force -Confirm:$false }
  'share' {
    # Exact, case-insensitive name comparison: -Name would treat * ? [ ] as wildcards.
    $name = [string]$d.share
    $shares = @(Get-SmbShare | Where-Object { $_.Name -eq $name })
    if ($shares.Count -ne 1) {
      throw ('apply: expected exactly one share with the requested name, found ' + $shares.Count)
    }
    $shares[0] | Set-SmbShare @params -Force -Confirm:$false
  }
}
)PS");
  return *kScript;
}

absl::StatusOr<std::vector<ApplyCall>> PlanApply(const std::vector<v1::SettingChange>& changes) {
  std::vector<ApplyCall> calls;
  std::map<std::string, size_t> index;  // "server" / "client" / "share:<name>" -> call
  std::vector<nlohmann::json> params;
  for (size_t i = 0; i < changes.size(); ++i) {
    const v1::SettingChange& c = changes[i];
    ASSIGN_OR_RETURN(policy::SettingInfo info, policy::LookupSetting(c.setting()));
    ASSIGN_OR_RETURN(std::string value, policy::NormalizeSettingValue(info, c.value()));
    Target t = TargetOf(info.key);
    std::string key = t.target;
    if (info.scope == policy::SettingScope::kShare) {
      RETURN_IF_ERROR(CheckShareName(c.setting(), c.share()));
      key = absl::StrCat("share:", absl::AsciiStrToLower(c.share()));
    } else if (!c.share().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(c.setting(), ": a ", t.target, " setting takes no share"));
    }
    auto [it, inserted] = index.emplace(key, calls.size());
    if (inserted) {
      ApplyCall call;
      call.target = t.target;
      if (info.scope == policy::SettingScope::kShare) call.share = c.share();
      calls.push_back(call);
      params.push_back(nlohmann::json::object());
    }
    nlohmann::json& p = params[it->second];
    if (p.contains(t.parameter)) {
      return absl::InvalidArgumentError(absl::StrCat(c.setting(), ": given twice"));
    }
    if (info.type == policy::SettingType::kBool) {
      p[t.parameter] = (value == "true");
    } else {
      p[t.parameter] = CmdletDialect(value);
    }
    calls[it->second].settings.push_back(c.setting());
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    nlohmann::json data = {{"target", calls[i].target}, {"parameters", params[i]}};
    if (calls[i].target == "share") data["share"] = calls[i].share;
    calls[i].data_json = data.dump();
  }
  return calls;
}

std::optional<std::string> CurrentValue(const v1::Posture& p, const v1::SettingChange& change) {
  auto info = policy::LookupSetting(change.setting());
  if (!info.ok()) return std::nullopt;
  const v1::ServerConfig& s = p.server();
  const v1::ClientConfig& c = p.client();
  switch (info->key) {
    case SettingKey::kServerRequireSigning:
      return BoolValue(s.has_require_signing(), s.require_signing());
    case SettingKey::kServerSmb1Enabled:
      return BoolValue(s.has_smb1_enabled(), s.smb1_enabled());
    case SettingKey::kServerEncryptData:
      return BoolValue(s.has_encrypt_data(), s.encrypt_data());
    case SettingKey::kServerRejectUnencryptedAccess:
      return BoolValue(s.has_reject_unencrypted_access(), s.reject_unencrypted_access());
    case SettingKey::kServerMinDialect:
      if (!s.has_min_dialect()) return std::nullopt;
      return DialectValue(s.min_dialect());
    case SettingKey::kServerAuditSmb1Access:
      return BoolValue(s.has_audit_smb1_access(), s.audit_smb1_access());
    case SettingKey::kServerAuditClientDoesNotSupportEncryption:
      return BoolValue(s.has_audit_client_does_not_support_encryption(),
                       s.audit_client_does_not_support_encryption());
    case SettingKey::kServerAuditClientDoesNotSupportSigning:
      return BoolValue(s.has_audit_client_does_not_support_signing(),
                       s.audit_client_does_not_support_signing());
    case SettingKey::kServerAuditInsecureGuestLogon:
      return BoolValue(s.has_audit_insecure_guest_logon(), s.audit_insecure_guest_logon());
    case SettingKey::kClientRequireSigning:
      return BoolValue(c.has_require_signing(), c.require_signing());
    case SettingKey::kClientEnableInsecureGuestLogons:
      return BoolValue(c.has_enable_insecure_guest_logons(), c.enable_insecure_guest_logons());
    case SettingKey::kServerRequestCompression:
      return BoolValue(s.has_request_compression(), s.request_compression());
    case SettingKey::kClientRequireEncryption:
      return BoolValue(c.has_require_encryption(), c.require_encryption());
    case SettingKey::kClientMinDialect:
      if (!c.has_min_dialect()) return std::nullopt;
      return DialectValue(c.min_dialect());
    case SettingKey::kShareEncryptData:
    case SettingKey::kShareCompressData:
      for (const auto& share : p.shares()) {
        if (!absl::EqualsIgnoreCase(share.name(), change.share())) continue;
        if (info->key == SettingKey::kShareEncryptData) {
          return BoolValue(share.has_encrypt_data(), share.encrypt_data());
        }
        return BoolValue(share.has_compress_data(), share.compress_data());
      }
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

// The setting as the host has it: `value` empty when the build does not report it.
v1::SettingChange ValueIn(const v1::Posture& p, const v1::SettingChange& change) {
  v1::SettingChange s;
  s.set_setting(change.setting());
  s.set_share(change.share());
  s.set_value(CurrentValue(p, change).value_or(""));
  return s;
}

}  // namespace

WindowsApplier::WindowsApplier(WindowsOptions options, PowerShellRunner* runner)
    : options_(std::move(options)), runner_(runner) {}

absl::StatusOr<v1::Posture> WindowsApplier::ReadPosture() {
  v1::Posture posture;
  for (const ProbeSpec& probe : WindowsProbes()) {
    if (probe.probe != "Get-SmbServerConfiguration" &&
        probe.probe != "Get-SmbClientConfiguration" && probe.probe != "Get-SmbShare") {
      continue;
    }
    PowerShellScript script;
    script.probe = std::string(probe.probe);
    script.text = ProbeScript(script.probe);
    script.data_json = "{}";
    script.timeout = options_.cmdlet_timeout;
    script.max_output_bytes = options_.max_output_bytes;
    ASSIGN_OR_RETURN(std::string out, runner_->Run(script));
    std::vector<std::string> problems;
    RETURN_IF_ERROR(probe.parse(out, probe.probe, &posture, &problems));
  }
  return posture;
}

absl::StatusOr<std::vector<v1::SettingChange>> WindowsApplier::Read(
    const std::vector<v1::SettingChange>& settings) {
  for (size_t i = 0; i < settings.size(); ++i) {
    if (absl::Status known = policy::LookupSetting(settings[i].setting()).status(); !known.ok()) {
      return absl::PermissionDeniedError(absl::StrCat("settings[", i, "]: ", known.message()));
    }
  }
  ASSIGN_OR_RETURN(v1::Posture posture, ReadPosture());
  std::vector<v1::SettingChange> out;
  for (const auto& c : settings) out.push_back(ValueIn(posture, c));
  return out;
}

absl::StatusOr<std::string> WindowsApplier::RunApply(const ApplyCall& call) {
  PowerShellScript script;
  script.probe = "apply";
  script.text = ApplyScript();
  script.data_json = call.data_json;
  script.timeout = options_.cmdlet_timeout;
  script.max_output_bytes = options_.max_output_bytes;
  return runner_->Run(script);
}

absl::Status WindowsApplier::Undo(const std::vector<ApplyCall>& plan, size_t done,
                                  const std::vector<v1::SettingChange>& changes,
                                  ApplyResult* result) {
  absl::Status first;
  for (size_t k = done; k-- > 0;) {
    const ApplyCall& call = plan[k];
    std::vector<v1::SettingChange> previous;
    for (size_t i = 0; i < changes.size(); ++i) {
      const v1::SettingChange& c = changes[i];
      bool in_call = std::find(call.settings.begin(), call.settings.end(), c.setting()) !=
                         call.settings.end() &&
                     (call.target != "share" || absl::EqualsIgnoreCase(c.share(), call.share));
      if (!in_call || result->before[i].value().empty()) continue;
      v1::SettingChange p = c;
      p.set_value(result->before[i].value());
      p.clear_expected_current();
      previous.push_back(std::move(p));
    }
    absl::StatusOr<std::vector<ApplyCall>> undo = PlanApply(previous);
    absl::Status s = undo.status();
    if (undo.ok()) {
      for (const ApplyCall& u : *undo) {
        if (absl::StatusOr<std::string> out = RunApply(u); !out.ok()) s = out.status();
      }
    }
    if (s.ok()) {
      result->actions.push_back(
          absl::StrCat("undo ", call.target, ": ", absl::StrJoin(call.settings, ", ")));
    } else if (first.ok()) {
      first = s;
    }
  }
  return first;
}

ApplyResult WindowsApplier::DoApply(const std::vector<v1::SettingChange>& changes,
                                    const std::vector<std::string>& options) {
  ApplyResult result;
  result.set_status(ApplyInto(changes, options, &result));
  return result;
}

absl::Status WindowsApplier::ApplyInto(const std::vector<v1::SettingChange>& changes,
                                       const std::vector<std::string>& options,
                                       ApplyResult* result) {
  absl::StatusOr<std::vector<ApplyCall>> plan = PlanApply(changes);
  if (!plan.ok()) {
    // Not on the allowlist is a refusal; anything else is a malformed change.
    if (absl::IsNotFound(plan.status()))
      return absl::PermissionDeniedError(plan.status().message());
    return plan.status();
  }
  if (!options.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("options[0]: unknown option '",
                                                   absl::CHexEscape(options[0]),
                                                   "' (the Windows agent takes none)"));
  }
  absl::StatusOr<v1::Posture> before = ReadPosture();
  if (!before.ok()) {
    return absl::InternalError(absl::StrCat("reading current values: ", before.status().message()));
  }
  for (const auto& c : changes) result->before.push_back(ValueIn(*before, c));
  for (const auto& c : changes) {
    std::optional<std::string> current = CurrentValue(*before, c);
    if (!current.has_value()) {
      return absl::FailedPreconditionError(
          c.share().empty() ? absl::StrCat(c.setting(), ": this Windows build does not report it",
                                           SinceNote(c.setting()))
                            : absl::StrCat(c.setting(), ": share '", c.share(), "' not found"));
    }
    if (!c.expected_current().empty()) {
      auto info = policy::LookupSetting(c.setting());
      auto expected = policy::NormalizeSettingValue(*info, c.expected_current());
      if (!expected.ok() || *expected != *current) {
        return absl::FailedPreconditionError(absl::StrCat(c.setting(), ": expected current value '",
                                                          c.expected_current(), "', host has '",
                                                          *current, "'"));
      }
    }
  }
  std::string failure;
  size_t done = 0;  // calls that succeeded
  for (const ApplyCall& call : *plan) {
    absl::StatusOr<std::string> out = RunApply(call);
    if (!out.ok()) {
      failure = std::string(out.status().message());
      break;
    }
    ++done;
    result->actions.push_back(
        absl::StrCat("apply ", call.target, ": ", absl::StrJoin(call.settings, ", ")));
  }
  if (!failure.empty() && done > 0) {
    // A failure midway: undo the calls that succeeded, newest first, from the before-values.
    absl::Status undone = Undo(*plan, done, changes, result);
    absl::StatusOr<v1::Posture> now = ReadPosture();
    if (now.ok()) {
      for (const auto& c : changes) result->after.push_back(ValueIn(*now, c));
    }
    if (!undone.ok()) {
      return absl::InternalError(absl::StrCat(
          failure, "; undoing the settings already applied failed: ", undone.message()));
    }
    return absl::AbortedError(
        absl::StrCat(failure, "; undid the ", done, " call(s) already applied"));
  }
  absl::StatusOr<v1::Posture> after = ReadPosture();
  if (after.ok()) {
    for (const auto& c : changes) result->after.push_back(ValueIn(*after, c));
  }
  // The first call failed (nothing applied) or a value did not stick: FAILED, and the change
  // executor restores the before-values.
  if (!failure.empty()) return absl::InternalError(failure);
  if (!after.ok()) {
    return absl::InternalError(absl::StrCat("re-reading after apply: ", after.status().message()));
  }
  for (size_t i = 0; i < changes.size(); ++i) {
    auto info = policy::LookupSetting(changes[i].setting());
    auto want = policy::NormalizeSettingValue(*info, changes[i].value());
    if (!want.ok() || result->after[i].value() != *want) {
      return absl::InternalError(absl::StrCat(changes[i].setting(), ": still '",
                                              result->after[i].value(),
                                              "' after apply (a Group Policy may set it)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace smbfleet::agent::windows

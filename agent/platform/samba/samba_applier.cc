#include "agent/platform/samba/samba_applier.h"

#include <arpa/inet.h>

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "agent/platform/samba/probe_errors.h"
#include "agent/platform/samba/samba_names.h"
#include "agent/platform/samba/smbstatus_parser.h"
#include "common/files.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "policy/settings.h"

namespace smbfleet::agent::samba {
namespace {

using policy::SettingInfo;
using policy::SettingKey;
using policy::SettingScope;
using smbfleet::v1::Posture;
using smbfleet::v1::SettingChange;

struct Requested {
  SettingInfo info;
  std::string value;  // normalised typed value
  std::string share;  // canonical share name (as testparm prints it) for share settings
  std::string expected_current;
};

std::string Bool(bool b) { return b ? "true" : "false"; }

std::string DialectValue(v1::Dialect d) {
  absl::string_view name = v1::Dialect_Name(d);
  absl::ConsumePrefix(&name, "DIALECT_");
  return std::string(name);
}

const v1::Share* FindShare(const Posture& p, const std::string& name) {
  for (const auto& s : p.shares()) {
    if (absl::EqualsIgnoreCase(s.name(), name)) return &s;
  }
  return nullptr;
}

// The typed value of a setting as the posture reports it; nullopt when unknown.
std::optional<std::string> TypedValue(const Posture& p, SettingKey key, const std::string& share) {
  const v1::ServerConfig& s = p.server();
  switch (key) {
    case SettingKey::kServerRequireSigning:
      if (s.has_require_signing()) return Bool(s.require_signing());
      break;
    case SettingKey::kServerSmb1Enabled:
      if (s.has_smb1_enabled()) return Bool(s.smb1_enabled());
      break;
    case SettingKey::kServerEncryptData:
      if (s.has_encrypt_data()) return Bool(s.encrypt_data());
      break;
    case SettingKey::kServerRejectUnencryptedAccess:
      if (s.has_reject_unencrypted_access()) return Bool(s.reject_unencrypted_access());
      break;
    case SettingKey::kServerMinDialect:
      if (s.has_min_dialect()) return DialectValue(s.min_dialect());
      break;
    case SettingKey::kClientRequireSigning:
      if (p.client().has_require_signing()) return Bool(p.client().require_signing());
      break;
    case SettingKey::kClientRequireEncryption:
      if (p.client().has_require_encryption()) return Bool(p.client().require_encryption());
      break;
    case SettingKey::kClientMinDialect:
      if (p.client().has_min_dialect()) return DialectValue(p.client().min_dialect());
      break;
    case SettingKey::kShareEncryptData:
      if (const v1::Share* sh = FindShare(p, share); sh != nullptr && sh->has_encrypt_data()) {
        return Bool(sh->encrypt_data());
      }
      break;
    default:
      break;
  }
  return std::nullopt;
}

bool SupportedOnSamba(SettingKey key) {
  switch (key) {
    case SettingKey::kServerRequireSigning:
    case SettingKey::kServerSmb1Enabled:
    case SettingKey::kServerEncryptData:
    case SettingKey::kServerRejectUnencryptedAccess:
    case SettingKey::kServerMinDialect:
    case SettingKey::kClientRequireSigning:
    case SettingKey::kClientRequireEncryption:
    case SettingKey::kClientMinDialect:
    case SettingKey::kShareEncryptData:
      return true;
    default:
      return false;
  }
}

// Checked before anything is read or written.
absl::StatusOr<std::vector<Requested>> ValidateChanges(const std::vector<SettingChange>& changes) {
  std::vector<Requested> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < changes.size(); ++i) {
    const SettingChange& c = changes[i];
    std::string where = absl::StrCat("settings[", i, "]");
    absl::StatusOr<SettingInfo> info = policy::LookupSetting(c.setting());
    if (!info.ok()) {
      return absl::PermissionDeniedError(absl::StrCat(where, ": ", info.status().message()));
    }
    if (!SupportedOnSamba(info->key)) {
      return absl::UnimplementedError(
          absl::StrCat(where, ": ", c.setting(), " has no Samba equivalent"));
    }
    absl::StatusOr<std::string> value = policy::NormalizeSettingValue(*info, c.value());
    if (!value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", value.status().message()));
    }
    Requested r{*info, *value, "", c.expected_current()};
    if (info->scope == SettingScope::kShare) {
      if (absl::Status s = ValidateShareName(c.share()); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ".share: ", s.message()));
      }
      r.share = c.share();
    } else if (!c.share().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", c.setting(),
                                                     " is not a share setting but names share '",
                                                     absl::CHexEscape(c.share()), "'"));
    }
    if (!seen.insert({std::string(info->name), absl::AsciiStrToLower(r.share)}).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", c.setting(), " appears twice in one change"));
    }
    out.push_back(std::move(r));
  }
  return out;
}

struct Option {
  enum Kind { kCloseShare, kKillClientIp } kind;
  std::string argument;  // empty = derived from the change / live sessions
};

absl::StatusOr<std::vector<Option>> ParseOptions(const std::vector<std::string>& options) {
  std::vector<Option> out;
  for (size_t i = 0; i < options.size(); ++i) {
    absl::string_view o = options[i];
    std::string where = absl::StrCat("options[", i, "]");
    if (o == "close-share") {
      out.push_back({Option::kCloseShare, ""});
    } else if (absl::ConsumePrefix(&o, "close-share:")) {
      if (absl::Status s = ValidateShareName(o); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": ", s.message()));
      }
      out.push_back({Option::kCloseShare, std::string(o)});
    } else if (o == "kill-client-ip") {
      out.push_back({Option::kKillClientIp, ""});
    } else if (absl::ConsumePrefix(&o, "kill-client-ip:")) {
      std::string addr(o);
      unsigned char buf[16];
      if (::inet_pton(AF_INET, addr.c_str(), buf) != 1 &&
          ::inet_pton(AF_INET6, addr.c_str(), buf) != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": '", absl::CHexEscape(addr), "' is not an IP address"));
      }
      out.push_back({Option::kKillClientIp, addr});
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": unknown option '", absl::CHexEscape(options[i]),
          "' (known: close-share, close-share:NAME, kill-client-ip, kill-client-ip:ADDR)"));
    }
  }
  return out;
}

const Requested* Find(const std::vector<Requested>& reqs, SettingKey key) {
  for (const Requested& r : reqs) {
    if (r.info.key == key) return &r;
  }
  return nullptr;
}

// Typed settings -> Samba parameters, given the current posture.
absl::StatusOr<std::vector<ParameterChange>> PlanParameters(const std::vector<Requested>& reqs,
                                                            const Posture& current) {
  std::vector<ParameterChange> params;
  if (const Requested* r = Find(reqs, SettingKey::kServerRequireSigning)) {
    params.push_back({"", "server signing", r->value == "true" ? "mandatory" : "auto"});
  }
  if (const Requested* r = Find(reqs, SettingKey::kClientRequireSigning)) {
    params.push_back({"", "client signing", r->value == "true" ? "required" : "auto"});
  }
  if (const Requested* r = Find(reqs, SettingKey::kClientRequireEncryption)) {
    params.push_back({"", "client smb encrypt", r->value == "true" ? "required" : "default"});
  }
  if (const Requested* r = Find(reqs, SettingKey::kClientMinDialect)) {
    v1::Dialect d = v1::DIALECT_UNSPECIFIED;
    v1::Dialect_Parse(absl::StrCat("DIALECT_", r->value), &d);
    params.push_back({"", "client min protocol", SambaProtocolName(d)});
  }

  const Requested* smb1 = Find(reqs, SettingKey::kServerSmb1Enabled);
  const Requested* min = Find(reqs, SettingKey::kServerMinDialect);
  if (smb1 != nullptr && min != nullptr && smb1->value == "true") {
    return absl::InvalidArgumentError(
        absl::StrCat("server.smb1Enabled=true conflicts with server.minDialect=", min->value,
                     " (Samba has one 'server min protocol')"));
  }
  if (min != nullptr) {
    v1::Dialect d = v1::DIALECT_UNSPECIFIED;
    v1::Dialect_Parse(absl::StrCat("DIALECT_", min->value), &d);
    params.push_back({"", "server min protocol", SambaProtocolName(d)});
  } else if (smb1 != nullptr) {
    if (smb1->value == "true") {
      params.push_back({"", "server min protocol", "NT1"});
    } else if (!current.server().has_min_dialect() ||
               current.server().min_dialect() == v1::DIALECT_SMB1) {
      params.push_back({"", "server min protocol", "SMB2_02"});
    }
  }

  const Requested* enc = Find(reqs, SettingKey::kServerEncryptData);
  const Requested* rej = Find(reqs, SettingKey::kServerRejectUnencryptedAccess);
  if (enc != nullptr || rej != nullptr) {
    bool final_enc = enc ? enc->value == "true" : current.server().encrypt_data();
    bool final_rej = rej ? rej->value == "true" : current.server().reject_unencrypted_access();
    std::string value;
    if (!final_enc) {
      if (rej != nullptr && rej->value == "true") {
        return absl::InvalidArgumentError(
            "server.rejectUnencryptedAccess=true needs server.encryptData=true on Samba "
            "(server smb encrypt = required)");
      }
      value = "if_required";
    } else {
      value = final_rej ? "required" : "desired";
    }
    params.push_back({"", "server smb encrypt", value});
  }

  for (const Requested& r : reqs) {
    if (r.info.key == SettingKey::kShareEncryptData) {
      params.push_back({r.share, "smb encrypt", r.value == "true" ? "required" : "if_required"});
    }
  }
  return params;
}

SettingChange MakeValue(const Requested& r, const Posture& p) {
  SettingChange c;
  c.set_setting(std::string(r.info.name));
  c.set_share(r.share);
  c.set_value(TypedValue(p, r.info.key, r.share).value_or(""));
  return c;
}

// RestoreInterruptedWrite, logged: an operator should know the files were put back.
absl::Status UndoInterruptedWrite(const std::string& managed_dir) {
  absl::StatusOr<bool> undone = RestoreInterruptedWrite(managed_dir);
  if (!undone.ok()) {
    return absl::InternalError(absl::StrCat("an apply interrupted between two renames in ",
                                            managed_dir,
                                            " cannot be undone: ", undone.status().message()));
  }
  if (*undone) {
    Logger("agent")->warn(
        "an apply interrupted between two renames in {} was undone: its files are back as they "
        "were",
        LogSafe(managed_dir));
  }
  return absl::OkStatus();
}

}  // namespace

SambaApplier::SambaApplier(SambaApplierOptions options, CommandRunner* runner)
    : options_(std::move(options)),
      runner_(runner),
      writer_(options_.samba, options_.managed_dir, runner) {}

absl::StatusOr<std::vector<SettingChange>> SambaApplier::Read(
    const std::vector<SettingChange>& settings) {
  // What the host has is only meaningful once a write killed between two renames is undone
  // (the agent's crash recovery reads first). The lock only when there is one to undo.
  if (FileExists(PendingWritePath(writer_.managed_dir()))) {
    ASSIGN_OR_RETURN(std::unique_ptr<ApplyLock> lock, ApplyLock::Acquire(writer_.managed_dir()));
    RETURN_IF_ERROR(UndoInterruptedWrite(writer_.managed_dir()));
  }
  // Values are irrelevant for a read; validate names and shares only.
  std::vector<SettingChange> probe = settings;
  for (auto& s : probe) {
    absl::StatusOr<SettingInfo> info = policy::LookupSetting(s.setting());
    if (info.ok()) s.set_value(info->type == policy::SettingType::kBool ? "false" : "SMB_3_1_1");
  }
  ASSIGN_OR_RETURN(std::vector<Requested> reqs, ValidateChanges(probe));
  ASSIGN_OR_RETURN(TestparmConfig config, writer_.ReadConfig());
  Posture current;
  FillConfig(config, &current);
  std::vector<SettingChange> out;
  for (Requested& r : reqs) {
    if (!r.share.empty()) {
      const TestparmSection* section = config.FindShare(r.share);
      if (section == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("share '", r.share, "' does not exist"));
      }
      r.share = section->name;
    }
    out.push_back(MakeValue(r, current));
  }
  return out;
}

ApplyResult SambaApplier::DoApply(const std::vector<SettingChange>& changes,
                                  const std::vector<std::string>& options) {
  ApplyResult result;
  // Held from reading the current values to the reload, so that applies never interleave.
  absl::StatusOr<std::unique_ptr<ApplyLock>> lock = ApplyLock::Acquire(writer_.managed_dir());
  if (!lock.ok()) {
    result.set_status(
        absl::InternalError(absl::StrCat("cannot take the apply lock: ", lock.status().message())));
    return result;
  }
  RemoveStagingLeftovers(writer_.managed_dir());
  if (absl::Status s = UndoInterruptedWrite(writer_.managed_dir()); !s.ok()) {
    result.set_status(s);
    return result;
  }
  result.set_status(ApplyInto(changes, options, &result));
  return result;
}

absl::Status SambaApplier::ApplyInto(const std::vector<SettingChange>& changes,
                                     const std::vector<std::string>& options,
                                     ApplyResult* result_out) {
  ApplyResult& result = *result_out;
  ASSIGN_OR_RETURN(std::vector<Requested> reqs, ValidateChanges(changes));
  ASSIGN_OR_RETURN(std::vector<Option> opts, ParseOptions(options));

  ASSIGN_OR_RETURN(TestparmConfig config, writer_.ReadConfig());
  Posture current;
  FillConfig(config, &current);

  for (Requested& r : reqs) {
    if (!r.share.empty()) {
      const TestparmSection* section = config.FindShare(r.share);
      if (section == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            r.info.name, ": share '", r.share, "' does not exist in ", options_.samba.smb_conf));
      }
      r.share = section->name;
    }
    SettingChange before = MakeValue(r, current);
    if (!r.expected_current.empty()) {
      absl::StatusOr<std::string> expected =
          policy::NormalizeSettingValue(r.info, r.expected_current);
      std::string want = expected.ok() ? *expected : absl::AsciiStrToUpper(r.expected_current);
      if (want != before.value()) {
        return absl::FailedPreconditionError(absl::StrCat(
            r.info.name, r.share.empty() ? "" : absl::StrCat(" [", r.share, "]"),
            ": expected current value '", r.expected_current, "', found '", before.value(), "'"));
      }
    }
    result.before.push_back(std::move(before));
  }

  ASSIGN_OR_RETURN(std::vector<ParameterChange> params, PlanParameters(reqs, current));

  Posture after;
  auto verify = [&](const TestparmConfig& next) -> absl::Status {
    FillConfig(next, &after);
    for (const Requested& r : reqs) {
      std::string got = TypedValue(after, r.info.key, r.share).value_or("unknown");
      if (got != r.value) {
        std::string file = r.share.empty() ? writer_.GlobalFile() : writer_.ShareFile(r.share);
        return absl::AbortedError(absl::StrCat(
            r.info.name, r.share.empty() ? "" : absl::StrCat(" [", r.share, "]"), ": wrote ",
            r.value, " to ", file, " but testparm reads ", got, "; smb.conf must include ", file,
            " at the end of ", r.share.empty() ? "[global]" : absl::StrCat("[", r.share, "]")));
      }
    }
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(WriteResult written, writer_.Write(params, verify));
  result.actions = written.actions;
  if (written.files_changed.empty()) after = current;
  for (const Requested& r : reqs) result.after.push_back(MakeValue(r, after));

  // Options: make existing sessions renegotiate. Failures here are warnings: the settings are
  // already in effect for new connections.
  auto smbcontrol = [&](const std::vector<std::string>& args) {
    Command c;
    // "--": a share named "-d..." is a share, not one of smbcontrol's options.
    c.argv = {options_.samba.smbcontrol, "-s", options_.samba.smb_conf, "--", "smbd"};
    c.argv.insert(c.argv.end(), args.begin(), args.end());
    c.env = options_.samba.env;
    c.timeout = options_.samba.timeout;
    absl::StatusOr<CommandResult> r = runner_->Run(c);
    if (!r.ok()) {
      result.warnings.push_back(absl::StrCat(DescribeCommand(c), ": ", r.status().message()));
    } else if (r->exit_code != 0) {
      result.warnings.push_back(
          absl::StrCat(DescribeCommand(c), ": exit ", r->exit_code, ": ", ToolMessage(*r)));
    } else {
      result.actions.push_back(DescribeCommand(c));
    }
  };
  for (const Option& o : opts) {
    if (o.kind == Option::kCloseShare) {
      std::set<std::string> shares;
      if (!o.argument.empty()) {
        shares.insert(o.argument);
      } else {
        for (const Requested& r : reqs) {
          shares.insert(r.share.empty() ? "*" : r.share);
        }
      }
      if (shares.count("*") > 0) shares = {"*"};
      for (const std::string& s : shares) smbcontrol({"close-share", s});
    } else {
      std::set<std::string> addresses;
      if (!o.argument.empty()) {
        addresses.insert(o.argument);
      } else {
        Posture live;
        auto status = RunAndParse<SmbStatus>(
            runner_, SmbStatusCommand(options_.samba), kSmbstatusProbe, &live,
            [](const CommandResult& r) { return ParseSmbStatusJson(r.stdout_data); });
        for (const auto& e : live.probe_errors()) {
          result.warnings.push_back(absl::StrCat("kill-client-ip: ", e.message()));
        }
        if (status.has_value()) {
          for (const auto& s : status->sessions) {
            unsigned char buf[16];
            const std::string& a = s.client_address();
            if (::inet_pton(AF_INET, a.c_str(), buf) == 1 ||
                ::inet_pton(AF_INET6, a.c_str(), buf) == 1) {
              addresses.insert(a);
            }
          }
        }
      }
      for (const std::string& a : addresses) smbcontrol({"kill-client-ip", a});
    }
  }
  return absl::OkStatus();
}

}  // namespace smbfleet::agent::samba

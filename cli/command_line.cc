#include "cli/command_line.h"

#include <algorithm>
#include <set>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "collector/changes/rollout_spec.h"
#include "common/approval_signing.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "common/yaml_config.h"
#include "google/protobuf/util/time_util.h"
#include "policy/settings.h"

namespace smbfleet::cli {
namespace {

using google::protobuf::util::TimeUtil;

constexpr size_t kMaxSettingsFileBytes = 1 << 20;
constexpr size_t kMaxShareNameBytes = 80;

// "K=V" -> (K, V); `flag` names the flag in the error.
absl::StatusOr<std::pair<std::string, std::string>> ParseLabel(absl::string_view flag,
                                                               absl::string_view text) {
  size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": expected KEY=VALUE such as site=ams, got '", absl::CHexEscape(text), "'"));
  }
  return std::make_pair(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
}

bool HasControlCharacter(absl::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

// A share name the collector and agents can carry: they check it again, this only catches the
// mistake before the call.
absl::Status CheckShareName(absl::string_view where, absl::string_view share) {
  if (share.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": empty"));
  if (share.size() > kMaxShareNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", share.size(), " bytes, limit ", kMaxShareNameBytes));
  }
  if (HasControlCharacter(share)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": '", absl::CHexEscape(share), "' contains a control character"));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view flag, absl::string_view text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", d.status().message()));
  return absl::FromChrono(*d);
}

absl::Status NonEmpty(absl::string_view flag, absl::string_view value) {
  if (absl::StripAsciiWhitespace(value).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " must not be empty"));
  }
  return absl::OkStatus();
}

// The deepest subcommand that was given, for its help text.
const CLI::App* Deepest(const CLI::App* app) {
  for (const CLI::App* sub : app->get_subcommands()) return Deepest(sub);
  return app;
}

// Walks the tree: per command path ("smbfleetctl changes approve"), its subcommands and the
// flags it takes, its own and those of the commands above it (fallthrough).
void CollectCompletion(const CLI::App& app, const std::string& path, std::vector<std::string> flags,
                       std::vector<std::pair<std::string, std::string>>* subs,
                       std::vector<std::pair<std::string, std::string>>* flag_lists,
                       std::set<std::string>* valued) {
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->nonpositional()) continue;
    for (const std::string& name : opt->get_lnames()) {
      std::string flag = absl::StrCat("--", name);
      if (std::find(flags.begin(), flags.end(), flag) == flags.end()) flags.push_back(flag);
      if (opt->get_type_size() != 0) valued->insert(flag);
    }
  }
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands(std::function<bool(const CLI::App*)>())) {
    names.push_back(sub->get_name());
  }
  if (!names.empty()) subs->emplace_back(path, absl::StrJoin(names, " "));
  flag_lists->emplace_back(path, absl::StrJoin(flags, " "));
  for (const CLI::App* sub : app.get_subcommands(std::function<bool(const CLI::App*)>())) {
    CollectCompletion(*sub, absl::StrCat(path, " ", sub->get_name()), flags, subs, flag_lists,
                      valued);
  }
}

// `smbfleetctl completion bash`: tables generated from the tree and a function that follows the
// words typed so far down it (skipping the value after a flag that takes one).
std::string BashCompletion(const CLI::App& app) {
  std::vector<std::pair<std::string, std::string>> subs, flags;
  std::set<std::string> valued;
  CollectCompletion(app, "smbfleetctl", {}, &subs, &flags, &valued);
  std::string out =
      "# bash completion for smbfleetctl, generated from its command tree.\n"
      "# Use: source <(smbfleetctl completion bash)\n"
      "declare -gA _smbfleetctl_subs=(\n";
  for (const auto& [path, names] : subs)
    absl::StrAppend(&out, "  [\"", path, "\"]=\"", names, "\"\n");
  absl::StrAppend(&out, ")\ndeclare -gA _smbfleetctl_flags=(\n");
  for (const auto& [path, names] : flags)
    absl::StrAppend(&out, "  [\"", path, "\"]=\"", names, "\"\n");
  absl::StrAppend(&out, ")\n_smbfleetctl_valued=\" ", absl::StrJoin(valued, " "), " \"\n");
  absl::StrAppend(&out, R"(_smbfleetctl() {
  local cur=${COMP_WORDS[COMP_CWORD]} path=smbfleetctl w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $w == -* ]]; then
      if [[ $w != *=* && $_smbfleetctl_valued == *" $w "* ]]; then ((i++)); fi
      continue
    fi
    if [[ " ${_smbfleetctl_subs[$path]-} " == *" $w "* ]]; then path="$path $w"; fi
  done
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${_smbfleetctl_flags[$path]-}" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -W "${_smbfleetctl_subs[$path]-}" -- "$cur")
  fi
}
complete -F _smbfleetctl smbfleetctl
)");
  return out;
}

// "changes approve" for the subcommands given so far ("" for none).
std::string CommandPath(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* at = app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    names.push_back(at->get_name());
  }
  return absl::StrJoin(names, " ");
}

}  // namespace

absl::StatusOr<smbfleet::v1::ChangeState> ParseChangeState(absl::string_view text) {
  std::string upper = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  if (!absl::StartsWith(upper, "CHANGE_STATE_")) upper = absl::StrCat("CHANGE_STATE_", upper);
  smbfleet::v1::ChangeState state;
  if (upper != "CHANGE_STATE_UNSPECIFIED" && smbfleet::v1::ChangeState_Parse(upper, &state)) {
    return state;
  }
  std::vector<std::string> names;
  for (int i = smbfleet::v1::ChangeState_MIN + 1; i <= smbfleet::v1::ChangeState_MAX; ++i) {
    if (smbfleet::v1::ChangeState_IsValid(i)) {
      names.push_back(absl::AsciiStrToLower(absl::StripPrefix(
          smbfleet::v1::ChangeState_Name(static_cast<smbfleet::v1::ChangeState>(i)),
          "CHANGE_STATE_")));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("--state: unknown state '", absl::CHexEscape(text),
                                                 "' (one of ", absl::StrJoin(names, ", "), ")"));
}

absl::StatusOr<SettingsFile> ParseSettingsFile(const std::string& file, const std::string& text) {
  ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(file, text));
  ConfigProblems problems(file);
  SettingsFile out;
  if (!root.IsMap()) {
    problems.Add(root, "", "expected a mapping with hosts or labels, and settings");
    return problems.ToStatus();
  }
  CheckKeys(root, {"hosts", "labels", "settings"}, "", &problems);
  ReadStringList(root, "hosts", "", &out.hosts, &problems);
  std::vector<std::pair<std::string, std::string>> labels;
  ReadStringMap(root, "labels", "", &labels, &problems);
  out.labels.insert(labels.begin(), labels.end());
  for (size_t i = 0; i < out.hosts.size(); ++i) {
    if (out.hosts[i].empty() || HasControlCharacter(out.hosts[i])) {
      problems.Add(root["hosts"], absl::StrCat("hosts[", i, "]"),
                   absl::StrCat("not a host name: '", absl::CHexEscape(out.hosts[i]), "'"));
    }
  }
  if (out.hosts.empty() == out.labels.empty()) {
    problems.Add(root, "hosts",
                 "give the target hosts as either hosts: [NAME, ...] or labels: {KEY: VALUE}");
  }
  YAML::Node settings = root["settings"];
  if (!settings.IsDefined() || settings.IsNull() ||
      (settings.IsSequence() && settings.size() == 0)) {
    problems.Add(root, "settings", "required: a list of {setting, value[, share]}");
  } else if (!settings.IsSequence()) {
    problems.Add(settings, "settings", "expected a list of {setting, value[, share]}");
  } else {
    std::set<std::pair<std::string, std::string>> seen;
    for (size_t i = 0; i < settings.size(); ++i) {
      const YAML::Node entry = settings[i];
      std::string where = absl::StrCat("settings[", i, "]");
      if (!entry.IsMap()) {
        problems.Add(entry, where, "expected a mapping {setting, value[, share]}");
        continue;
      }
      CheckKeys(entry, {"setting", "share", "value"}, where, &problems);
      smbfleet::v1::SettingChange change;
      bool has_setting = ReadString(entry, "setting", where, change.mutable_setting(), &problems);
      bool has_value = ReadString(entry, "value", where, change.mutable_value(), &problems);
      bool has_share = ReadString(entry, "share", where, change.mutable_share(), &problems);
      if (!has_setting) {
        problems.Add(entry, JoinPath(where, "setting"), "required, e.g. server.requireSigning");
        continue;
      }
      auto info = policy::LookupSetting(change.setting());
      if (!info.ok()) {
        problems.Add(entry["setting"], JoinPath(where, "setting"),
                     absl::StrCat("'", absl::CHexEscape(change.setting()),
                                  "' is not on the allowlist (policy/settings.h)"));
        continue;
      }
      if (!has_value) {
        problems.Add(entry, JoinPath(where, "value"), "required");
      } else {
        auto normalized = policy::NormalizeSettingValue(*info, change.value());
        if (!normalized.ok()) {
          problems.Add(entry["value"], JoinPath(where, "value"), normalized.status().message());
        } else {
          change.set_value(*normalized);
        }
      }
      if (info->scope == policy::SettingScope::kShare) {
        if (!has_share) {
          problems.Add(entry, JoinPath(where, "share"),
                       absl::StrCat("required: ", change.setting(), " is a share setting"));
        } else if (absl::Status s = CheckShareName(JoinPath(where, "share"), change.share());
                   !s.ok()) {
          problems.Add(entry["share"], JoinPath(where, "share"),
                       absl::StripPrefix(s.message(), absl::StrCat(where, ".share: ")));
        }
      } else if (has_share) {
        problems.Add(entry["share"], JoinPath(where, "share"),
                     absl::StrCat(change.setting(), " is not a share setting"));
      }
      if (!seen.emplace(change.setting(), change.share()).second) {
        problems.Add(
            entry, where,
            absl::StrCat(change.setting(),
                         change.share().empty() ? "" : absl::StrCat(" [", change.share(), "]"),
                         " is listed twice"));
      }
      out.settings.push_back(std::move(change));
    }
  }
  RETURN_IF_ERROR(problems.ToStatus());
  return out;
}

absl::StatusOr<smbfleet::v1::ProposeChangeRequest> BuildProposeRequest(const ProposeFlags& flags) {
  int sources = (flags.hosts.empty() ? 0 : 1) + (flags.rule.empty() ? 0 : 1) +
                (flags.settings_file.empty() ? 0 : 1);
  if (sources != 1) {
    return absl::InvalidArgumentError(
        "changes propose: give exactly one of --host NAME ..., --rule RULE or --settings FILE");
  }
  if (!flags.labels.empty() && flags.rule.empty()) {
    return absl::InvalidArgumentError(
        "--label selects the hosts of a --rule (a --settings file has its own labels:)");
  }
  smbfleet::v1::ProposeChangeRequest req;
  req.set_reason(flags.reason);
  std::set<std::string> seen;
  for (const std::string& h : flags.hosts) {
    if (h.empty() || HasControlCharacter(h)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--host: not a host name: '", absl::CHexEscape(h), "'"));
    }
    if (seen.insert(h).second) req.add_hosts(h);
  }
  if (!flags.rule.empty()) {
    RETURN_IF_ERROR(NonEmpty("--rule", flags.rule));
    req.set_rule_id(flags.rule);
    for (const std::string& l : flags.labels) {
      ASSIGN_OR_RETURN(auto kv, ParseLabel("--label", l));
      auto [it, inserted] = req.mutable_labels()->insert({kv.first, kv.second});
      if (!inserted && it->second != kv.second) {
        return absl::InvalidArgumentError(absl::StrCat("--label: ", kv.first, " given twice ('",
                                                       it->second, "' and '", kv.second, "')"));
      }
    }
  }
  if (!flags.settings_file.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadFile(flags.settings_file, kMaxSettingsFileBytes));
    ASSIGN_OR_RETURN(SettingsFile file, ParseSettingsFile(flags.settings_file, text));
    for (const std::string& h : file.hosts) req.add_hosts(h);
    req.mutable_labels()->insert(file.labels.begin(), file.labels.end());
    for (auto& s : file.settings) *req.add_settings() = std::move(s);
  }
  return req;
}

absl::StatusOr<smbfleet::v1::ApproveChangeRequest> BuildApproveRequest(const ApproveFlags& flags) {
  RETURN_IF_ERROR(NonEmpty("ID", flags.id));
  smbfleet::v1::ApproveChangeRequest req;
  req.set_id(flags.id);
  req.set_comment(flags.comment);
  auto* rollout = req.mutable_rollout();
  std::set<std::string> canaries;
  for (const std::string& h : flags.canary) {
    if (h.empty() || HasControlCharacter(h)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--canary: not a host name: '", absl::CHexEscape(h), "'"));
    }
    if (!canaries.insert(h).second) {
      return absl::InvalidArgumentError(absl::StrCat("--canary: ", h, " given twice"));
    }
    rollout->add_canary_hosts(h);
  }
  // Checked here exactly as the collector parses them, so that a typo is a usage error.
  if (auto waves = collector::changes::ParseWaves(flags.waves); !waves.ok()) {
    return absl::InvalidArgumentError(waves.status().message());
  }
  rollout->set_waves(flags.waves);
  if (auto watch = collector::changes::ParseWatch(flags.watch); !watch.ok()) {
    return absl::InvalidArgumentError(watch.status().message());
  }
  rollout->set_watch(flags.watch);
  for (const std::string& w : flags.windows) {
    if (auto window = collector::changes::ParseWindow(w); !window.ok()) {
      return absl::InvalidArgumentError(window.status().message());
    }
    rollout->add_windows(w);
  }
  rollout->set_max_precondition_failed(flags.max_precondition_failed);
  return req;
}

absl::StatusOr<absl::Time> ExpiryArgument(absl::string_view flag, const std::string& text,
                                          absl::Time now) {
  absl::Time expires;
  google::protobuf::Timestamp ts;
  if (TimeUtil::FromString(text, &ts)) {
    expires = absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
  } else {
    auto d = ParseDuration(text);
    if (!d.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag,
                       ": expected an RFC 3339 time such as 2027-01-31T00:00:00Z or a "
                       "duration such as 30d, got '",
                       absl::CHexEscape(text), "'"));
    }
    expires = now + absl::FromChrono(*d);
  }
  if (expires <= now) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", text, " is not in the future"));
  }
  return expires;
}

absl::StatusOr<smbfleet::v1::RequestWaiverRequest> BuildWaiverRequest(const WaiverFlags& flags,
                                                                      absl::Time now) {
  RETURN_IF_ERROR(NonEmpty("--rule", flags.rule));
  RETURN_IF_ERROR(NonEmpty("--justification", flags.justification));
  RETURN_IF_ERROR(NonEmpty("--expires", flags.expires));
  smbfleet::v1::RequestWaiverRequest req;
  smbfleet::v1::Waiver* w = req.mutable_waiver();
  w->set_rule_id(flags.rule);
  w->set_justification(flags.justification);
  w->set_ticket(flags.ticket);
  bool by_label = !flags.label.empty(), by_share = !flags.share.empty();
  bool by_host = !flags.host.empty() && !by_share;
  if (by_host + by_label + by_share != 1 || (by_label && !flags.host.empty())) {
    return absl::InvalidArgumentError(
        "waivers request: give one scope: --host H, --label K=V, or --share S [--host H]");
  }
  if (!flags.host.empty()) {
    if (HasControlCharacter(flags.host)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--host: not a host name: '", absl::CHexEscape(flags.host), "'"));
    }
    w->set_host(flags.host);
  }
  if (by_label) {
    ASSIGN_OR_RETURN(auto kv, ParseLabel("--label", flags.label));
    w->set_label_key(kv.first);
    w->set_label_value(kv.second);
  }
  if (by_share) {
    RETURN_IF_ERROR(CheckShareName("--share", flags.share));
    w->set_share(flags.share);
  }
  ASSIGN_OR_RETURN(absl::Time expires, ExpiryArgument("--expires", flags.expires, now));
  w->mutable_expires_at()->set_seconds(absl::ToUnixSeconds(expires));
  return req;
}

// The public key an admin is given: "ed25519:BASE64" or @FILE holding it (as `keys show`
// prints it, "public key: ed25519:..." lines included).
absl::StatusOr<std::string> PublicKeyArgument(const std::string& text) {
  std::string value = text;
  if (absl::StartsWith(text, "@")) {
    auto content = ReadFile(text.substr(1), 64 << 10);
    if (!content.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--public-key: ", content.status().message()));
    }
    value = *content;
    const size_t at = value.find("ed25519:");
    if (at != std::string::npos) value = value.substr(at);
    value = std::string(absl::StripAsciiWhitespace(value.substr(0, value.find('\n'))));
  }
  auto raw = ParsePublicKeyText(absl::StripAsciiWhitespace(value));
  if (!raw.ok())
    return absl::InvalidArgumentError(absl::StrCat("--public-key: ", raw.status().message()));
  return raw;
}

namespace {

absl::StatusOr<Invocation> ParseTree(const std::vector<std::string>& args, absl::Time now) {
  Invocation inv;
  CLI::App app{"The operator's command line over the collector's AdminService.", "smbfleetctl"};
  // Global flags may also follow the command: `smbfleetctl changes list --format=json`.
  app.fallthrough();
  app.footer(
      "The configuration file (YAML: collector, server_name, tls: {cert, key, ca}) comes from\n"
      "--config or $SMBFLEET_CTL_CONFIG. Offline policy work: smbfleetctl policy check|eval.\n"
      "Global flags, accepted after any command too: --config, --collector, --cert, --key,\n"
      "--ca, --format, --call-timeout.\n"
      "Exit codes: 0 ok, 1 failed, 2 usage, 3 not found, 4 permission denied, 5 refused by the\n"
      "workflow.");
  GlobalFlags& g = inv.global;
  app.add_option("--config", g.config, "smbfleetctl configuration file (YAML)");
  app.add_option("--collector", g.collector, "collector address HOST:PORT");
  app.add_option("--cert", g.cert, "operator certificate (PEM)");
  app.add_option("--key", g.key, "operator key (PEM)");
  app.add_option("--ca", g.ca, "CA certificate the collector's certificate chains to");
  app.add_option("--format", g.format,
                 "output: text, json (protobuf's JSON mapping) or, for compliance, csv")
      ->check(CLI::IsMember({"text", "json", "csv"}));
  std::string call_timeout_text;
  app.add_option("--call-timeout", call_timeout_text,
                 "each call's deadline: seconds or a duration such as 90s or 10m (default 30s)");

  // hosts, host, compliance, findings
  std::string prefix;
  auto* hosts = app.add_subcommand("hosts", "list hosts (with their desired/applied change)");
  hosts->add_option("--prefix", prefix, "only hosts whose name starts with this");
  EnrollmentFlags& enroll = inv.enrollment;
  auto* hosts_label = hosts->add_subcommand("label", "replace a host's trusted labels (admin)");
  hosts_label->add_option("HOST", enroll.host, "the host")->required();
  hosts_label->add_option("LABELS", enroll.labels,
                          "key=value ... (replaces the host's trusted labels)");
  hosts_label->add_option("--reason", enroll.reason, "why")->required();
  auto* host = app.add_subcommand("host", "one host");
  std::string host_name;
  auto* host_show = host->add_subcommand("show", "a host's latest posture");
  host_show->add_option("NAME", host_name, "host name")->required();
  auto* host_refresh = host->add_subcommand("refresh", "ask the host's agent to report now");
  host_refresh->add_option("NAME", host_name, "host name")->required();
  auto* compliance =
      app.add_subcommand("compliance", "fleet compliance per rule of the active policy");
  std::string findings_host, findings_rule;
  bool include_waived = false;
  auto* findings = app.add_subcommand("findings", "failing results, since when");
  findings->add_option("--host", findings_host, "only this host");
  findings->add_option("--rule", findings_rule, "only this rule");
  findings->add_flag("--include-waived", include_waived,
                     "also the results a waiver hides (with the waiver id)");
  std::string readiness_rule, readiness_change;
  uint32_t readiness_limit = 0;
  auto* readiness = app.add_subcommand(
      "readiness",
      "who enforcing a rule or change would cut off: clients (server settings) or servers "
      "(client settings), first/last seen");
  readiness->add_option("--rule", readiness_rule, "a rule of the active policy");
  readiness->add_option("--change", readiness_change, "a proposed change (CHG-...)");
  readiness->add_option("--limit", readiness_limit, "at most this many (default 500)");

  // changes ...
  auto* changes = app.add_subcommand("changes", "propose, review, approve and roll out changes");
  ProposeFlags propose_flags;
  auto* propose = changes->add_subcommand(
      "propose", "propose a change; prints the new change id alone on the first line");
  propose->add_option("--host", propose_flags.hosts, "each host's remediation plan");
  propose->add_option("--rule", propose_flags.rule, "every non-compliant host of this rule");
  propose->add_option("--label", propose_flags.labels, "with --rule: hosts carrying K=V");
  propose->add_option("--settings", propose_flags.settings_file, "typed settings (YAML)");
  propose->add_option("--reason", propose_flags.reason, "why");
  std::string state_text;
  uint32_t limit = 0;
  auto* list = changes->add_subcommand("list", "one line per change, newest first");
  list->add_option("--state", state_text, "only changes in this state (e.g. proposed)");
  list->add_option("--limit", limit, "at most this many (0: the collector's default)");
  std::string change_id, reason, comment;
  auto* show = changes->add_subcommand("show", "a change: impact, approvals, rollout, hosts");
  show->add_option("ID", change_id, "change id")->required();
  ApproveFlags approve_flags;
  auto* approve = changes->add_subcommand("approve", "approve a change (approver role)");
  approve->add_option("ID", approve_flags.id, "change id")->required();
  approve->add_option("--comment", approve_flags.comment, "why");
  approve->add_option("--canary", approve_flags.canary, "the first wave, in this order");
  approve->add_option("--waves", approve_flags.waves, "e.g. 10%,50%,100% (default 100%)");
  approve->add_option("--watch", approve_flags.watch, "pause after each wave, e.g. 10m");
  approve->add_option("--window", approve_flags.windows,
                      "maintenance window per label, e.g. 'site=ams:Sat 22:00-06:00 UTC+01:00'");
  std::string approver_key;
  approve->add_option("--key", approver_key,
                      "your approver key (default $SMBFLEET_APPROVER_KEY or "
                      "~/.config/smbfleet/approver.key)");
  approve->add_option("--max-precondition-failed", approve_flags.max_precondition_failed,
                      "halt when more hosts than this ack PRECONDITION_FAILED (default 0)");
  auto* reject = changes->add_subcommand("reject", "reject a change (approver role)");
  reject->add_option("ID", change_id, "change id")->required();
  reject->add_option("--reason", reason, "why")->required();
  std::vector<std::pair<std::string, CLI::App*>> actions;
  for (const char* name : {"halt", "resume", "rollback"}) {
    static const std::map<std::string, std::string> kHelp = {
        {"halt", "stop dispatching the rollout"},
        {"resume", "continue a halted rollout"},
        {"rollback", "send each applied host its journaled before-values"}};
    auto* sub = changes->add_subcommand(name, kHelp.at(name));
    sub->add_option("ID", change_id, "change id")->required();
    sub->add_option("--reason", reason, "why");
    if (std::string(name) == "rollback") {
      sub->add_option("--key", approver_key, "your approver key: the rollback is signed at once");
    }
    actions.emplace_back(name, sub);
  }
  std::string interval_text = "2s", timeout_text;
  auto* watch = changes->add_subcommand(
      "watch",
      "follow a rollout (a progress bar on a terminal); exit 0 when the change completed with "
      "every host applied, 1 when it ended otherwise");
  watch->add_option("ID", change_id, "change id")->required();
  watch->add_option("--interval", interval_text, "poll period (default 2s)");
  watch->add_option("--timeout", timeout_text, "give up (exit 1) after this long");
  std::string calibration_since;
  bool calibration_save = false, calibration_history = false;
  auto* calibration = changes->add_subcommand(
      "calibration",
      "the cost model against what changes measured, per host class: predicted vs measured CPU "
      "and a suggested factor");
  calibration->add_option("--since", calibration_since,
                          "change hosts acked within this long (default 30d)");
  calibration->add_flag("--save", calibration_save,
                        "save it with its inputs; its factors then correct new proposals' CPU "
                        "predictions (approver or admin)");
  calibration->add_flag("--history", calibration_history, "list the saved calibrations");

  // audit, waivers
  std::string audit_change, audit_waiver;
  auto* audit = app.add_subcommand("audit", "the append-only audit log, oldest first");
  audit->add_option("--change", audit_change, "only this change");
  audit->add_option("--waiver", audit_waiver, "only this waiver");
  audit->add_option("--limit", limit, "at most this many entries (0: all)");
  auto* waivers = app.add_subcommand("waivers", "request, approve and revoke waivers");
  bool all_waivers = false;
  auto* waivers_list = waivers->add_subcommand("list", "waivers in force");
  waivers_list->add_flag("--all", all_waivers, "also requested, revoked and expired waivers");
  WaiverFlags waiver_flags;
  auto* waiver_request = waivers->add_subcommand("request", "request a waiver (proposer role)");
  waiver_request->add_option("--rule", waiver_flags.rule, "rule id (* = every rule)")->required();
  waiver_request->add_option("--host", waiver_flags.host, "scope: a host (or the --share's host)");
  waiver_request->add_option("--label", waiver_flags.label, "scope: hosts carrying K=V");
  waiver_request->add_option("--share", waiver_flags.share, "scope: a share name");
  waiver_request->add_option("--justification", waiver_flags.justification, "why")->required();
  waiver_request->add_option("--ticket", waiver_flags.ticket, "ticket reference");
  waiver_request->add_option("--expires", waiver_flags.expires, "RFC 3339 time or e.g. 30d")
      ->required();
  std::string waiver_id;
  auto* waiver_approve = waivers->add_subcommand("approve", "approve a waiver (approver role)");
  waiver_approve->add_option("ID", waiver_id, "waiver id")->required();
  waiver_approve->add_option("--comment", comment, "why");
  auto* waiver_revoke = waivers->add_subcommand("revoke", "revoke a waiver (approver role)");
  waiver_revoke->add_option("ID", waiver_id, "waiver id")->required();
  waiver_revoke->add_option("--reason", reason, "why")->required();

  // approvers: the public keys approvals are checked against (docs/smbfleetctl.md)
  auto* approvers = app.add_subcommand("approvers", "register, list and revoke approver keys");
  std::string approver_name, public_key_text, key_id;
  bool all_keys = false;
  auto* approvers_add = approvers->add_subcommand("add", "register NAME's public key (admin)");
  approvers_add->add_option("NAME", approver_name, "the approver's operator name")->required();
  approvers_add->add_option("--public-key", public_key_text, "ed25519:BASE64 or @FILE")->required();
  auto* approvers_list = approvers->add_subcommand("list", "registered approver keys");
  approvers_list->add_flag("--all", all_keys, "also revoked keys");
  auto* approvers_revoke = approvers->add_subcommand("revoke", "revoke an approver key (admin)");
  approvers_revoke->add_option("KEY_ID", key_id, "key id")->required();
  approvers_revoke->add_option("--reason", reason, "why")->required();

  // identity: who am I, people's bearer tokens, certificate revocation (docs/smbfleetctl.md)
  auto* whoami = app.add_subcommand("whoami", "who the collector takes you for, and your roles");
  auto* tokens = app.add_subcommand("tokens", "people's bearer tokens (admin)");
  std::string token_name, token_roles, token_expires = "30d", token_id;
  bool all_tokens = false;
  auto* tokens_create = tokens->add_subcommand("create", "a token for NAME, shown once");
  tokens_create->add_option("NAME", token_name, "the person's operator name")->required();
  tokens_create->add_option("--roles", token_roles, "viewer,proposer,approver,admin")->required();
  tokens_create->add_option("--expires", token_expires, "RFC 3339 time or e.g. 30d (default 30d)");
  auto* tokens_list = tokens->add_subcommand("list", "tokens in force");
  tokens_list->add_flag("--all", all_tokens, "also revoked and expired tokens");
  auto* tokens_revoke = tokens->add_subcommand("revoke", "revoke a token");
  tokens_revoke->add_option("ID", token_id, "token id")->required();
  tokens_revoke->add_option("--reason", reason, "why")->required();
  auto* certs =
      app.add_subcommand("certs", "list issued certificates, revoke them, list revocations");
  std::string cert_serial, cert_fingerprint, cert_host;
  auto* certs_revoke =
      certs->add_subcommand("revoke", "revoke a certificate, or a whole host (admin)");
  certs_revoke->add_option("--serial", cert_serial, "serial, hex (openssl x509 -serial)");
  certs_revoke->add_option("--fingerprint", cert_fingerprint, "SHA-256 fingerprint, hex");
  certs_revoke->add_option("--host", cert_host,
                           "alone: revoke the host (every certificate, and re-enrollment, for "
                           "good); with --serial/--fingerprint: the host it belongs to, a note");
  certs_revoke->add_option("--reason", reason, "why")->required();
  auto* certs_revocations = certs->add_subcommand("revocations", "revoked certificates");
  auto* certs_list = certs->add_subcommand("list", "certificates the collector issued, valid ones");
  certs_list->add_option("--host", enroll.host, "only this host");
  certs_list->add_flag("--all", enroll.all, "also expired and revoked ones");

  // enroll-tokens: agent enrollment (docs/smbfleetctl.md "Enrollment")
  auto* enroll_tokens = app.add_subcommand("enroll-tokens", "agent enrollment tokens (admin)");
  auto* enroll_create = enroll_tokens->add_subcommand(
      "create", "a new enrollment token (admin); its secret is shown once");
  enroll_create->add_option("--uses", enroll.uses, "how many agents may enroll with it")
      ->required();
  enroll_create->add_option("--expires", enroll.expires, "a duration such as 7d (at most 90d)")
      ->capture_default_str();
  enroll_create->add_option("--label", enroll.labels,
                            "K=V: a trusted label every host enrolled gets");
  enroll_create->add_option("--comment", enroll.comment, "what it is for");
  enroll_create->add_flag("--allow-reenrollment", enroll.allow_reenrollment,
                          "hosts that still hold a valid certificate may enroll again");
  auto* enroll_list = enroll_tokens->add_subcommand("list", "active enrollment tokens");
  enroll_list->add_flag("--all", enroll.all, "also revoked, expired and used-up tokens");
  auto* enroll_revoke = enroll_tokens->add_subcommand("revoke", "revoke an enrollment token");
  enroll_revoke->add_option("ID", enroll.id, "token id")->required();
  enroll_revoke->add_option("--reason", enroll.reason, "why")->required();

  // trust: the offline root key and the approver sets it signs (docs/smbfleetctl.md "trust")
  TrustFlags& trust = inv.trust;
  auto* trust_group =
      app.add_subcommand("trust", "the offline root key and the approver sets it signs");
  auto* trust_init =
      trust_group->add_subcommand("init-root", "make the offline root key (0600) and print it");
  // Its own --key: the root's file, not the operator's TLS key.
  trust_init->add_option("--key", trust.root_file, "where to write the root's private key")
      ->capture_default_str();
  auto* trust_sign =
      trust_group->add_subcommand("sign-approvers", "sign a set of approver keys with the root");
  trust_sign->add_option("--root-key", trust.root_key, "the root's private key (from init-root)")
      ->required();
  trust_sign->add_option("--serial", trust.serial, "greater than the last published set's")
      ->required();
  auto* from_collector =
      trust_sign->add_flag("--from-collector", trust.from_collector,
                           "the approver keys registered on the collector, revoked ones left out");
  auto* approvers_file =
      trust_sign->add_option("--approvers", trust.approvers_file, "YAML: name: ed25519:...");
  from_collector->excludes(approvers_file);
  trust_sign->add_option("--out", trust.out_file, "the signed set to write")->required();
  auto* trust_publish =
      trust_group->add_subcommand("publish", "hand a signed set to the collector for the agents");
  trust_publish->add_option("SET", trust.set_file, "the file sign-approvers wrote")->required();
  auto* trust_show =
      trust_group->add_subcommand("show", "the published approver set (or --file SET)");
  trust_show->add_option("--file", trust.show_file, "a set file instead of the collector's");

  // keys: the approver's own signing key, local (docs/smbfleetctl.md "Approver keys")
  auto* keys = app.add_subcommand("keys", "your approver key, local: never sent anywhere");
  auto* keys_init = keys->add_subcommand("init", "make your approver key (0600; never replaced)");
  auto* keys_show = keys->add_subcommand("show", "print its public key and key id");
  for (CLI::App* sub : {keys_init, keys_show}) {
    sub->add_option("--key", inv.key_file,
                    "the key file (default $SMBFLEET_APPROVER_KEY or "
                    "~/.config/smbfleet/approver.key)");
  }

  // policy: offline policy work, no collector
  PolicyFlags& pol = inv.policy;
  auto* policy = app.add_subcommand("policy", "offline policy work: check and evaluate files");
  auto* policy_check = policy->add_subcommand("check", "check policy files");
  policy_check->add_option("FILE", pol.files, "policy files (YAML)")->required();
  auto* policy_eval =
      policy->add_subcommand("eval", "evaluate postures against a policy, with the plans");
  policy_eval->add_option("--policy", pol.policy_file, "the policy (YAML)")->required();
  policy_eval->add_option("--posture", pol.postures, "a posture (JSON); repeat for several")
      ->required();
  policy_eval->add_option("--waivers", pol.waivers_file, "waivers (JSON WaiverList)");
  policy_eval->add_option("--now", pol.now, "evaluate at this RFC 3339 time (default now)");

  // completion: generated from this tree
  auto* completion = app.add_subcommand("completion", "print a shell completion script");
  auto* completion_bash =
      completion->add_subcommand("bash", "bash completion: source <(smbfleetctl completion bash)");

  // `policy help` is documented: the same as `policy --help`.
  std::vector<std::string> words(args.rbegin(), args.rend());
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == "help" && words[i + 1] == "policy") words[i] = "--help";
  }
  try {
    app.parse(words);
  } catch (const CLI::CallForHelp&) {
    inv.command = "help";
    // help(prev) prints "Usage: PREV NAME": PREV is the path above the command.
    const CLI::App* deepest = Deepest(&app);
    std::string path = CommandPath(&app);
    std::string above = path.substr(0, std::min(path.size(), path.rfind(' ')));
    inv.help = deepest == &app ? app.help()
               : above == path ? deepest->help("smbfleetctl")
                               : deepest->help(absl::StrCat("smbfleetctl ", above));
    return inv;
  } catch (const CLI::CallForAllHelp&) {
    inv.command = "help";
    inv.help = app.help("", CLI::AppFormatMode::All);
    return inv;
  } catch (const CLI::ParseError& e) {
    // Named by the command it was given to: "changes approve: ...".
    std::string where = CommandPath(&app);
    return absl::InvalidArgumentError(where.empty() ? std::string(e.what())
                                                    : absl::StrCat(where, ": ", e.what()));
  }

  // Checked here rather than with require_subcommand so that `changes bogus` names "bogus".
  for (const CLI::App* group :
       {static_cast<const CLI::App*>(&app), static_cast<const CLI::App*>(host),
        static_cast<const CLI::App*>(changes), static_cast<const CLI::App*>(waivers),
        static_cast<const CLI::App*>(approvers), static_cast<const CLI::App*>(tokens),
        static_cast<const CLI::App*>(certs), static_cast<const CLI::App*>(enroll_tokens),
        static_cast<const CLI::App*>(trust_group), static_cast<const CLI::App*>(keys),
        static_cast<const CLI::App*>(policy), static_cast<const CLI::App*>(completion)}) {
    if ((group == &app || group->parsed()) && group->get_subcommands().empty()) {
      std::vector<std::string> names;
      for (const CLI::App* sub : group->get_subcommands(std::function<bool(const CLI::App*)>())) {
        names.push_back(sub->get_name());
      }
      return absl::InvalidArgumentError(absl::StrCat(
          group == &app ? "no command given" : group->get_name() + ": no subcommand given",
          " (one of ", absl::StrJoin(names, ", "), ")"));
    }
  }

  if (!call_timeout_text.empty()) {
    // Bare digits are seconds.
    const bool seconds = std::all_of(call_timeout_text.begin(), call_timeout_text.end(),
                                     [](unsigned char c) { return absl::ascii_isdigit(c); });
    ASSIGN_OR_RETURN(
        inv.global.call_timeout,
        ParseDurationFlag("--call-timeout", seconds ? call_timeout_text + "s" : call_timeout_text));
    if (inv.global.call_timeout <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError("--call-timeout must be more than 0");
    }
  }

  auto set = [&inv](std::string command, auto request) {
    inv.command = std::move(command);
    inv.request = std::make_shared<decltype(request)>(std::move(request));
  };
  inv.approver_key = approver_key;
  // Commands that carry their flags rather than a request.
  const std::vector<std::pair<const CLI::App*, const char*>> kLocal = {
      {hosts_label, "hosts label"},
      {certs_list, "certs list"},
      {enroll_create, "enroll-tokens create"},
      {enroll_list, "enroll-tokens list"},
      {enroll_revoke, "enroll-tokens revoke"},
      {trust_init, "trust init-root"},
      {trust_sign, "trust sign-approvers"},
      {trust_publish, "trust publish"},
      {trust_show, "trust show"},
      {keys_init, "keys init"},
      {keys_show, "keys show"},
      {policy_check, "policy check"},
      {policy_eval, "policy eval"}};
  for (const auto& [sub, name] : kLocal) {
    if (sub->parsed()) {
      inv.command = name;
      inv.key_file_given = (keys_init->parsed() && keys_init->count("--key") > 0) ||
                           (keys_show->parsed() && keys_show->count("--key") > 0);
      return inv;
    }
  }
  if (completion_bash->parsed()) {
    inv.command = "completion";
    inv.help = BashCompletion(app);
    return inv;
  }
  if (whoami->parsed()) {
    set("whoami", smbfleet::v1::WhoAmIRequest());
  } else if (tokens_create->parsed()) {
    RETURN_IF_ERROR(NonEmpty("NAME", token_name));
    smbfleet::v1::CreateApiTokenRequest req;
    req.set_name(token_name);
    for (absl::string_view r : absl::StrSplit(token_roles, ',', absl::SkipWhitespace())) {
      req.add_roles(std::string(absl::StripAsciiWhitespace(r)));
    }
    if (req.roles().empty()) {
      return absl::InvalidArgumentError(
          "--roles: one or more of viewer, proposer, approver, admin");
    }
    ASSIGN_OR_RETURN(absl::Time expires, ExpiryArgument("--expires", token_expires, now));
    req.mutable_expires_at()->set_seconds(absl::ToUnixSeconds(expires));
    set("tokens create", req);
  } else if (tokens_list->parsed()) {
    smbfleet::v1::ListApiTokensRequest req;
    req.set_include_inactive(all_tokens);
    set("tokens list", req);
  } else if (tokens_revoke->parsed()) {
    RETURN_IF_ERROR(NonEmpty("ID", token_id));
    RETURN_IF_ERROR(NonEmpty("--reason", reason));
    smbfleet::v1::RevokeApiTokenRequest req;
    req.set_id(token_id);
    req.set_reason(reason);
    set("tokens revoke", req);
  } else if (certs_revoke->parsed()) {
    if (cert_serial.empty() && cert_fingerprint.empty() && cert_host.empty()) {
      return absl::InvalidArgumentError(
          "certs revoke: give --serial or --fingerprint (one certificate), or --host alone (the "
          "whole host)");
    }
    RETURN_IF_ERROR(NonEmpty("--reason", reason));
    smbfleet::v1::RevokeCertificateRequest req;
    // openssl prints "serial=1A2B"; the collector compares lower-case hex.
    req.mutable_revocation()->set_serial(
        std::string(absl::StripPrefix(absl::StripPrefix(cert_serial, "serial="), "0x")));
    req.mutable_revocation()->set_fingerprint(
        std::string(absl::StripPrefix(cert_fingerprint, "sha256 Fingerprint=")));
    req.mutable_revocation()->set_host(cert_host);
    req.mutable_revocation()->set_reason(reason);
    set("certs revoke", req);
  } else if (certs_revocations->parsed()) {
    set("certs revocations", smbfleet::v1::ListRevocationsRequest());
  } else if (approvers_add->parsed()) {
    RETURN_IF_ERROR(NonEmpty("NAME", approver_name));
    smbfleet::v1::RegisterApproverKeyRequest req;
    req.set_name(approver_name);
    ASSIGN_OR_RETURN(*req.mutable_public_key(), PublicKeyArgument(public_key_text));
    set("approvers add", req);
  } else if (approvers_list->parsed()) {
    smbfleet::v1::ListApproverKeysRequest req;
    req.set_include_revoked(all_keys);
    set("approvers list", req);
  } else if (approvers_revoke->parsed()) {
    RETURN_IF_ERROR(NonEmpty("KEY_ID", key_id));
    RETURN_IF_ERROR(NonEmpty("--reason", reason));
    smbfleet::v1::RevokeApproverKeyRequest req;
    req.set_key_id(key_id);
    req.set_reason(reason);
    set("approvers revoke", req);
  } else if (hosts->parsed()) {
    smbfleet::v1::ListHostsRequest req;
    req.set_name_prefix(prefix);
    set("hosts", req);
  } else if (host_show->parsed() || host_refresh->parsed()) {
    RETURN_IF_ERROR(NonEmpty("NAME", host_name));
    if (host_show->parsed()) {
      smbfleet::v1::GetHostRequest req;
      req.set_name(host_name);
      set("host show", req);
    } else {
      smbfleet::v1::RequestReportRequest req;
      req.set_name(host_name);
      set("host refresh", req);
    }
  } else if (compliance->parsed()) {
    set("compliance", smbfleet::v1::GetComplianceRequest());
  } else if (findings->parsed()) {
    smbfleet::v1::ListFindingsRequest req;
    req.set_host(findings_host);
    req.set_rule_id(findings_rule);
    req.set_include_waived(include_waived);
    set("findings", req);
  } else if (readiness->parsed()) {
    if (readiness_rule.empty() == readiness_change.empty()) {
      return absl::InvalidArgumentError("readiness: give exactly one of --rule and --change");
    }
    smbfleet::v1::GetReadinessRequest req;
    req.set_rule_id(readiness_rule);
    req.set_change_id(readiness_change);
    req.set_limit(readiness_limit);
    set("readiness", req);
  } else if (propose->parsed()) {
    ASSIGN_OR_RETURN(auto req, BuildProposeRequest(propose_flags));
    set("changes propose", req);
  } else if (list->parsed()) {
    smbfleet::v1::ListChangesRequest req;
    if (!state_text.empty()) {
      ASSIGN_OR_RETURN(auto state, ParseChangeState(state_text));
      req.set_state(state);
    }
    req.set_limit(limit);
    set("changes list", req);
  } else if (show->parsed() || watch->parsed()) {
    RETURN_IF_ERROR(NonEmpty("ID", change_id));
    smbfleet::v1::GetChangeRequest req;
    req.set_id(change_id);
    if (watch->parsed()) {
      ASSIGN_OR_RETURN(inv.watch.interval, ParseDurationFlag("--interval", interval_text));
      if (inv.watch.interval <= absl::ZeroDuration()) {
        return absl::InvalidArgumentError("--interval must be more than 0");
      }
      if (!timeout_text.empty()) {
        ASSIGN_OR_RETURN(inv.watch.timeout, ParseDurationFlag("--timeout", timeout_text));
      }
    }
    set(show->parsed() ? "changes show" : "changes watch", req);
  } else if (calibration->parsed()) {
    if (calibration_save && calibration_history) {
      return absl::InvalidArgumentError("changes calibration: give --save or --history, not both");
    }
    if (calibration_history) {
      if (!calibration_since.empty()) {
        return absl::InvalidArgumentError("--since: not with --history (it lists what was saved)");
      }
      set("changes calibration history", smbfleet::v1::ListCostModelCalibrationsRequest());
    } else {
      google::protobuf::Duration since;
      if (!calibration_since.empty()) {
        ASSIGN_OR_RETURN(absl::Duration d, ParseDurationFlag("--since", calibration_since));
        if (d <= absl::ZeroDuration()) {
          return absl::InvalidArgumentError("--since must be more than 0");
        }
        since.set_seconds(absl::ToInt64Seconds(d));
      }
      if (calibration_save) {
        smbfleet::v1::SaveCostModelCalibrationRequest req;
        if (!calibration_since.empty()) *req.mutable_since() = since;
        set("changes calibration save", req);
      } else {
        smbfleet::v1::CostModelCalibrationRequest req;
        if (!calibration_since.empty()) *req.mutable_since() = since;
        set("changes calibration", req);
      }
    }
  } else if (approve->parsed()) {
    ASSIGN_OR_RETURN(auto req, BuildApproveRequest(approve_flags));
    set("changes approve", req);
  } else if (reject->parsed()) {
    RETURN_IF_ERROR(NonEmpty("ID", change_id));
    RETURN_IF_ERROR(NonEmpty("--reason", reason));
    smbfleet::v1::RejectChangeRequest req;
    req.set_id(change_id);
    req.set_reason(reason);
    set("changes reject", req);
  } else if (audit->parsed()) {
    smbfleet::v1::ListAuditRequest req;
    req.set_change_id(audit_change);
    req.set_waiver_id(audit_waiver);
    req.set_limit(limit);
    set("audit", req);
  } else if (waivers_list->parsed()) {
    smbfleet::v1::ListWaiversRequest req;
    req.set_include_inactive(all_waivers);
    set("waivers list", req);
  } else if (waiver_request->parsed()) {
    ASSIGN_OR_RETURN(auto req, BuildWaiverRequest(waiver_flags, now));
    set("waivers request", req);
  } else if (waiver_approve->parsed()) {
    RETURN_IF_ERROR(NonEmpty("ID", waiver_id));
    smbfleet::v1::ApproveWaiverRequest req;
    req.set_id(waiver_id);
    req.set_comment(comment);
    set("waivers approve", req);
  } else if (waiver_revoke->parsed()) {
    RETURN_IF_ERROR(NonEmpty("ID", waiver_id));
    RETURN_IF_ERROR(NonEmpty("--reason", reason));
    smbfleet::v1::RevokeWaiverRequest req;
    req.set_id(waiver_id);
    req.set_reason(reason);
    set("waivers revoke", req);
  } else {
    for (const auto& [name, sub] : actions) {
      if (!sub->parsed()) continue;
      RETURN_IF_ERROR(NonEmpty("ID", change_id));
      smbfleet::v1::ChangeActionRequest req;
      req.set_id(change_id);
      req.set_reason(reason);
      set(absl::StrCat("changes ", name), req);
    }
  }
  if (inv.request == nullptr) return absl::InternalError("no command was recognised");
  return inv;
}

}  // namespace

absl::StatusOr<Invocation> ParseCommandLine(const std::vector<std::string>& args, absl::Time now) {
  ASSIGN_OR_RETURN(Invocation inv, ParseTree(args, now));
  if (inv.global.format == "csv" && inv.command != "compliance" && inv.command != "help") {
    return absl::InvalidArgumentError(absl::StrCat("--format=csv: only compliance prints CSV (",
                                                   inv.command, " prints text or json)"));
  }
  return inv;
}

}  // namespace smbfleet::cli

#include "agent/core/agent_config.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/core/collector_target.h"
#include "common/approval_signing.h"
#include "common/csr.h"
#include "common/files.h"
#include "common/yaml_config.h"
#include "policy/settings.h"

namespace smbfleet::agent {
namespace {

bool ValidSource(const std::string& s) {
  return s == "samba" || absl::StartsWith(s, "samba:") || s == "windows" ||
         absl::StartsWith(s, "windows-capture:");
}

// `collector.address`: one host:port, or a list of them (collectors on one database), turned
// into the one gRPC target the agent dials.
void ReadCollectorAddresses(const YAML::Node& collector, AgentConfig* c, ConfigProblems* problems) {
  YAML::Node address = collector["address"];
  if (!address.IsDefined()) {
    problems->Add(collector, "collector.address", "required");
    return;
  }
  if (address.IsSequence()) {
    if (!ReadStringList(collector, "address", "collector", &c->collector_addresses, problems)) {
      return;
    }
    if (c->collector_addresses.empty()) {
      problems->Add(address, "collector.address", "an empty list; give at least one host:port");
      return;
    }
  } else {
    std::string one;
    if (!ReadString(collector, "address", "collector", &one, problems)) return;
    c->collector_addresses = {one};
  }
  auto target = CollectorTarget(c->collector_addresses, "collector.address");
  if (!target.ok()) {
    // A single address is named without an index, as before lists existed.
    absl::string_view message = target.status().message();
    if (!address.IsSequence()) message = absl::StripPrefix(message, "collector.address[0]: ");
    problems->Add(address, "collector.address", absl::StripPrefix(message, "collector.address: "));
    return;
  }
  c->collector_address = *std::move(target);
}

// `enroll: {token_file, host}` and the tls section it fills: tls.cert and tls.key are where the
// certificate and key will be written (they need not exist yet); tls.ca must, as it is pinned.
void ReadEnrollment(const YAML::Node& root, const std::string& file, AgentConfig* c,
                    ConfigProblems* problems) {
  YAML::Node enroll = root["enroll"];
  if (!enroll.IsMap()) {
    problems->Add(enroll, "enroll", "expected a mapping with token_file and host");
  } else {
    CheckKeys(enroll, {"token_file", "host"}, "enroll", problems);
    if (!ReadString(enroll, "token_file", "enroll", &c->enroll.token_file, problems)) {
      problems->Add(enroll, "enroll.token_file", "required");
    } else {
      c->enroll.token_file = ResolvePath(file, c->enroll.token_file);
    }
    if (!ReadString(enroll, "host", "enroll", &c->enroll.host, problems)) {
      problems->Add(enroll, "enroll.host", "required");
    } else if (absl::Status s = CheckHostName(absl::AsciiStrToLower(c->enroll.host), "enroll.host");
               !s.ok()) {
      problems->Add(enroll["host"], "enroll.host", absl::StripPrefix(s.message(), "enroll.host: "));
    }
  }
  YAML::Node tls = root["tls"];
  if (!tls.IsDefined() || !tls.IsMap()) {
    problems->AddNoLine("tls", "required: cert and key (where enrollment writes them) and ca");
    return;
  }
  CheckKeys(tls, {"cert", "key", "ca"}, "tls", problems);
  const std::pair<absl::string_view, std::string*> files[] = {
      {"cert", &c->tls.cert}, {"key", &c->tls.key}, {"ca", &c->tls.ca}};
  for (const auto& [key, value] : files) {
    if (!ReadString(tls, key, "tls", value, problems)) {
      problems->Add(tls, JoinPath("tls", key), "required");
      continue;
    }
    *value = ResolvePath(file, *value);
  }
  if (!c->tls.ca.empty() && !FileExists(c->tls.ca)) {
    problems->Add(tls["ca"], "tls.ca", absl::StrCat("file not found: ", c->tls.ca));
  }
}

// Limits of `compression_sampling:`: 0 would sample nothing, and more than these would no
// longer be a sample.
constexpr uint64_t kMaxSampledFiles = 1000;
constexpr uint64_t kMaxSampledBytesPerFile = 64ull << 20;
constexpr uint64_t kMaxSampledBytes = 1ull << 30;

void ReadCompressionSampling(const YAML::Node& root, CompressionSamplingConfig* c,
                             ConfigProblems* problems) {
  YAML::Node node = root["compression_sampling"];
  if (!node.IsDefined()) return;
  if (!node.IsMap()) {
    problems->Add(node, "compression_sampling",
                  "expected a mapping with enabled, shares and the limits");
    return;
  }
  const char* prefix = "compression_sampling";
  CheckKeys(node, {"enabled", "shares", "max_files", "max_bytes_per_file", "max_bytes", "interval"},
            prefix, problems);
  ReadBool(node, "enabled", prefix, &c->enabled, problems);
  std::vector<std::string> shares;
  if (ReadStringList(node, "shares", prefix, &shares, problems)) {
    for (const std::string& share : shares) {
      if (share.empty() || share.size() > 80) {
        problems->Add(node["shares"], "compression_sampling.shares",
                      absl::StrCat("'", share, "': a share name has 1 to 80 characters"));
        continue;
      }
      c->shares.insert(absl::AsciiStrToLower(share));
    }
  }
  if (c->enabled && shares.empty()) {
    problems->Add(node, "compression_sampling.shares",
                  "required when enabled: the names of the shares to sample");
  }
  uint64_t files = c->max_files;
  if (ReadUint(node, "max_files", prefix, 1, kMaxSampledFiles, &files, problems)) {
    c->max_files = static_cast<uint32_t>(files);
  }
  const std::pair<const char*, std::pair<uint64_t*, uint64_t>> sizes[] = {
      {"max_bytes_per_file", {&c->max_bytes_per_file, kMaxSampledBytesPerFile}},
      {"max_bytes", {&c->max_bytes, kMaxSampledBytes}}};
  for (const auto& [key, target] : sizes) {
    uint64_t value = *target.first;
    if (!ReadByteSize(node, key, prefix, &value, problems)) continue;
    if (value == 0 || value > target.second) {
      problems->Add(node[key], JoinPath(prefix, key),
                    absl::StrCat(value, " bytes; want 1 to ", target.second,
                                 " (0 samples nothing; more is no longer a sample)"));
      continue;
    }
    *target.first = value;
  }
  if (ReadDuration(node, "interval", prefix, &c->interval, problems) &&
      c->interval < std::chrono::hours(1)) {
    problems->Add(node["interval"], "compression_sampling.interval",
                  "must be at least 1h: sampling reads the share's files");
  }
}

// Bounds of `changes.counters:`. A window must fit the sampler's ring (CounterSampler).
constexpr std::chrono::milliseconds kMinCounterInterval{1'000};
constexpr std::chrono::milliseconds kMaxCounterWindow{86'400'000};
constexpr int64_t kMaxSamplesPerWindow = 511;

void ReadCounters(const YAML::Node& changes, CountersConfig* c, ConfigProblems* problems) {
  YAML::Node node = changes["counters"];
  if (!IsSection(node, "changes.counters", problems)) return;
  const char* prefix = "changes.counters";
  CheckKeys(node, {"enabled", "interval", "window"}, prefix, problems);
  ReadBool(node, "enabled", prefix, &c->enabled, problems);
  bool interval_ok = true;
  if (ReadDuration(node, "interval", prefix, &c->interval, problems) &&
      c->interval < kMinCounterInterval) {
    problems->Add(node["interval"], "changes.counters.interval",
                  absl::StrCat(c->interval.count(), "ms; must be at least 1s"));
    interval_ok = false;
  }
  ReadDuration(node, "window", prefix, &c->window, problems);
  if (c->window > kMaxCounterWindow) {
    problems->Add(node["window"], "changes.counters.window",
                  absl::StrCat(c->window.count() / 1000, "s; must be at most 24h"));
  } else if (interval_ok && c->window < c->interval) {
    problems->Add(
        node["window"], "changes.counters.window",
        absl::StrCat(c->window.count(), "ms; must be at least changes.counters.interval (",
                     c->interval.count(), "ms)"));
  } else if (interval_ok && c->window / c->interval > kMaxSamplesPerWindow) {
    problems->Add(node["window"], "changes.counters.window",
                  absl::StrCat(c->window / c->interval, " samples at changes.counters.interval ",
                               c->interval.count(), "ms; at most ", kMaxSamplesPerWindow,
                               " per window (raise the interval or shorten the window)"));
  }
}

}  // namespace

absl::StatusOr<AgentConfig> ParseAgentConfig(const std::string& file, const std::string& text) {
  auto root_or = ParseYaml(file, text);
  if (!root_or.ok()) return root_or.status();
  const YAML::Node& root = *root_or;
  ConfigProblems problems(file);
  AgentConfig c;
  CheckKeys(root,
            {"collector", "tls", "source", "labels", "schedule", "spool", "limits", "log_level",
             "tool_env", "changes", "trust", "enroll", "compression_sampling"},
            "", &problems);

  YAML::Node collector = root["collector"];
  if (!collector.IsDefined()) {
    problems.AddNoLine("collector", "required: collector.address (host:port)");
  } else if (!collector.IsMap()) {
    problems.Add(collector, "collector", "expected a mapping with address");
  } else {
    CheckKeys(collector, {"address", "server_name", "report_timeout", "max_backoff"}, "collector",
              &problems);
    ReadCollectorAddresses(collector, &c, &problems);
    ReadString(collector, "server_name", "collector", &c.collector_server_name, &problems);
    if (c.collector_server_name.empty() && c.collector_addresses.size() > 1) {
      // The TLS name defaults to the host of the address; several hosts leave no one default.
      auto first = ParseCollectorAddress(c.collector_addresses[0]);
      for (const std::string& entry : c.collector_addresses) {
        auto a = ParseCollectorAddress(entry);
        if (a.ok() && first.ok() && a->host != first->host) {
          problems.Add(collector, "collector.server_name",
                       absl::StrCat("required: the addresses name different hosts ('",
                                    c.collector_addresses[0], "', '", entry,
                                    "'); give the name the collectors' certificates carry"));
          break;
        }
      }
    }
    ReadDuration(collector, "report_timeout", "collector", &c.report_timeout, &problems);
    ReadDuration(collector, "max_backoff", "collector", &c.max_backoff, &problems);
  }

  YAML::Node enroll = root["enroll"];
  if (enroll.IsDefined()) {
    ReadEnrollment(root, file, &c, &problems);
  } else {
    ReadTlsSection(root, file, "ca", &c.tls, &problems);
  }

  if (ReadString(root, "source", "", &c.source, &problems) && !ValidSource(c.source)) {
    problems.Add(root["source"], "source",
                 absl::StrCat("expected samba, samba:SMB_CONF, windows or windows-capture:DIR, "
                              "got '",
                              c.source, "'"));
  }

  std::vector<std::pair<std::string, std::string>> labels;
  if (ReadStringMap(root, "labels", "", &labels, &problems)) {
    for (auto& [k, v] : labels) c.labels[k] = v;
  }
  std::vector<std::pair<std::string, std::string>> env;
  if (ReadStringMap(root, "tool_env", "", &env, &problems)) {
    for (auto& [k, v] : env) c.tool_env[k] = v;
  }

  YAML::Node schedule = root["schedule"];
  if (IsSection(schedule, "schedule", &problems)) {
    CheckKeys(schedule, {"interval", "splay", "benchmark_interval", "min_nudge_interval"},
              "schedule", &problems);
    ReadDuration(schedule, "min_nudge_interval", "schedule", &c.min_nudge_interval, &problems);
    ReadDuration(schedule, "interval", "schedule", &c.interval, &problems);
    ReadDuration(schedule, "splay", "schedule", &c.splay, &problems);
    ReadDuration(schedule, "benchmark_interval", "schedule", &c.benchmark_interval, &problems);
    if (c.interval < std::chrono::seconds(10)) {
      problems.Add(schedule["interval"], "schedule.interval", "must be at least 10s");
    }
    if (c.splay > c.interval) {
      problems.Add(schedule["splay"], "schedule.splay", "must not be longer than the interval");
    }
    if (c.benchmark_interval.count() != 0 && c.benchmark_interval < std::chrono::hours(1)) {
      problems.Add(schedule["benchmark_interval"], "schedule.benchmark_interval",
                   "must be 0 (never) or at least 1h: the benchmark is never hourly");
    }
  }

  YAML::Node spool = root["spool"];
  if (IsSection(spool, "spool", &problems)) {
    CheckKeys(spool, {"dir", "max_reports", "max_bytes", "max_age", "max_rejected"}, "spool",
              &problems);
    if (ReadString(spool, "dir", "spool", &c.spool_dir, &problems)) {
      c.spool_dir = ResolvePath(file, c.spool_dir);
    }
    uint64_t max = c.spool_max_reports;
    if (ReadUint(spool, "max_reports", "spool", 1, 100'000, &max, &problems)) {
      c.spool_max_reports = static_cast<uint32_t>(max);
    }
    ReadByteSize(spool, "max_bytes", "spool", &c.spool_max_bytes, &problems);
    ReadDuration(spool, "max_age", "spool", &c.spool_max_age, &problems);
    uint64_t rejected = c.spool_max_rejected;
    if (ReadUint(spool, "max_rejected", "spool", 0, 100'000, &rejected, &problems)) {
      c.spool_max_rejected = static_cast<uint32_t>(rejected);
    }
  }

  YAML::Node limits = root["limits"];
  if (IsSection(limits, "limits", &problems)) {
    CheckKeys(limits, {"max_report_bytes"}, "limits", &problems);
    ReadByteSize(limits, "max_report_bytes", "limits", &c.max_report_bytes, &problems);
  }
  // The spool must hold at least one report of the largest size the agent builds.
  if (c.spool_max_bytes < c.max_report_bytes + (64 << 10)) {
    problems.AddNoLine(
        "spool.max_bytes",
        absl::StrCat("must be at least limits.max_report_bytes + 64KiB (",
                     c.max_report_bytes + (64 << 10), " bytes), got ", c.spool_max_bytes));
  }
  if (c.spool_max_age.count() != 0 && c.spool_max_age < std::chrono::hours(1)) {
    problems.AddNoLine("spool.max_age", "must be 0 (no limit) or at least 1h");
  }

  YAML::Node changes = root["changes"];
  if (IsSection(changes, "changes", &problems)) {
    CheckKeys(changes, {"enforce", "allow", "journal", "counters"}, "changes", &problems);
    ReadBool(changes, "enforce", "changes", &c.changes.enforce, &problems);
    std::vector<std::string> allow;
    if (ReadStringList(changes, "allow", "changes", &allow, &problems)) {
      for (const std::string& name : allow) {
        if (absl::Status known = policy::LookupSetting(name).status(); !known.ok()) {
          problems.Add(changes["allow"], "changes.allow",
                       absl::StrCat("'", name, "' is not a known setting: ", known.message()));
          continue;
        }
        c.changes.allow.insert(name);
      }
    }
    if (ReadString(changes, "journal", "changes", &c.changes.journal_dir, &problems)) {
      c.changes.journal_dir = ResolvePath(file, c.changes.journal_dir);
    }
    ReadCounters(changes, &c.changes.counters, &problems);
  }

  YAML::Node trust = root["trust"];
  if (IsSection(trust, "trust", &problems)) {
    CheckKeys(trust, {"approvers", "root", "min_approvals"}, "trust", &problems);
    std::vector<std::pair<std::string, std::string>> approvers;
    if (ReadStringMap(trust, "approvers", "trust", &approvers, &problems)) {
      for (auto& [name, text] : approvers) {
        absl::StatusOr<std::string> raw = ParsePublicKeyText(text);
        if (!raw.ok()) {
          problems.Add(trust["approvers"], JoinPath("trust.approvers", name),
                       raw.status().message());
          continue;
        }
        c.trust.approvers[name] = *raw;
      }
    }
    std::string root_text;
    if (ReadString(trust, "root", "trust", &root_text, &problems)) {
      absl::StatusOr<std::string> raw = ParsePublicKeyText(root_text);
      if (raw.ok()) {
        c.trust.root_public_key = *raw;
      } else {
        problems.Add(trust["root"], "trust.root", raw.status().message());
      }
    }
    uint64_t min = c.trust.min_approvals;
    if (ReadUint(trust, "min_approvals", "trust", 1, 16, &min, &problems)) {
      c.trust.min_approvals = static_cast<uint32_t>(min);
    }
  }

  ReadCompressionSampling(root, &c.compression_sampling, &problems);
  ReadLogLevel(root, &c.log_level, &problems);

  if (!problems.empty()) return problems.ToStatus();
  if (c.collector_server_name.empty()) {
    if (auto first = ParseCollectorAddress(c.collector_addresses[0]); first.ok()) {
      c.collector_server_name = first->host;
    }
  }
  if (c.changes.journal_dir.empty()) {
    // Beside the spool and named after it: agents with their own spools (several on one test
    // machine) never share a journal, which would make one skip another's orders.
    std::string spool = c.spool_dir;
    while (spool.size() > 1 && spool.back() == '/') spool.pop_back();
    c.changes.journal_dir = spool + "-changes";
  }
  return c;
}

absl::StatusOr<AgentConfig> LoadAgentConfig(const std::string& file) {
  auto text = ReadFile(file, 1 << 20);
  if (!text.ok()) return text.status();
  return ParseAgentConfig(file, *text);
}

}  // namespace smbfleet::agent

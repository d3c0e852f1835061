#include "collector/config.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/yaml_config.h"

namespace smbfleet::collector {
namespace {

bool ValidHostPort(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  uint32_t port = 0;
  return absl::SimpleAtoi(s.substr(colon + 1), &port) && port <= 65535;
}

}  // namespace

absl::StatusOr<CollectorConfig> ParseCollectorConfig(const std::string& file,
                                                     const std::string& text) {
  auto root_or = ParseYaml(file, text);
  if (!root_or.ok()) return root_or.status();
  const YAML::Node& root = *root_or;
  ConfigProblems problems(file);
  CollectorConfig c;
  CheckKeys(root,
            {"listen", "tls", "database", "limits", "watch", "store", "log_level", "policy",
             "changes", "approver_sets", "identity", "tls_reload", "enrollment", "console",
             "stale_after", "shutdown_timeout", "history"},
            "", &problems);

  if (ReadString(root, "listen", "", &c.listen, &problems) && !ValidHostPort(c.listen)) {
    problems.Add(root["listen"], "listen",
                 absl::StrCat("expected host:port such as 127.0.0.1:7443, got '", c.listen, "'"));
  }

  ReadTlsSection(root, file, "client_ca", &c.tls, &problems);
  std::chrono::milliseconds reload = c.tls_reload;
  if (ReadDuration(root, "tls_reload", "", &reload, &problems)) {
    if (reload < std::chrono::seconds(1) || reload > std::chrono::hours(24)) {
      problems.Add(root["tls_reload"], "tls_reload", "must be between 1s and 24h");
    } else {
      c.tls_reload = std::chrono::duration_cast<std::chrono::seconds>(reload);
    }
  }

  std::chrono::milliseconds stale = c.stale_after;
  if (ReadDuration(root, "stale_after", "", &stale, &problems)) {
    if (stale < std::chrono::minutes(1) || stale > std::chrono::hours(24 * 365)) {
      problems.Add(root["stale_after"], "stale_after", "must be between 1m and 365d");
    } else {
      c.stale_after = stale;
    }
  }

  if (ReadDuration(root, "shutdown_timeout", "", &c.shutdown_timeout, &problems) &&
      (c.shutdown_timeout < std::chrono::seconds(1) ||
       c.shutdown_timeout > std::chrono::minutes(10))) {
    problems.Add(root["shutdown_timeout"], "shutdown_timeout", "must be between 1s and 10m");
  }

  YAML::Node db = root["database"];
  if (!db.IsDefined()) {
    problems.AddNoLine("database", "required: database.dsn");
  } else if (!db.IsMap()) {
    problems.Add(db, "database", "expected a mapping with dsn");
  } else {
    CheckKeys(db,
              {"dsn", "pool_size", "acquire_timeout", "connect_timeout", "statement_timeout",
               "keepalives_idle", "startup_timeout"},
              "database", &problems);
    struct Bounded {
      const char* key;
      std::chrono::milliseconds* out;
      std::chrono::milliseconds min, max;
      const char* range;
    };
    DatabaseConfig& d = c.database;
    for (const Bounded& b : {
             Bounded{"acquire_timeout", &d.acquire_timeout, std::chrono::milliseconds(10),
                     std::chrono::minutes(5), "between 10ms and 5m"},
             Bounded{"connect_timeout", &d.connect_timeout, std::chrono::seconds(2),
                     std::chrono::minutes(5), "between 2s and 5m"},
             Bounded{"statement_timeout", &d.statement_timeout, std::chrono::milliseconds(100),
                     std::chrono::hours(1), "between 100ms and 1h"},
             Bounded{"keepalives_idle", &d.keepalives_idle, std::chrono::seconds(1),
                     std::chrono::hours(2), "between 1s and 2h"},
             Bounded{"startup_timeout", &d.startup_timeout, std::chrono::seconds(0),
                     std::chrono::hours(1), "between 0s and 1h"},
         }) {
      if (ReadDuration(db, b.key, "database", b.out, &problems) &&
          (*b.out < b.min || *b.out > b.max)) {
        problems.Add(db[b.key], absl::StrCat("database.", b.key),
                     absl::StrCat("must be ", b.range));
      }
    }
    if (!ReadString(db, "dsn", "database", &c.database_dsn, &problems) && !db["dsn"].IsDefined()) {
      problems.Add(db, "database.dsn", "required");
    }
    uint64_t pool = c.database_pool_size;
    if (ReadUint(db, "pool_size", "database", 1, 64, &pool, &problems)) {
      c.database_pool_size = static_cast<uint32_t>(pool);
    }
  }

  YAML::Node limits = root["limits"];
  if (IsSection(limits, "limits", &problems)) {
    CheckKeys(limits,
              {"max_report_bytes", "nudge_interval", "nudges_per_minute", "max_message_bytes",
               "max_queued_bytes", "max_queued_calls", "transport_memory",
               "max_streams_per_connection", "tls_frame_bytes", "tcp_read_chunk_bytes",
               "digest_batch_reports", "posture_batch_reports"},
              "limits", &problems);
    uint64_t calls = c.max_queued_calls;
    if (ReadUint(limits, "max_queued_calls", "limits", 1, 1'000'000, &calls, &problems)) {
      c.max_queued_calls = static_cast<uint32_t>(calls);
    }
    uint64_t batch = c.digest_batch_reports;
    if (ReadUint(limits, "digest_batch_reports", "limits", 1, 10'000, &batch, &problems)) {
      c.digest_batch_reports = static_cast<uint32_t>(batch);
    }
    uint64_t posture_batch = c.posture_batch_reports;
    if (ReadUint(limits, "posture_batch_reports", "limits", 1, 1000, &posture_batch, &problems)) {
      c.posture_batch_reports = static_cast<uint32_t>(posture_batch);
    }
    uint64_t streams = c.max_streams_per_connection;
    if (ReadUint(limits, "max_streams_per_connection", "limits", 1, 1000, &streams, &problems)) {
      c.max_streams_per_connection = static_cast<uint32_t>(streams);
    }
    ReadDuration(limits, "nudge_interval", "limits", &c.nudge_interval, &problems);
    uint64_t per_minute = c.nudges_per_minute;
    if (ReadUint(limits, "nudges_per_minute", "limits", 1, 100'000, &per_minute, &problems)) {
      c.nudges_per_minute = static_cast<uint32_t>(per_minute);
    }
    // A size in [min, max]; `range` says so in the problem.
    auto read_bytes = [&](const char* key, uint64_t min, uint64_t max, const char* range,
                          uint64_t* out) {
      uint64_t bytes = *out;
      if (!ReadByteSize(limits, key, "limits", &bytes, &problems)) return;
      if (bytes < min || bytes > max) {
        problems.Add(limits[key], absl::StrCat("limits.", key),
                     absl::StrCat(bytes, " bytes is out of range ", range));
      } else {
        *out = bytes;
      }
    };
    read_bytes("max_report_bytes", 4096, 256u << 20, "[4KiB, 256MiB]", &c.max_report_bytes);
    read_bytes("max_message_bytes", 1024, 16u << 20, "[1KiB, 16MiB]", &c.max_message_bytes);
    read_bytes("max_queued_bytes", 1u << 20, 64ull << 30, "[1MiB, 64GiB]", &c.max_queued_bytes);
    read_bytes("transport_memory", 16u << 20, 64ull << 30, "[16MiB, 64GiB]", &c.transport_memory);
    read_bytes("tls_frame_bytes", 1024, 16384, "[1KiB, 16KiB]", &c.tls_frame_bytes);
    read_bytes("tcp_read_chunk_bytes", 512, 1u << 20, "[512B, 1MiB]", &c.tcp_read_chunk_bytes);
    if (c.max_queued_bytes < c.max_report_bytes) {
      problems.Add(limits, "limits.max_queued_bytes",
                   absl::StrCat(c.max_queued_bytes, " bytes is below limits.max_report_bytes (",
                                c.max_report_bytes, "): no report of the largest size could wait"));
    }
  }

  YAML::Node watch = root["watch"];
  if (IsSection(watch, "watch", &problems)) {
    CheckKeys(watch, {"keepalive_interval", "max_connection_age"}, "watch", &problems);
    ReadDuration(watch, "keepalive_interval", "watch", &c.keepalive_interval, &problems);
    ReadDuration(watch, "max_connection_age", "watch", &c.max_connection_age, &problems);
    if (c.keepalive_interval < std::chrono::seconds(1)) {
      problems.Add(watch["keepalive_interval"], "watch.keepalive_interval", "must be at least 1s");
    }
  }

  YAML::Node store = root["store"];
  if (IsSection(store, "store", &problems)) {
    CheckKeys(store, {"threads"}, "store", &problems);
    uint64_t threads = c.store_threads;
    if (ReadUint(store, "threads", "store", 1, 256, &threads, &problems)) {
      c.store_threads = static_cast<uint32_t>(threads);
    }
  }

  YAML::Node policy = root["policy"];
  if (IsSection(policy, "policy", &problems)) {
    CheckKeys(policy, {"file", "reevaluate_threads"}, "policy", &problems);
    uint64_t reevaluate = c.reevaluate_threads;
    if (ReadUint(policy, "reevaluate_threads", "policy", 0, 16, &reevaluate, &problems)) {
      c.reevaluate_threads = static_cast<uint32_t>(reevaluate);
    }
    if (ReadString(policy, "file", "policy", &c.policy_file, &problems)) {
      c.policy_file = ResolvePath(file, c.policy_file);
      if (!FileExists(c.policy_file)) {
        problems.Add(policy["file"], "policy.file",
                     absl::StrCat("file not found: ", c.policy_file));
      }
    }
  }

  YAML::Node history = root["history"];
  if (IsSection(history, "history", &problems)) {
    CheckKeys(history, {"retention", "partitions_ahead", "interval"}, "history", &problems);
    std::chrono::milliseconds retention = c.history.retention;
    if (ReadDuration(history, "retention", "history", &retention, &problems)) {
      if (retention.count() != 0 && (retention % std::chrono::hours(24)).count() != 0) {
        problems.Add(history["retention"], "history.retention",
                     "must be whole days such as 90d (a day is what is dropped), or 0d to keep "
                     "everything");
      } else if (retention > std::chrono::hours(24 * 3650)) {
        problems.Add(history["retention"], "history.retention", "must be at most 3650d");
      } else {
        c.history.retention = std::chrono::duration_cast<std::chrono::hours>(retention);
      }
    }
    uint64_t ahead = c.history.partitions_ahead;
    if (ReadUint(history, "partitions_ahead", "history", 1, 31, &ahead, &problems)) {
      c.history.partitions_ahead = static_cast<uint32_t>(ahead);
    }
    if (ReadDuration(history, "interval", "history", &c.history.interval, &problems) &&
        (c.history.interval < std::chrono::minutes(1) ||
         c.history.interval > std::chrono::hours(24))) {
      problems.Add(history["interval"], "history.interval", "must be between 1m and 24h");
    }
  }

  YAML::Node approver_sets = root["approver_sets"];
  if (IsSection(approver_sets, "approver_sets", &problems)) {
    CheckKeys(approver_sets, {"poll"}, "approver_sets", &problems);
    ReadDuration(approver_sets, "poll", "approver_sets", &c.approver_set_poll, &problems);
  }

  YAML::Node identity = root["identity"];
  if (IsSection(identity, "identity", &problems)) {
    CheckKeys(identity, {"agent_issuers", "operator_issuers", "revocation_poll"}, "identity",
              &problems);
    ReadDuration(identity, "revocation_poll", "identity", &c.identity.revocation_poll, &problems);
    if (c.identity.revocation_poll < std::chrono::milliseconds(100)) {
      problems.Add(identity["revocation_poll"], "identity.revocation_poll",
                   "must be at least 100ms");
    }
    for (auto [key, out] : {std::pair{"agent_issuers", &c.identity.agent_issuers},
                            std::pair{"operator_issuers", &c.identity.operator_issuers}}) {
      if (!ReadStringList(identity, key, "identity", out, &problems)) continue;
      for (size_t i = 0; i < out->size(); ++i) {
        std::string& path = (*out)[i];
        path = ResolvePath(file, path);
        if (!FileExists(path)) {
          problems.Add(identity[key][i], absl::StrCat("identity.", key, "[", i, "]"),
                       absl::StrCat("file not found: ", path));
        }
      }
    }
  }

  YAML::Node changes = root["changes"];
  if (IsSection(changes, "changes", &problems)) {
    CheckKeys(changes, {"two_approvers_above_hosts", "lifetime", "ack_timeout", "tick"}, "changes",
              &problems);
    uint64_t above = c.changes.two_approvers_above_hosts;
    if (ReadUint(changes, "two_approvers_above_hosts", "changes", 0, 1'000'000, &above,
                 &problems)) {
      c.changes.two_approvers_above_hosts = static_cast<uint32_t>(above);
    }
    ReadDuration(changes, "lifetime", "changes", &c.changes.lifetime, &problems);
    ReadDuration(changes, "ack_timeout", "changes", &c.changes.ack_timeout, &problems);
    ReadDuration(changes, "tick", "changes", &c.changes.tick, &problems);
    if (c.changes.lifetime < std::chrono::minutes(1)) {
      problems.Add(changes["lifetime"], "changes.lifetime", "must be at least 1m");
    }
    if (c.changes.ack_timeout < std::chrono::seconds(10) ||
        c.changes.ack_timeout > c.changes.lifetime) {
      problems.Add(changes["ack_timeout"], "changes.ack_timeout",
                   "must be at least 10s and at most changes.lifetime");
    }
    if (c.changes.tick < std::chrono::milliseconds(100) ||
        c.changes.tick > std::chrono::minutes(1)) {
      problems.Add(changes["tick"], "changes.tick", "must be between 100ms and 1m");
    }
  }

  YAML::Node enrollment = root["enrollment"];
  if (IsSection(enrollment, "enrollment", &problems)) {
    CheckKeys(enrollment, {"ca_cert", "ca_key", "certificate_lifetime"}, "enrollment", &problems);
    ReadString(enrollment, "ca_cert", "enrollment", &c.enrollment.ca_cert, &problems);
    ReadString(enrollment, "ca_key", "enrollment", &c.enrollment.ca_key, &problems);
    ReadDuration(enrollment, "certificate_lifetime", "enrollment",
                 &c.enrollment.certificate_lifetime, &problems);
    if (c.enrollment.ca_cert.empty() != c.enrollment.ca_key.empty()) {
      problems.Add(enrollment, "enrollment", "ca_cert and ca_key go together");
    }
    for (std::string* path : {&c.enrollment.ca_cert, &c.enrollment.ca_key}) {
      if (!path->empty()) *path = ResolvePath(file, *path);
    }
    if (c.enrollment.certificate_lifetime < std::chrono::minutes(5) ||
        c.enrollment.certificate_lifetime > std::chrono::hours(24 * 398)) {
      problems.Add(enrollment["certificate_lifetime"], "enrollment.certificate_lifetime",
                   "must be between 5m and 398d");
    }
  }

  YAML::Node console = root["console"];
  if (IsSection(console, "console", &problems)) {
    c.console.enabled = true;
    CheckKeys(console, {"listen", "cert", "key", "session_idle", "session_max"}, "console",
              &problems);
    if (ReadString(console, "listen", "console", &c.console.listen, &problems) &&
        !ValidHostPort(c.console.listen)) {
      problems.Add(
          console["listen"], "console.listen",
          absl::StrCat("expected host:port such as 127.0.0.1:8443, got '", c.console.listen, "'"));
    }
    ReadString(console, "cert", "console", &c.console.cert, &problems);
    ReadString(console, "key", "console", &c.console.key, &problems);
    if (c.console.cert.empty() != c.console.key.empty()) {
      problems.Add(console, "console", "cert and key go together");
    }
    for (std::string* path : {&c.console.cert, &c.console.key}) {
      if (!path->empty()) *path = ResolvePath(file, *path);
    }
    ReadDuration(console, "session_idle", "console", &c.console.session_idle, &problems);
    ReadDuration(console, "session_max", "console", &c.console.session_max, &problems);
    if (c.console.session_idle < std::chrono::minutes(1) ||
        c.console.session_idle > c.console.session_max) {
      problems.Add(console["session_idle"], "console.session_idle",
                   "must be at least 1m and at most console.session_max");
    }
    if (c.console.session_max > std::chrono::hours(24 * 7)) {
      problems.Add(console["session_max"], "console.session_max", "must be at most 7d");
    }
  }

  ReadLogLevel(root, &c.log_level, &problems);

  if (!problems.empty()) return problems.ToStatus();
  return c;
}

absl::StatusOr<CollectorConfig> LoadCollectorConfig(const std::string& file) {
  auto text = ReadFile(file, 1 << 20);
  if (!text.ok()) return text.status();
  return ParseCollectorConfig(file, *text);
}

}  // namespace smbfleet::collector

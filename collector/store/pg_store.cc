#include "collector/store/pg_store.h"

#include <libpq-fe.h>
#include <openssl/evp.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <pqxx/pqxx>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/json.h"
#include "nlohmann/json.hpp"
#include "policy/evaluate.h"
#include "policy/transitions.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::collector {
namespace {

using smbfleet::v1::HostSummary;
using smbfleet::v1::Posture;

constexpr char kMigrationLockKey[] = "smbfleet.migrations";

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

std::string TimestampText(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return "";
  return Rfc3339(absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos()));
}

void SetTimestamp(const pqxx::field& f, google::protobuf::Timestamp* ts) {
  if (f.is_null()) return;
  double seconds = f.as<double>();
  ts->set_seconds(static_cast<int64_t>(seconds));
  ts->set_nanos(static_cast<int32_t>((seconds - static_cast<double>(ts->seconds())) * 1e9));
}

std::string HexOf(const std::string& bytes) { return absl::BytesToHexString(bytes); }

absl::Status MapException(const std::string& dsn, absl::string_view what) {
  try {
    throw;
  } catch (const pqxx::broken_connection& e) {
    return absl::UnavailableError(
        absl::StrCat(what, ": PostgreSQL at ", RedactDsn(dsn), " is not reachable: ", e.what()));
  } catch (const pqxx::sql_error& e) {
    return absl::InternalError(absl::StrCat(what, ": database error: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

// A few connections, handed out one at a time; a broken connection is dropped and replaced
// on the next lease.
class ConnectionPool {
 public:
  ConnectionPool(std::string dsn, int size) : dsn_(std::move(dsn)), capacity_(size) {}

  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<pqxx::connection> c)
        : pool_(pool), conn_(std::move(c)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (conn_) pool_->Release(std::move(conn_));
    }
    pqxx::connection& operator*() { return *conn_; }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<pqxx::connection> conn_;
  };

  Lease Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !idle_.empty() || open_ < capacity_; });
    if (!idle_.empty()) {
      auto c = std::move(idle_.front());
      idle_.pop_front();
      return Lease(this, std::move(c));
    }
    ++open_;
    lock.unlock();
    try {
      return Lease(this, std::make_unique<pqxx::connection>(dsn_));
    } catch (...) {
      lock.lock();
      --open_;
      cv_.notify_one();
      throw;
    }
  }

 private:
  void Release(std::unique_ptr<pqxx::connection> c) {
    std::lock_guard<std::mutex> lock(mu_);
    if (c->is_open()) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
    }
    cv_.notify_one();
  }

  std::string dsn_;
  int capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<pqxx::connection>> idle_;
  int open_ = 0;
};

constexpr char kSummaryColumns[] = R"sql(
  h.name, h.platform, h.os_name, h.os_version, h.agent_version,
  EXTRACT(EPOCH FROM h.first_seen)::float8, EXTRACT(EPOCH FROM h.last_seen)::float8,
  EXTRACT(EPOCH FROM h.last_changed)::float8, h.labels::text,
  (SELECT count(*) FROM host_shares s WHERE s.host_id = h.id),
  (SELECT count(*) FROM host_sessions s WHERE s.host_id = h.id),
  COALESCE(jsonb_array_length(p.posture_json -> 'probeErrors'), 0)
)sql";

HostSummary SummaryFromRow(const pqxx::row& r) {
  HostSummary s;
  s.set_name(r[0].as<std::string>());
  smbfleet::v1::Platform platform = smbfleet::v1::PLATFORM_UNSPECIFIED;
  smbfleet::v1::Platform_Parse(r[1].as<std::string>(), &platform);
  s.set_platform(platform);
  s.set_os_name(r[2].as<std::string>());
  s.set_os_version(r[3].as<std::string>());
  s.set_agent_version(r[4].as<std::string>());
  SetTimestamp(r[5], s.mutable_first_seen());
  SetTimestamp(r[6], s.mutable_last_seen());
  SetTimestamp(r[7], s.mutable_last_changed());
  auto labels = nlohmann::json::parse(r[8].as<std::string>(), nullptr, false);
  if (labels.is_object()) {
    for (auto& [k, v] : labels.items()) {
      if (v.is_string()) (*s.mutable_labels())[k] = v.get<std::string>();
    }
  }
  s.set_shares(r[9].as<uint32_t>());
  s.set_sessions(r[10].as<uint32_t>());
  s.set_probe_errors(r[11].as<uint32_t>());
  return s;
}

// Benchmark rows are kept per host over time; the same run reported again is stored once.
void SaveBenchmarks(pqxx::work& tx, int64_t host_id, const Posture& posture,
                    const std::string& received) {
  for (const auto& b : posture.benchmarks()) {
    const std::string measured = TimestampText(b.measured_at());
    tx.exec_params(
        "INSERT INTO host_benchmarks (host_id, measured_at, algorithm, buffer_bytes, threads, "
        "bytes_per_second) VALUES ($1, COALESCE(NULLIF($2, '')::timestamptz, "
        "$3::timestamptz), $4, $5, $6, $7) ON CONFLICT DO NOTHING",
        host_id, measured, received, smbfleet::v1::CryptoAlgorithm_Name(b.algorithm()),
        static_cast<int64_t>(b.buffer_bytes()), static_cast<int32_t>(b.threads()),
        b.bytes_per_second());
  }
}

class PgStore : public Store {
 public:
  PgStore(std::string dsn, int pool_size) : dsn_(dsn), pool_(dsn, pool_size) {}

  absl::StatusOr<SaveOutcome> SaveReport(const IncomingReport& report) override;
  absl::StatusOr<std::vector<HostSummary>> ListHosts(const HostQuery& query) override;
  absl::StatusOr<std::optional<HostRecord>> GetHost(const std::string& name) override;
  absl::Status ActivatePolicy(const std::string& name, const std::string& version,
                              const std::string& source) override;
  absl::StatusOr<std::vector<smbfleet::v1::Waiver>> ActiveWaivers() override;
  absl::StatusOr<size_t> SaveEvaluation(const std::string& host,
                                        const smbfleet::v1::HostEvaluation& eval) override;
  absl::StatusOr<smbfleet::v1::GetComplianceResponse> GetCompliance() override;
  absl::StatusOr<std::vector<smbfleet::v1::Finding>> ListFindings(const std::string& host,
                                                                  const std::string& rule_id,
                                                                  uint32_t limit) override;

 private:
  std::string dsn_;
  ConnectionPool pool_;
};

absl::StatusOr<SaveOutcome> PgStore::SaveReport(const IncomingReport& report) {
  const Posture& posture = *report.posture;
  const std::string digest = PostureDigest(posture);
  const std::string received = Rfc3339(report.received_at);
  const std::string collected = TimestampText(posture.collected_at());
  try {
    auto conn = pool_.Acquire();
    pqxx::work tx(*conn);
    pqxx::row host = tx.exec_params1(
        "INSERT INTO hosts (name, first_seen, last_seen) VALUES ($1, $2::timestamptz, "
        "$2::timestamptz) ON CONFLICT (name) DO UPDATE SET last_seen = "
        "GREATEST(hosts.last_seen, EXCLUDED.last_seen) RETURNING id, "
        "COALESCE(encode(posture_hash, 'hex'), '')",
        report.host, received);
    const int64_t host_id = host[0].as<int64_t>();
    const bool changed = host[1].as<std::string>() != digest;

    pqxx::result inserted = tx.exec_params(
        "INSERT INTO reports (report_id, host_id, received_at, collected_at, reason, "
        "posture_hash, changed, size_bytes) VALUES ($1::uuid, $2, $3::timestamptz, "
        "NULLIF($4, '')::timestamptz, $5, decode($6, 'hex'), $7, $8) "
        "ON CONFLICT (report_id) DO NOTHING",
        report.report_id, host_id, received, collected, report.reason, digest, changed,
        static_cast<int64_t>(report.size_bytes));
    if (inserted.affected_rows() == 0) {
      tx.abort();
      return SaveOutcome::kDuplicate;
    }
    if (!changed) {
      tx.exec_params("UPDATE hosts SET last_report_id = $2::uuid WHERE id = $1", host_id,
                     report.report_id);
      SaveBenchmarks(tx, host_id, posture, received);
      tx.commit();
      return SaveOutcome::kUnchanged;
    }

    auto json = ToJson(posture, /*pretty=*/false);
    if (!json.ok()) return json.status();
    std::string bytes;
    if (!posture.SerializeToString(&bytes)) {
      return absl::InvalidArgumentError("posture cannot be serialised");
    }
    pqxx::row stored = tx.exec_params1(
        "INSERT INTO postures (host_id, report_id, stored_at, collected_at, posture_hash, "
        "posture, posture_json) VALUES ($1, $2::uuid, $3::timestamptz, "
        "NULLIF($4, '')::timestamptz, decode($5, 'hex'), decode($6, 'hex'), $7::jsonb) "
        "RETURNING id",
        host_id, report.report_id, received, collected, digest, HexOf(bytes), *json);
    tx.exec_params(
        "INSERT INTO host_state (host_id, posture_id, updated_at) VALUES ($1, $2, "
        "$3::timestamptz) ON CONFLICT (host_id) DO UPDATE SET posture_id = EXCLUDED.posture_id, "
        "updated_at = EXCLUDED.updated_at",
        host_id, stored[0].as<int64_t>(), received);

    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [k, v] : posture.host().labels()) labels[k] = v;
    tx.exec_params(
        "UPDATE hosts SET platform = $2, os_name = $3, os_version = $4, agent_version = $5, "
        "labels = $6::jsonb, last_changed = $7::timestamptz, last_report_id = $8::uuid, "
        "posture_hash = decode($9, 'hex') WHERE id = $1",
        host_id, smbfleet::v1::Platform_Name(posture.host().platform()), posture.host().os_name(),
        posture.host().os_version(), posture.host().agent_version(), labels.dump(), received,
        report.report_id, digest);

    tx.exec_params("DELETE FROM host_sessions WHERE host_id = $1", host_id);
    if (posture.sessions_size() > 0) {
      pqxx::stream_to sessions(
          tx, "host_sessions",
          std::vector<std::string>{"host_id", "session_id", "client_address", "client_name",
                                   "user_name", "dialect", "signing", "encryption",
                                   "signing_algorithm", "cipher", "shares"});
      for (const auto& s : posture.sessions()) {
        nlohmann::json shares = nlohmann::json::array();
        for (const auto& sc : s.shares()) shares.push_back(sc.name());
        sessions << std::make_tuple(host_id, s.session_id(), s.client_address(), s.client_name(),
                                    s.user(), smbfleet::v1::Dialect_Name(s.dialect()),
                                    smbfleet::v1::Protection_Name(s.signing()),
                                    smbfleet::v1::Protection_Name(s.encryption()),
                                    smbfleet::v1::CryptoAlgorithm_Name(s.signing_algorithm()),
                                    smbfleet::v1::CryptoAlgorithm_Name(s.cipher()), shares.dump());
      }
      sessions.complete();
    }
    tx.exec_params("DELETE FROM host_shares WHERE host_id = $1", host_id);
    for (const auto& share : posture.shares()) {
      tx.exec_params(
          "INSERT INTO host_shares (host_id, name, path, encrypt_data, compress_data, "
          "classification) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (host_id, name) DO "
          "UPDATE SET path = EXCLUDED.path",
          host_id, share.name(), share.path(),
          share.has_encrypt_data() ? std::optional<bool>(share.encrypt_data()) : std::nullopt,
          share.has_compress_data() ? std::optional<bool>(share.compress_data()) : std::nullopt,
          share.classification());
    }
    SaveBenchmarks(tx, host_id, posture, received);
    tx.commit();
    return SaveOutcome::kStored;
  } catch (...) {
    return MapException(dsn_,
                        absl::StrCat("storing report ", report.report_id, " of ", report.host));
  }
}

absl::StatusOr<std::vector<HostSummary>> PgStore::ListHosts(const HostQuery& query) {
  try {
    auto conn = pool_.Acquire();
    pqxx::read_transaction tx(*conn);
    pqxx::result rows = tx.exec_params(
        absl::StrCat("SELECT ", kSummaryColumns,
                     " FROM hosts h LEFT JOIN host_state st ON st.host_id = h.id "
                     "LEFT JOIN postures p ON p.id = st.posture_id "
                     "WHERE h.name > $1 AND starts_with(h.name, $2) ORDER BY h.name LIMIT $3"),
        query.after_name, query.name_prefix, static_cast<int64_t>(query.limit));
    std::vector<HostSummary> out;
    out.reserve(rows.size());
    for (const auto& r : rows) out.push_back(SummaryFromRow(r));
    return out;
  } catch (...) {
    return MapException(dsn_, "listing hosts");
  }
}

absl::StatusOr<std::optional<HostRecord>> PgStore::GetHost(const std::string& name) {
  try {
    auto conn = pool_.Acquire();
    pqxx::read_transaction tx(*conn);
    pqxx::result rows = tx.exec_params(
        absl::StrCat("SELECT ", kSummaryColumns,
                     ", COALESCE(encode(p.posture, 'hex'), ''), "
                     "COALESCE(h.last_report_id::text, '') "
                     "FROM hosts h LEFT JOIN host_state st ON st.host_id = h.id "
                     "LEFT JOIN postures p ON p.id = st.posture_id WHERE h.name = $1"),
        name);
    if (rows.empty()) return std::optional<HostRecord>();
    HostRecord record;
    record.summary = SummaryFromRow(rows[0]);
    std::string bytes = absl::HexStringToBytes(rows[0][12].as<std::string>());
    if (!bytes.empty() && !record.posture.ParseFromString(bytes)) {
      return absl::DataLossError(absl::StrCat("stored posture of ", name, " cannot be parsed"));
    }
    record.last_report_id = rows[0][13].as<std::string>();
    // The latest benchmark run, which may be newer than the latest changed posture.
    pqxx::result bench = tx.exec_params(
        "SELECT algorithm, buffer_bytes, threads, bytes_per_second, "
        "EXTRACT(EPOCH FROM measured_at)::float8 FROM host_benchmarks b JOIN hosts h ON "
        "h.id = b.host_id WHERE h.name = $1 AND b.measured_at = (SELECT max(measured_at) FROM "
        "host_benchmarks WHERE host_id = h.id) ORDER BY threads, algorithm, buffer_bytes",
        name);
    if (!bench.empty()) {
      record.posture.clear_benchmarks();
      for (const auto& r : bench) {
        auto* b = record.posture.add_benchmarks();
        smbfleet::v1::CryptoAlgorithm algorithm = smbfleet::v1::CRYPTO_ALGORITHM_UNSPECIFIED;
        smbfleet::v1::CryptoAlgorithm_Parse(r[0].as<std::string>(), &algorithm);
        b->set_algorithm(algorithm);
        b->set_buffer_bytes(r[1].as<uint64_t>());
        b->set_threads(r[2].as<uint32_t>());
        b->set_bytes_per_second(r[3].as<double>());
        SetTimestamp(r[4], b->mutable_measured_at());
      }
    }
    return std::optional<HostRecord>(std::move(record));
  } catch (...) {
    return MapException(dsn_, absl::StrCat("reading host ", name));
  }
}

// NULL for UNSPECIFIED, else the short name ("NON_COMPLIANT") the schema uses.
std::optional<std::string> StatusText(smbfleet::v1::ComplianceStatus s) {
  if (s == smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED) return std::nullopt;
  return std::string(policy::StatusName(s));
}

smbfleet::v1::ComplianceStatus StatusFromText(const std::string& text) {
  smbfleet::v1::ComplianceStatus s = smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED;
  smbfleet::v1::ComplianceStatus_Parse("COMPLIANCE_STATUS_" + text, &s);
  return s;
}

std::string EvidenceJson(const google::protobuf::RepeatedPtrField<smbfleet::v1::Evidence>& ev) {
  std::string out = "[";
  for (int i = 0; i < ev.size(); ++i) {
    auto json = ToJson(ev[i], /*pretty=*/false);
    if (!json.ok()) continue;
    if (out.size() > 1) out += ",";
    out += *json;
  }
  return out + "]";
}

absl::Status PgStore::ActivatePolicy(const std::string& name, const std::string& version,
                                     const std::string& source) {
  try {
    auto conn = pool_.Acquire();
    pqxx::work tx(*conn);
    tx.exec_params("UPDATE policy_versions SET active = false WHERE policy_name = $1 AND active",
                   name);
    tx.exec_params(
        "INSERT INTO policy_versions (policy_name, version, active, source) VALUES ($1, $2, true, "
        "$3) ON CONFLICT (policy_name, version) DO UPDATE SET active = true, source = "
        "EXCLUDED.source",
        name, version, source);
    tx.commit();
    return absl::OkStatus();
  } catch (...) {
    return MapException(dsn_, absl::StrCat("activating policy ", name, " ", version));
  }
}

absl::StatusOr<std::vector<smbfleet::v1::Waiver>> PgStore::ActiveWaivers() {
  try {
    auto conn = pool_.Acquire();
    pqxx::read_transaction tx(*conn);
    pqxx::result rows = tx.exec(
        "SELECT id, rule_id, COALESCE(host_name, ''), COALESCE(label_key, ''), "
        "COALESCE(label_value, ''), COALESCE(share_name, ''), justification, approved_by, "
        "created_by, EXTRACT(EPOCH FROM created_at)::float8, EXTRACT(EPOCH FROM "
        "expires_at)::float8 "
        "FROM waivers_active ORDER BY id");
    std::vector<smbfleet::v1::Waiver> out;
    for (const auto& r : rows) {
      smbfleet::v1::Waiver w;
      w.set_id(r[0].as<std::string>());
      w.set_rule_id(r[1].as<std::string>());
      w.set_host(r[2].as<std::string>());
      w.set_label_key(r[3].as<std::string>());
      w.set_label_value(r[4].as<std::string>());
      w.set_share(r[5].as<std::string>());
      w.set_justification(r[6].as<std::string>());
      w.set_approved_by(r[7].as<std::string>());
      w.set_created_by(r[8].as<std::string>());
      SetTimestamp(r[9], w.mutable_created_at());
      SetTimestamp(r[10], w.mutable_expires_at());
      out.push_back(std::move(w));
    }
    return out;
  } catch (...) {
    return MapException(dsn_, "reading waivers");
  }
}

absl::StatusOr<size_t> PgStore::SaveEvaluation(const std::string& host,
                                               const smbfleet::v1::HostEvaluation& eval) {
  try {
    auto conn = pool_.Acquire();
    pqxx::work tx(*conn);
    pqxx::result h =
        tx.exec_params("SELECT id, labels::text FROM hosts WHERE name = $1 FOR UPDATE", host);
    if (h.empty()) return absl::NotFoundError(absl::StrCat("no host named '", host, "'"));
    const int64_t host_id = h[0][0].as<int64_t>();
    const std::string labels = h[0][1].as<std::string>();
    pqxx::result prev = tx.exec_params(
        "SELECT rule_id, share_name, policy_version, status FROM compliance_results "
        "WHERE host_id = $1 AND policy_name = $2",
        host_id, eval.policy_name());
    std::vector<policy::StoredResult> previous;
    for (const auto& r : prev) {
      previous.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(),
                          StatusFromText(r[3].as<std::string>())});
    }
    const std::string at = TimestampText(eval.evaluated_at());
    auto transitions = policy::ComputeTransitions(previous, eval);
    for (const auto& t : transitions) {
      tx.exec_params(
          "INSERT INTO compliance_transitions (host_id, policy_name, policy_version, rule_id, "
          "share_name, classification, from_status, to_status, at, labels) VALUES ($1, $2, $3, "
          "$4, $5, $6, $7, $8, $9::timestamptz, $10::jsonb)",
          host_id, eval.policy_name(), t.policy_version(), t.rule_id(), t.share(),
          t.classification(), StatusText(t.from_status()), StatusText(t.to_status()), at, labels);
    }
    tx.exec_params("DELETE FROM compliance_results WHERE host_id = $1 AND policy_name = $2",
                   host_id, eval.policy_name());
    for (const auto& r : eval.results()) {
      tx.exec_params(
          "INSERT INTO compliance_results (host_id, policy_name, policy_version, rule_id, "
          "share_name, classification, status, severity, message, evidence, waiver_id, "
          "cis_ws2022, cis_ws2025, evaluated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
          "$10::jsonb, NULLIF($11, ''), $12, $13, $14::timestamptz) "
          "ON CONFLICT (host_id, policy_name, rule_id, share_name) DO NOTHING",
          host_id, eval.policy_name(), eval.policy_version(), r.rule_id(), r.share(),
          r.classification(), *StatusText(r.status()), smbfleet::v1::Severity_Name(r.severity()),
          r.message(), EvidenceJson(r.evidence()), r.waiver_id(), r.cis().ws2022(),
          r.cis().ws2025(), at);
    }
    tx.commit();
    return transitions.size();
  } catch (...) {
    return MapException(dsn_, absl::StrCat("storing the evaluation of ", host));
  }
}

absl::StatusOr<smbfleet::v1::GetComplianceResponse> PgStore::GetCompliance() {
  try {
    auto conn = pool_.Acquire();
    pqxx::read_transaction tx(*conn);
    smbfleet::v1::GetComplianceResponse out;
    pqxx::result active =
        tx.exec("SELECT policy_name, version FROM policy_versions WHERE active ORDER BY 1 LIMIT 1");
    if (!active.empty()) {
      out.set_policy_name(active[0][0].as<std::string>());
      out.set_policy_version(active[0][1].as<std::string>());
    }
    pqxx::result rows = tx.exec(
        "SELECT policy_name, rule_id, compliant, non_compliant, waived, unknown, errors, "
        "not_applicable, COALESCE(compliant_pct, -1)::float8 FROM compliance_now_by_rule "
        "ORDER BY policy_name, rule_id");
    for (const auto& r : rows) {
      auto* rc = out.add_rules();
      rc->set_policy_name(r[0].as<std::string>());
      rc->set_rule_id(r[1].as<std::string>());
      rc->set_compliant(r[2].as<uint32_t>());
      rc->set_non_compliant(r[3].as<uint32_t>());
      rc->set_waived(r[4].as<uint32_t>());
      rc->set_unknown(r[5].as<uint32_t>());
      rc->set_errors(r[6].as<uint32_t>());
      rc->set_not_applicable(r[7].as<uint32_t>());
      rc->set_compliant_pct(r[8].as<double>());
    }
    return out;
  } catch (...) {
    return MapException(dsn_, "reading compliance");
  }
}

absl::StatusOr<std::vector<smbfleet::v1::Finding>> PgStore::ListFindings(const std::string& host,
                                                                         const std::string& rule_id,
                                                                         uint32_t limit) {
  try {
    auto conn = pool_.Acquire();
    pqxx::read_transaction tx(*conn);
    pqxx::result rows = tx.exec_params(
        "SELECT host, rule_id, share_name, classification, severity, message, evidence::text, "
        "EXTRACT(EPOCH FROM failing_since)::float8, policy_version FROM compliance_failing_since "
        "WHERE ($1 = '' OR host = $1) AND ($2 = '' OR rule_id = $2) "
        "ORDER BY failing_since, host, rule_id, share_name LIMIT $3",
        host, rule_id, static_cast<int64_t>(limit));
    std::vector<smbfleet::v1::Finding> out;
    for (const auto& r : rows) {
      smbfleet::v1::Finding f;
      f.set_host(r[0].as<std::string>());
      f.set_rule_id(r[1].as<std::string>());
      f.set_share(r[2].as<std::string>());
      f.set_classification(r[3].as<std::string>());
      smbfleet::v1::Severity severity = smbfleet::v1::SEVERITY_UNSPECIFIED;
      smbfleet::v1::Severity_Parse(r[4].as<std::string>(), &severity);
      f.set_severity(severity);
      f.set_message(r[5].as<std::string>());
      smbfleet::v1::HostEvaluation holder;  // parse the evidence array through a message
      std::string wrapped =
          absl::StrCat("{\"results\": [{\"evidence\": ", r[6].as<std::string>(), "}]}");
      if (FromJson(wrapped, "stored evidence", &holder, true).ok() && holder.results_size() == 1) {
        *f.mutable_evidence() = holder.results(0).evidence();
      }
      SetTimestamp(r[7], f.mutable_failing_since());
      f.set_policy_version(r[8].as<std::string>());
      out.push_back(std::move(f));
    }
    return out;
  } catch (...) {
    return MapException(dsn_, "listing findings");
  }
}

}  // namespace

std::string RedactDsn(const std::string& dsn) {
  char* err = nullptr;
  PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &err);
  if (options == nullptr) {
    if (err != nullptr) PQfreemem(err);
    return "(unparsable connection string)";
  }
  std::vector<std::string> parts;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val == nullptr || o->val[0] == '\0') continue;
    std::string key = o->keyword;
    if (key == "password" || key == "sslpassword") continue;
    if (key == "host" || key == "hostaddr" || key == "port" || key == "dbname" || key == "user" ||
        key == "sslmode") {
      parts.push_back(absl::StrCat(key, "=", o->val));
    }
  }
  PQconninfoFree(options);
  return absl::StrJoin(parts, " ");
}

absl::Status ApplyMigrations(const std::string& dsn, const std::vector<Migration>& migrations) {
  try {
    pqxx::connection conn(dsn);
    {
      pqxx::nontransaction lock(conn);
      lock.exec_params("SELECT pg_advisory_lock(hashtext($1))", kMigrationLockKey);
    }
    absl::Status result = absl::OkStatus();
    try {
      {
        pqxx::work tx(conn);
        tx.exec(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, "
            "checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
        tx.commit();
      }
      for (const auto& m : migrations) {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        EVP_Digest(m.sql.data(), m.sql.size(), digest, &len, EVP_sha256(), nullptr);
        std::string checksum =
            absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), len));
        pqxx::work tx(conn);
        pqxx::result existing =
            tx.exec_params("SELECT checksum FROM schema_migrations WHERE version = $1", m.version);
        if (!existing.empty()) {
          if (existing[0][0].as<std::string>() != checksum) {
            result = absl::FailedPreconditionError(
                absl::StrCat("migration ", m.version,
                             " was changed after it was applied; add a new migration instead"));
            break;
          }
          continue;
        }
        tx.exec(m.sql);
        tx.exec_params("INSERT INTO schema_migrations (version, checksum) VALUES ($1, $2)",
                       m.version, checksum);
        tx.commit();
      }
    } catch (...) {
      result = MapException(dsn, "applying migrations");
    }
    pqxx::nontransaction unlock(conn);
    unlock.exec_params("SELECT pg_advisory_unlock(hashtext($1))", kMigrationLockKey);
    return result;
  } catch (...) {
    return MapException(dsn, "applying migrations");
  }
}

absl::StatusOr<std::unique_ptr<Store>> NewPgStore(const std::string& dsn, int pool_size) {
  try {
    pqxx::connection probe(dsn);
    if (!probe.is_open()) {
      return absl::UnavailableError(
          absl::StrCat("PostgreSQL at ", RedactDsn(dsn), " is not reachable"));
    }
  } catch (...) {
    return MapException(dsn, "connecting to the database");
  }
  return std::unique_ptr<Store>(new PgStore(dsn, pool_size));
}

}  // namespace smbfleet::collector

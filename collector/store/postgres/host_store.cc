#include "collector/store/postgres/host_store.h"

#include <algorithm>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "collector/store/postgres/dsn.h"
#include "collector/store/postgres/posture_codec.h"
#include "collector/store/postgres/posture_rows.h"
#include "collector/store/postgres/sql.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace smbfleet::collector {
namespace {

using smbfleet::v1::HostSummary;
using smbfleet::v1::Posture;

constexpr char kSummaryColumns[] = R"sql(
  h.name, h.platform, h.os_name, h.os_version, h.agent_version,
  EXTRACT(EPOCH FROM h.first_seen)::float8 AS first_seen,
  EXTRACT(EPOCH FROM h.last_seen)::float8 AS last_seen,
  EXTRACT(EPOCH FROM h.last_changed)::float8 AS last_changed,
  h.labels::text AS labels, h.reported_labels::text AS reported_labels,
  (SELECT count(*) FROM host_shares s WHERE s.host_id = h.id) AS shares,
  (SELECT count(*) FROM host_sessions s WHERE s.host_id = h.id) AS sessions,
  COALESCE(jsonb_array_length(NULLIF(CASE WHEN p.posture_json ? 'probeErrors'
    THEN p.posture_json -> 'probeErrors' ELSE b.posture_json -> 'probeErrors' END,
    'null'::jsonb)), 0) AS probe_errors
)sql";

// Hosts read by one statement of GetHosts.
constexpr size_t kHostsPerRead = 1000;

// Each host's latest posture `p`, joined to `h` (the hosts table or a page of it), and the
// base `b` it is stored against (migration 0019; none for a plain posture): p.posture_json holds
// only the members that differ from b.posture_json, a member b has and p has not as JSON null.
constexpr char kLatestPosture[] =
    "LEFT JOIN host_state st ON st.host_id = h.id "
    "LEFT JOIN postures p ON p.id = st.posture_id AND p.stored_at = st.posture_stored_at "
    "LEFT JOIN postures b ON b.id = p.base_id AND b.stored_at = p.base_stored_at ";

// The binary posture of the base `b` (kLatestPosture) as the column `base` ('' for a plain
// posture): the dictionary of p.posture (posture_codec.h).
constexpr char kPostureBase[] = "COALESCE(encode(b.posture, 'hex'), '') AS base";

// The plain bytes of the row's `posture` (with its `base`); '' for a host without one.
absl::StatusOr<std::string> PlainPosture(const pqxx::row& r, const std::string& host) {
  return pg::DecodeStoredPosture(absl::HexStringToBytes(r["posture"].as<std::string>()),
                                 absl::HexStringToBytes(r["base"].as<std::string>()), host);
}

HostSummary SummaryFromRow(const pqxx::row& r) {
  HostSummary s;
  s.set_name(r["name"].as<std::string>());
  smbfleet::v1::Platform platform = smbfleet::v1::PLATFORM_UNSPECIFIED;
  smbfleet::v1::Platform_Parse(r["platform"].as<std::string>(), &platform);
  s.set_platform(platform);
  s.set_os_name(r["os_name"].as<std::string>());
  s.set_os_version(r["os_version"].as<std::string>());
  s.set_agent_version(r["agent_version"].as<std::string>());
  pg::SetTimestamp(r["first_seen"], s.mutable_first_seen());
  pg::SetTimestamp(r["last_seen"], s.mutable_last_seen());
  pg::SetTimestamp(r["last_changed"], s.mutable_last_changed());
  auto labels = nlohmann::json::parse(r["labels"].as<std::string>(), nullptr, false);
  if (labels.is_object()) {
    for (auto& [k, v] : labels.items()) {
      if (v.is_string()) (*s.mutable_labels())[k] = v.get<std::string>();
    }
  }
  auto reported = nlohmann::json::parse(r["reported_labels"].as<std::string>(), nullptr, false);
  if (reported.is_object()) {
    for (auto& [k, v] : reported.items()) {
      if (v.is_string()) (*s.mutable_reported_labels())[k] = v.get<std::string>();
    }
  }
  s.set_shares(r["shares"].as<uint32_t>());
  s.set_sessions(r["sessions"].as<uint32_t>());
  s.set_probe_errors(r["probe_errors"].as<uint32_t>());
  return s;
}

// SQLSTATE class 22 (data exception: 22P05 untranslatable character, 22021 invalid byte
// sequence, 22008 datetime overflow, ...): the report itself is wrong and every resend fails
// the same way, so it is INVALID_ARGUMENT, not the UNAVAILABLE of a database that is away.
bool IsDataError(const pqxx::sql_error& e) { return e.sqlstate().rfind("22", 0) == 0; }

std::string FirstLine(absl::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

// INVALID_ARGUMENT for a data error (`e`) PostgreSQL met in `what`: "<what>: PostgreSQL refuses
// a value of <which> (SQLSTATE ...): <its first line>".
absl::Status RefusedValue(absl::string_view what, absl::string_view which,
                          const pqxx::sql_error& e) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": PostgreSQL refuses a value of ", which,
                                                 " (SQLSTATE ", e.sqlstate(),
                                                 "): ", FirstLine(e.what())));
}

class PgHostStore : public HostStore {
 public:
  explicit PgHostStore(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}

  absl::StatusOr<SavedReport> StoreReport(const IncomingReport& report) override;
  absl::StatusOr<std::vector<SavedDigestReport>> StoreDigestReports(
      const std::vector<IncomingReport>& reports) override;
  absl::StatusOr<std::vector<SavedReport>> StoreReports(
      const std::vector<IncomingReport>& reports) override;
  absl::StatusOr<std::vector<HostSummary>> ListHosts(const HostQuery& query) override;
  absl::StatusOr<std::optional<HostRecord>> GetHost(const std::string& name) override;
  absl::StatusOr<std::map<std::string, HostRecord>> GetHosts(
      const std::vector<std::string>& names) override;
  absl::StatusOr<HostPage> FindHosts(const HostQuery& query) override;
  absl::StatusOr<std::map<std::string, StoredPosture>> CurrentPostures(
      const std::vector<std::string>& hosts) override;

 private:
  // `current_rows`: where a changed current posture's session and share rows are left for the
  // caller to replace (pg::ReplaceSessions, pg::ReplaceShares); null: replaced here.
  absl::StatusOr<SavedReport> SaveReportIn(pqxx::work& tx, const IncomingReport& report,
                                           std::vector<pg::HostPosture>* current_rows = nullptr);
  std::vector<SavedDigestReport> SaveDigestReportsIn(pqxx::transaction_base& tx,
                                                     const std::vector<IncomingReport>& reports);
  // The history row of a changed posture; returns its id.
  absl::StatusOr<int64_t> InsertPosture(pqxx::work& tx, int64_t host_id,
                                        const IncomingReport& report);
  // The changed posture as the host's current state: latest state, host columns, sessions and
  // shares (those left in `current_rows` when it is not null).
  void StoreCurrentPosture(pqxx::work& tx, int64_t host_id, int64_t posture_id,
                           const IncomingReport& report,
                           std::vector<pg::HostPosture>* current_rows);
  // The records of `names` that exist, by name: three statements however many names.
  absl::StatusOr<std::map<std::string, HostRecord>> ReadHosts(
      pqxx::transaction_base& tx, const std::vector<std::string>& names);

  std::shared_ptr<ConnectionPool> pool_;
};

absl::StatusOr<SavedReport> PgHostStore::StoreReport(const IncomingReport& report) {
  if (report.digest.empty()) {  // every host would look unchanged
    return absl::InvalidArgumentError(
        absl::StrCat("report ", report.report_id, " of ", report.host, " has no posture digest"));
  }
  return pool_->Run<pqxx::work>(
      absl::StrCat("storing report ", report.report_id, " of ", report.host),
      [&](pqxx::work& tx) -> absl::StatusOr<SavedReport> {
        try {
          ASSIGN_OR_RETURN(SavedReport saved, SaveReportIn(tx, report));
          if (saved.outcome == SaveOutcome::kDuplicate || saved.unknown_digest) {
            tx.abort();
          } else {
            tx.commit();
          }
          return saved;
        } catch (const pqxx::sql_error& e) {
          if (!IsDataError(e)) throw;
          return RefusedValue(absl::StrCat("report ", report.report_id), "it", e);
        }
      });
}

absl::StatusOr<std::vector<SavedReport>> PgHostStore::StoreReports(
    const std::vector<IncomingReport>& reports) {
  std::set<std::string> hosts;
  for (const IncomingReport& r : reports) {
    if (r.posture == nullptr || r.digest.empty() || !hosts.insert(r.host).second) {
      return HostStore::StoreReports(reports);  // not a batch of this shape: one by one
    }
  }
  if (reports.empty()) return std::vector<SavedReport>();
  // Each report as StoreReport stores it, in one transaction. The hosts' rows are locked in name
  // order, so that batches of two replicas cannot deadlock on each other.
  std::vector<size_t> order(reports.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return reports[a].host < reports[b].host; });
  return pool_->Run<pqxx::work>(absl::StrCat("storing ", reports.size(), " report(s)"),
                                [&](pqxx::work& tx) -> absl::StatusOr<std::vector<SavedReport>> {
                                  std::vector<SavedReport> out(reports.size());
                                  try {
                                    // The session and share rows of all the batch's changed hosts
                                    // in one go each.
                                    std::vector<pg::HostPosture> current_rows;
                                    for (size_t i : order) {
                                      ASSIGN_OR_RETURN(out[i],
                                                       SaveReportIn(tx, reports[i], &current_rows));
                                    }
                                    pg::ReplaceSessions(tx, current_rows);
                                    pg::ReplaceShares(tx, current_rows);
                                  } catch (const pqxx::sql_error& e) {
                                    if (!IsDataError(e)) throw;
                                    return RefusedValue("reports", "one", e);
                                  }
                                  tx.commit();
                                  return out;
                                });
}

absl::StatusOr<std::vector<SavedDigestReport>> PgHostStore::StoreDigestReports(
    const std::vector<IncomingReport>& reports) {
  std::set<std::string> hosts;
  for (const IncomingReport& r : reports) {
    if (r.posture != nullptr || r.digest.empty() || !hosts.insert(r.host).second) {
      return HostStore::StoreDigestReports(reports);  // not a batch of this shape: one by one
    }
  }
  if (reports.empty()) return std::vector<SavedDigestReport>();
  // One statement, which PostgreSQL runs as its own transaction: all of it or nothing, and
  // committed before its answer, so an ack still means stored.
  return pool_->RunStatement(
      DatabaseOperation::kWrite, absl::StrCat("storing ", reports.size(), " digest-only report(s)"),
      [&](pqxx::nontransaction& tx) -> absl::StatusOr<std::vector<SavedDigestReport>> {
        try {
          return SaveDigestReportsIn(tx, reports);
        } catch (const pqxx::sql_error& e) {
          if (!IsDataError(e)) throw;
          return RefusedValue("digest-only reports", "one", e);
        }
      });
}

// One statement for the whole batch, where StoreReport takes three per report and a
// transaction: the hosts' rows locked (in name order, so that batches of two replicas cannot
// deadlock) and read, the report rows of the matching digests inserted (report_ids keeps each
// report once: reports is partitioned by day and a resend may come on another day), and the
// hosts of the inserted ones updated. A duplicate or another digest writes nothing, as in
// StoreReport (whose transaction it aborts).
std::vector<SavedDigestReport> PgHostStore::SaveDigestReportsIn(
    pqxx::transaction_base& tx, const std::vector<IncomingReport>& reports) {
  const size_t n = reports.size();
  std::vector<std::string> names(n);
  std::vector<std::string> ids(n);
  std::vector<std::string> received(n);
  std::vector<std::string> collected(n);
  std::vector<std::string> reasons(n);
  std::vector<std::string> digests(n);
  std::vector<int64_t> sizes(n);
  for (size_t i = 0; i < n; ++i) {
    const IncomingReport& r = reports[i];
    names[i] = r.host;
    ids[i] = r.report_id;
    received[i] = pg::Rfc3339(r.received_at);
    collected[i] = pg::TimestampText(r.collected_at);
    reasons[i] = r.reason;
    digests[i] = r.digest;
    sizes[i] = static_cast<int64_t>(r.size_bytes);
  }
  pqxx::result rows = tx.exec_params(
      "WITH u AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], "
      "$5::text[], $6::text[], $7::bigint[]) WITH ORDINALITY AS u(name, id, received, collected, "
      "reason, digest, size, i)), "
      "locked AS (SELECT u.*, h.id AS host_id, h.evaluation_key, "
      "COALESCE(encode(h.posture_hash, 'hex'), '') = u.digest AS same, "
      "COALESCE(NULLIF(u.collected, '')::timestamptz < h.last_collected_at, false) AS older "
      "FROM u JOIN hosts h ON h.name = u.name ORDER BY h.name FOR UPDATE OF h), "
      "fresh AS (INSERT INTO report_ids (host_id, report_id, received_at) SELECT host_id, "
      "id::uuid, received::timestamptz FROM locked WHERE same "
      "ON CONFLICT (host_id, report_id) DO NOTHING RETURNING host_id), "
      "inserted AS (INSERT INTO reports (report_id, host_id, received_at, collected_at, reason, "
      "posture_hash, changed, size_bytes) SELECT l.id::uuid, l.host_id, "
      "l.received::timestamptz, NULLIF(l.collected, '')::timestamptz, l.reason, "
      "decode(l.digest, 'hex'), false, l.size FROM locked l JOIN fresh USING (host_id)), "
      "moved AS (UPDATE hosts h SET last_seen = GREATEST(h.last_seen, l.received::timestamptz), "
      "last_report_id = CASE WHEN l.older THEN h.last_report_id ELSE l.id::uuid END, "
      "last_collected_at = CASE WHEN l.older THEN h.last_collected_at ELSE "
      "COALESCE(NULLIF(l.collected, '')::timestamptz, h.last_collected_at) END "
      "FROM locked l JOIN fresh USING (host_id) WHERE h.id = l.host_id) "
      "SELECT l.i, l.same, l.evaluation_key, fresh.host_id IS NOT NULL AS stored "
      "FROM locked l LEFT JOIN fresh USING (host_id)",
      pg::TextArray(names), pg::TextArray(ids), pg::TextArray(received), pg::TextArray(collected),
      pg::TextArray(reasons), pg::TextArray(digests), pg::BigintArray(sizes));
  std::vector<SavedDigestReport> out(n);
  for (auto& o : out) o.saved.unknown_digest = true;  // until its host's digest is read
  for (const auto& row : rows) {
    const auto i = static_cast<size_t>(row["i"].as<int64_t>() - 1);
    if (i >= n || !row["same"].as<bool>()) continue;
    SavedDigestReport& o = out[i];
    o.saved.unknown_digest = false;
    o.evaluation_key = row["evaluation_key"].as<std::string>();
    // Current even when collected before the current state: it says what that state says.
    o.saved.outcome = row["stored"].as<bool>() ? SaveOutcome::kUnchanged : SaveOutcome::kDuplicate;
    o.saved.current = true;
  }
  return out;
}

absl::StatusOr<SavedReport> PgHostStore::SaveReportIn(pqxx::work& tx, const IncomingReport& report,
                                                      std::vector<pg::HostPosture>* current_rows) {
  const std::string received = pg::Rfc3339(report.received_at);
  const std::string collected = pg::TimestampText(
      report.posture != nullptr ? report.posture->collected_at() : report.collected_at);
  // The upsert locks the host's row until commit: the reports of one host are stored one at a
  // time, so the duplicate and order checks below do not race another connection.
  pqxx::row host = tx.exec_params1(
      "INSERT INTO hosts (name, first_seen, last_seen) VALUES ($1, $2::timestamptz, "
      "$2::timestamptz) ON CONFLICT (name) DO UPDATE SET last_seen = "
      "GREATEST(hosts.last_seen, EXCLUDED.last_seen) RETURNING id, "
      "COALESCE(encode(posture_hash, 'hex'), '') AS posture_hash, "
      "COALESCE(NULLIF($3, '')::timestamptz < last_collected_at, false) AS older",
      report.host, received, collected);
  const int64_t host_id = host["id"].as<int64_t>();
  const bool changed = host["posture_hash"].as<std::string>() != report.digest;
  const bool older = host["older"].as<bool>();
  if (report.posture == nullptr && changed) {  // rolled back: the agent sends the posture
    SavedReport unknown;
    unknown.unknown_digest = true;
    return unknown;
  }

  pqxx::result fresh = tx.exec_params(
      "INSERT INTO report_ids (host_id, report_id, received_at) VALUES ($1, $2::uuid, "
      "$3::timestamptz) ON CONFLICT (host_id, report_id) DO NOTHING",
      host_id, report.report_id, received);
  SavedReport saved;
  saved.current = !changed;
  if (fresh.affected_rows() == 0) {
    saved.outcome = SaveOutcome::kDuplicate;
    return saved;
  }
  tx.exec_params(
      "INSERT INTO reports (report_id, host_id, received_at, collected_at, reason, "
      "posture_hash, changed, size_bytes) VALUES ($1::uuid, $2, $3::timestamptz, "
      "NULLIF($4, '')::timestamptz, $5, decode($6, 'hex'), $7, $8)",
      report.report_id, host_id, received, collected, report.reason, report.digest, changed,
      static_cast<int64_t>(report.size_bytes));
  saved.outcome = changed ? SaveOutcome::kStored : SaveOutcome::kUnchanged;
  if (report.posture != nullptr) pg::SaveBenchmarks(tx, host_id, *report.posture, received);
  if (older) {  // history only
    if (changed) RETURN_IF_ERROR(InsertPosture(tx, host_id, report).status());
    return saved;
  }
  saved.current = true;
  if (changed) {
    ASSIGN_OR_RETURN(int64_t posture_id, InsertPosture(tx, host_id, report));
    StoreCurrentPosture(tx, host_id, posture_id, report, current_rows);
  } else {
    tx.exec_params(
        "UPDATE hosts SET last_report_id = $2::uuid, last_collected_at = "
        "COALESCE(NULLIF($3, '')::timestamptz, last_collected_at) WHERE id = $1",
        host_id, report.report_id, collected);
  }
  return saved;
}

absl::StatusOr<int64_t> PgHostStore::InsertPosture(pqxx::work& tx, int64_t host_id,
                                                   const IncomingReport& report) {
  const Posture& posture = *report.posture;
  ASSIGN_OR_RETURN(std::string json, ToJson(posture, /*pretty=*/false));
  std::string bytes;
  if (!posture.SerializeToString(&bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("posture of report ", report.report_id, " cannot be serialised"));
  }
  const std::string received = pg::Rfc3339(report.received_at);
  // The host's latest plain posture of this UTC day is the base of its next ones
  // (posture_codec.h; the same partition holds both). When the posture before this one would be
  // a base at least twice as good (the sessions have moved on from the base's), this posture
  // is stored plain and is the next base.
  // The day's bounds as parameters, so that PostgreSQL plans the read of that day's partition
  // alone: a report's transaction holds its host's row, and locking every partition (the
  // default one too, which the history job locks to attach a day, and then waits for the hosts
  // table) would deadlock with the job.
  const absl::CivilDay day = absl::ToCivilDay(report.received_at, absl::UTCTimeZone());
  const std::string day_start = pg::Rfc3339(absl::FromCivil(day, absl::UTCTimeZone()));
  const std::string day_end = pg::Rfc3339(absl::FromCivil(day + 1, absl::UTCTimeZone()));
  pqxx::result base = tx.exec_params(
      "SELECT b.id, b.stored_at::text AS stored_at, encode(b.posture, 'hex') AS posture, "
      "COALESCE((SELECT encode(d.posture, 'hex') FROM postures d WHERE d.host_id = $1 AND "
      "d.stored_at >= $2::timestamptz AND d.stored_at < $3::timestamptz AND d.base_id = b.id "
      "AND d.base_stored_at = b.stored_at ORDER BY d.stored_at DESC, d.id DESC LIMIT 1), '') "
      "AS previous FROM postures b WHERE b.host_id = $1 AND b.stored_at >= $2::timestamptz AND "
      "b.stored_at < $3::timestamptz AND b.base_id IS NULL AND b.posture <> ''::bytea "
      "ORDER BY b.stored_at DESC, b.id DESC LIMIT 1",
      host_id, day_start, day_end);
  std::optional<int64_t> base_id;
  std::optional<std::string> base_stored_at;
  if (!base.empty()) {
    const std::string base_bytes = absl::HexStringToBytes(base[0]["posture"].as<std::string>());
    std::optional<std::string> delta = pg::EncodePostureDelta(bytes, base_bytes);
    const std::string previous = absl::HexStringToBytes(base[0]["previous"].as<std::string>());
    if (delta.has_value() && !previous.empty()) {
      absl::StatusOr<std::string> plain_previous =
          pg::DecodeStoredPosture(previous, base_bytes, report.host);
      if (plain_previous.ok()) {
        std::optional<std::string> against_previous =
            pg::EncodePostureDelta(bytes, *plain_previous);
        if (against_previous.has_value() && 2 * against_previous->size() < delta->size()) {
          delta.reset();  // a new base
        }
      }
    }
    if (delta.has_value()) {
      bytes = *std::move(delta);
      base_id = base[0]["id"].as<int64_t>();
      base_stored_at = base[0]["stored_at"].as<std::string>();
    }
  }
  pqxx::row stored = tx.exec_params1(
      "INSERT INTO postures (host_id, report_id, stored_at, collected_at, posture_hash, "
      "posture, posture_json, base_id, base_stored_at) VALUES ($1, $2::uuid, $3::timestamptz, "
      "NULLIF($4, '')::timestamptz, decode($5, 'hex'), decode($6, 'hex'), $7::jsonb, $8, "
      "$9::timestamptz) RETURNING id",
      host_id, report.report_id, received, pg::TimestampText(posture.collected_at()), report.digest,
      absl::BytesToHexString(bytes), json, base_id, base_stored_at);
  return stored["id"].as<int64_t>();
}

void PgHostStore::StoreCurrentPosture(pqxx::work& tx, int64_t host_id, int64_t posture_id,
                                      const IncomingReport& report,
                                      std::vector<pg::HostPosture>* current_rows) {
  const Posture& posture = *report.posture;
  const std::string received = pg::Rfc3339(report.received_at);
  tx.exec_params(
      "INSERT INTO host_state (host_id, posture_id, posture_stored_at, updated_at) VALUES ($1, "
      "$2, $3::timestamptz, $3::timestamptz) ON CONFLICT (host_id) DO UPDATE SET posture_id = "
      "EXCLUDED.posture_id, posture_stored_at = EXCLUDED.posture_stored_at, updated_at = "
      "EXCLUDED.updated_at",
      host_id, posture_id, received);

  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : posture.host().labels()) labels[k] = v;
  tx.exec_params(
      "UPDATE hosts SET platform = $2, os_name = $3, os_version = $4, agent_version = $5, "
      "labels = $6::jsonb, reported_labels = $6::jsonb, last_changed = $7::timestamptz, "
      "last_report_id = $8::uuid, posture_hash = decode($9, 'hex'), "
      "last_collected_at = COALESCE(NULLIF($10, '')::timestamptz, last_collected_at) "
      "WHERE id = $1",
      host_id, smbfleet::v1::Platform_Name(posture.host().platform()), posture.host().os_name(),
      posture.host().os_version(), posture.host().agent_version(), labels.dump(), received,
      report.report_id, report.digest, pg::TimestampText(posture.collected_at()));
  if (current_rows != nullptr) {
    current_rows->emplace_back(host_id, &posture);
    return;
  }
  pg::ReplaceSessions(tx, {{host_id, &posture}});
  pg::ReplaceShares(tx, {{host_id, &posture}});
}

absl::StatusOr<std::vector<HostSummary>> PgHostStore::ListHosts(const HostQuery& query) {
  return pool_->Run<pqxx::read_transaction>(
      "listing hosts", [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<HostSummary>> {
        pqxx::result rows = tx.exec_params(
            absl::StrCat("SELECT ", kSummaryColumns, " FROM hosts h ", kLatestPosture,
                         "WHERE h.name > $1 AND starts_with(h.name, $2) ORDER BY h.name LIMIT $3"),
            query.after_name, query.name_prefix, static_cast<int64_t>(query.limit));
        std::vector<HostSummary> out;
        out.reserve(rows.size());
        for (const auto& r : rows) out.push_back(SummaryFromRow(r));
        return out;
      });
}

// The filters of FindHosts over `hosts h`, parameters $1..$7. An empty filter is a constant
// condition the planner drops (parameters of an unnamed statement are planned as values); the
// label and rule filters are sets of hosts computed once (hashed), not a lookup per host. Each
// label's hosts are read from the index on (key, value, host) (a lateral subquery the planner
// keeps apart: joined, it scanned every label of the fleet).
constexpr char kHostFilters[] = R"sql(
  starts_with(h.name, $1)
  AND ($2 = '' OR strpos(lower(h.name), lower($2)) > 0)
  AND ($3 = '' OR strpos(lower(h.os_name), lower($3)) > 0
       OR strpos(lower(h.os_version), lower($3)) > 0)
  AND ($4 = '' OR h.platform = $4)
  AND ($5 = '' OR h.last_seen < NULLIF($5, '')::timestamptz)
  AND ($6::jsonb = '{}'::jsonb OR h.name IN (
         SELECT hl.host FROM jsonb_each_text($6::jsonb) f
           CROSS JOIN LATERAL (SELECT l.host FROM host_labels l
                               WHERE l.key = f.key AND l.value = f.value OFFSET 0) hl
         GROUP BY hl.host HAVING count(*) = (SELECT count(*) FROM jsonb_each_text($6::jsonb))))
  AND ($7 = '' OR h.id IN (
         SELECT r.host_id FROM compliance_results r JOIN policy_versions v
           ON v.policy_name = r.policy_name AND v.version = r.policy_version AND v.active
         WHERE r.status = 'NON_COMPLIANT' AND ($7 = '*' OR r.rule_id = $7)))
)sql";

absl::StatusOr<HostPage> PgHostStore::FindHosts(const HostQuery& query) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : query.labels) labels[k] = v;
  const std::string platform = query.platform == smbfleet::v1::PLATFORM_UNSPECIFIED
                                   ? std::string()
                                   : smbfleet::v1::Platform_Name(query.platform);
  const std::string seen_before =
      query.seen_before.has_value() ? pg::Rfc3339(*query.seen_before) : std::string();
  return pool_->Run<pqxx::read_transaction>(
      "listing hosts", [&](pqxx::read_transaction& tx) -> absl::StatusOr<HostPage> {
        HostPage page;
        // The page's hosts first, then the latest posture of those alone.
        pqxx::result rows = tx.exec_params(
            absl::StrCat("SELECT ", kSummaryColumns, " FROM (SELECT h.* FROM hosts h WHERE ",
                         kHostFilters, " AND h.name > $8 ORDER BY h.name LIMIT $9) h ",
                         kLatestPosture, "ORDER BY h.name"),
            query.name_prefix, query.query, query.os, platform, seen_before, labels.dump(),
            query.failing_rule, query.after_name, static_cast<int64_t>(query.limit));
        page.hosts.reserve(rows.size());
        for (const auto& r : rows) page.hosts.push_back(SummaryFromRow(r));
        // Without a filter every host matches: the kept count (migration 0018), read in the
        // same snapshot as the page.
        const bool unfiltered = query.name_prefix.empty() && query.query.empty() &&
                                query.os.empty() && platform.empty() && seen_before.empty() &&
                                query.labels.empty() && query.failing_rule.empty();
        page.total =
            unfiltered
                ? pg::HostCount(tx)
                : tx.exec_params1(absl::StrCat("SELECT count(*) FROM hosts h WHERE ", kHostFilters),
                                  query.name_prefix, query.query, query.os, platform, seen_before,
                                  labels.dump(), query.failing_rule)[0]
                      .as<uint32_t>();
        return page;
      });
}

// The columns of a benchmark row of host_benchmarks `b`, and its message.
constexpr char kBenchmarkColumns[] =
    "b.algorithm, b.buffer_bytes, b.threads, b.bytes_per_second, "
    "EXTRACT(EPOCH FROM b.measured_at)::float8 AS measured_at";
// A host's latest benchmark run: the rows of its latest measured_at.
constexpr char kLatestBenchmarkRun[] =
    "b.measured_at = (SELECT max(measured_at) FROM host_benchmarks WHERE host_id = h.id)";
constexpr char kBenchmarkOrder[] = "b.threads, b.algorithm, b.buffer_bytes";

void AddBenchmark(const pqxx::row& r, Posture* posture) {
  auto* b = posture->add_benchmarks();
  smbfleet::v1::CryptoAlgorithm algorithm = smbfleet::v1::CRYPTO_ALGORITHM_UNSPECIFIED;
  smbfleet::v1::CryptoAlgorithm_Parse(r["algorithm"].as<std::string>(), &algorithm);
  b->set_algorithm(algorithm);
  b->set_buffer_bytes(r["buffer_bytes"].as<uint64_t>());
  b->set_threads(r["threads"].as<uint32_t>());
  b->set_bytes_per_second(r["bytes_per_second"].as<double>());
  pg::SetTimestamp(r["measured_at"], b->mutable_measured_at());
}

// The latest benchmark run of each of `names` (a text[] parameter, pg::TextArray), which may be
// newer than its latest changed posture: by host name, a posture holding only the benchmarks.
std::map<std::string, Posture> ReadLatestBenchmarks(pqxx::transaction_base& tx,
                                                    const std::string& names) {
  pqxx::result bench =
      tx.exec_params(absl::StrCat("SELECT h.name AS host, ", kBenchmarkColumns,
                                  " FROM host_benchmarks b JOIN hosts h ON h.id = b.host_id "
                                  "WHERE h.name = ANY($1::text[]) AND ",
                                  kLatestBenchmarkRun, " ORDER BY h.name, ", kBenchmarkOrder),
                     names);
  std::map<std::string, Posture> out;
  for (const auto& r : bench) AddBenchmark(r, &out[r["host"].as<std::string>()]);
  return out;
}

// Classifications are written by evaluation (ComplianceStore::SaveEvaluation), after the
// posture was stored. By host name, then share name: (classification, rule).
using ShareClassifications =
    std::map<std::string, std::map<std::string, std::pair<std::string, std::string>>>;
ShareClassifications ReadShareClassifications(pqxx::transaction_base& tx,
                                              const std::string& names) {
  pqxx::result rows = tx.exec_params(
      "SELECT h.name AS host, s.name, s.classification, s.classification_rule FROM host_shares s "
      "JOIN hosts h ON h.id = s.host_id WHERE h.name = ANY($1::text[])",
      names);
  ShareClassifications out;
  for (const auto& r : rows) {
    out[r["host"].as<std::string>()][r["name"].as<std::string>()] = {
        r["classification"].as<std::string>(), r["classification_rule"].as<std::string>()};
  }
  return out;
}

absl::StatusOr<std::map<std::string, HostRecord>> PgHostStore::ReadHosts(
    pqxx::transaction_base& tx, const std::vector<std::string>& names) {
  std::map<std::string, HostRecord> out;
  if (names.empty()) return out;
  // The names as one array parameter: never in the statement's text.
  const std::string in = pg::TextArray(names);
  pqxx::result rows = tx.exec_params(
      absl::StrCat("SELECT ", kSummaryColumns,
                   ", COALESCE(encode(p.posture, 'hex'), '') AS posture, ", kPostureBase,
                   ", COALESCE(h.last_report_id::text, '') AS last_report_id, "
                   "COALESCE(encode(h.posture_hash, 'hex'), '') AS digest",
                   " FROM hosts h ", kLatestPosture, "WHERE h.name = ANY($1::text[])"),
      in);
  if (rows.empty()) return out;
  auto benchmarks = ReadLatestBenchmarks(tx, in);
  ShareClassifications classifications = ReadShareClassifications(tx, in);
  for (const auto& row : rows) {
    HostRecord record;
    record.summary = SummaryFromRow(row);
    const std::string name = record.summary.name();
    ASSIGN_OR_RETURN(std::string bytes, PlainPosture(row, name));
    if (!bytes.empty() && !record.posture.ParseFromString(bytes)) {
      return absl::DataLossError(absl::StrCat("stored posture of ", name, " cannot be parsed"));
    }
    record.last_report_id = row["last_report_id"].as<std::string>();
    if (!bytes.empty()) record.posture_digest = row["digest"].as<std::string>();
    if (auto b = benchmarks.find(name); b != benchmarks.end()) {
      *record.posture.mutable_benchmarks() = std::move(*b->second.mutable_benchmarks());
    }
    if (auto c = classifications.find(name); c != classifications.end()) {
      for (auto& share : *record.posture.mutable_shares()) {
        auto it = c->second.find(share.name());
        if (it == c->second.end() || it->second.first.empty()) continue;
        share.set_classification(it->second.first);
        share.set_classification_rule(it->second.second);
      }
    }
    out[name] = std::move(record);
  }
  return out;
}

absl::StatusOr<std::optional<HostRecord>> PgHostStore::GetHost(const std::string& name) {
  return pool_->Run<pqxx::read_transaction>(
      absl::StrCat("reading host ", name),
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::optional<HostRecord>> {
        ASSIGN_OR_RETURN(auto records, ReadHosts(tx, {name}));
        auto it = records.find(name);
        if (it == records.end()) return std::optional<HostRecord>();
        return std::optional<HostRecord>(std::move(it->second));
      });
}

absl::StatusOr<std::map<std::string, HostRecord>> PgHostStore::GetHosts(
    const std::vector<std::string>& names) {
  return pool_->Run<pqxx::read_transaction>(
      absl::StrCat("reading ", names.size(), " hosts"),
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::map<std::string, HostRecord>> {
        std::map<std::string, HostRecord> out;
        for (size_t begin = 0; begin < names.size(); begin += kHostsPerRead) {
          const size_t end = std::min(names.size(), begin + kHostsPerRead);
          ASSIGN_OR_RETURN(auto chunk,
                           ReadHosts(tx, std::vector<std::string>(
                                             names.begin() + static_cast<std::ptrdiff_t>(begin),
                                             names.begin() + static_cast<std::ptrdiff_t>(end))));
          out.merge(chunk);
        }
        return out;
      });
}

// Two statements for the page, where GetHost takes three per host: the postures with their
// digests, and the latest benchmark runs.
absl::StatusOr<std::map<std::string, StoredPosture>> PgHostStore::CurrentPostures(
    const std::vector<std::string>& hosts) {
  return pool_->Run<pqxx::read_transaction>(
      absl::StrCat("reading the postures of ", hosts.size(), " host(s)"),
      [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::map<std::string, StoredPosture>> {
        const std::string names = pg::TextArray(hosts);
        pqxx::result rows = tx.exec_params(
            absl::StrCat("SELECT h.name, COALESCE(encode(p.posture, 'hex'), '') AS posture, ",
                         kPostureBase, ", encode(h.posture_hash, 'hex') AS digest FROM hosts h ",
                         kLatestPosture,
                         "WHERE h.name = ANY($1::text[]) AND h.posture_hash IS NOT NULL"),
            names);
        std::map<std::string, StoredPosture> out;
        for (const auto& r : rows) {
          const std::string name = r["name"].as<std::string>();
          ASSIGN_OR_RETURN(std::string bytes, PlainPosture(r, name));
          if (bytes.empty()) continue;  // as GetHost: no posture
          StoredPosture& p = out[name];
          if (!p.posture.ParseFromString(bytes)) {
            return absl::DataLossError(
                absl::StrCat("stored posture of ", name, " cannot be parsed"));
          }
          p.digest = r["digest"].as<std::string>();
        }
        pqxx::result bench =
            tx.exec_params(absl::StrCat("SELECT h.name, ", kBenchmarkColumns,
                                        " FROM hosts h JOIN host_benchmarks b ON b.host_id = h.id "
                                        "WHERE h.name = ANY($1::text[]) AND ",
                                        kLatestBenchmarkRun, " ORDER BY h.name, ", kBenchmarkOrder),
                           names);
        std::string cleared;  // the host whose posture's benchmarks were replaced last
        for (const auto& r : bench) {
          const std::string name = r["name"].as<std::string>();
          auto found = out.find(name);
          if (found == out.end()) continue;
          if (name != cleared) {
            found->second.posture.clear_benchmarks();
            cleared = name;
          }
          AddBenchmark(r, &found->second.posture);
        }
        return out;
      });
}

}  // namespace

std::unique_ptr<HostStore> NewPgHostStore(std::shared_ptr<ConnectionPool> pool) {
  return std::make_unique<PgHostStore>(std::move(pool));
}

}  // namespace smbfleet::collector

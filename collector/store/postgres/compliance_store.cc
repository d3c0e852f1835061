#include "collector/store/postgres/compliance_store.h"

#include <map>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/store/postgres/change_rows.h"
#include "collector/store/postgres/dsn.h"
#include "collector/store/postgres/sql.h"
#include "common/json.h"
#include "common/status_macros.h"

namespace smbfleet::collector {
namespace {

using smbfleet::v1::HostEvaluation;

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

smbfleet::v1::Finding FindingFromRow(const pqxx::row& r) {
  smbfleet::v1::Finding f;
  f.set_host(r["host"].as<std::string>());
  f.set_rule_id(r["rule_id"].as<std::string>());
  f.set_share(r["share_name"].as<std::string>());
  f.set_classification(r["classification"].as<std::string>());
  smbfleet::v1::Severity severity = smbfleet::v1::SEVERITY_UNSPECIFIED;
  smbfleet::v1::Severity_Parse(r["severity"].as<std::string>(), &severity);
  f.set_severity(severity);
  f.set_message(r["message"].as<std::string>());
  HostEvaluation holder;  // parses the evidence array through a message
  std::string wrapped =
      absl::StrCat("{\"results\": [{\"evidence\": ", r["evidence"].as<std::string>(), "}]}");
  if (FromJson(wrapped, "stored evidence", &holder, true).ok() && holder.results_size() == 1) {
    *f.mutable_evidence() = holder.results(0).evidence();
  }
  pg::SetTimestamp(r["failing_since"], f.mutable_failing_since());
  f.set_policy_version(r["policy_version"].as<std::string>());
  return f;
}

// The evaluations of a page's hosts (one host for SaveEvaluation), whose rows the transaction
// has locked (and whose stored keys it checked), in six statements for the whole page: its
// transitions, the removal of its current results that changed or are gone, the policy version
// and evaluation time of those that did not change, its new and changed results, its shares'
// classifications and its keys, every value an array parameter. The count triggers of migration
// 0015 fire once per statement instead of three times per host (their counts are sums, the same
// either way; an update counts its rows out of their old version and into the new).
struct PageHost {
  int64_t id;
  const EvaluationWrite* write;
};

// Result rows as array parameters, a column each.
struct ResultRows {
  std::vector<int64_t> ids;
  std::vector<std::string> policy, version, rule, share, classification, status, severity, message,
      evidence, waiver, ws2022, ws2025, at;

  void Add(const ResultRows& from, size_t i) {
    ids.push_back(from.ids[i]);
    policy.push_back(from.policy[i]);
    version.push_back(from.version[i]);
    rule.push_back(from.rule[i]);
    share.push_back(from.share[i]);
    classification.push_back(from.classification[i]);
    status.push_back(from.status[i]);
    severity.push_back(from.severity[i]);
    message.push_back(from.message[i]);
    evidence.push_back(from.evidence[i]);
    waiver.push_back(from.waiver[i]);
    ws2022.push_back(from.ws2022[i]);
    ws2025.push_back(from.ws2025[i]);
    at.push_back(from.at[i]);
  }
};

void WriteEvaluations(pqxx::work& tx, const std::vector<PageHost>& page) {
  if (page.empty()) return;
  std::vector<int64_t> host_ids;
  std::vector<std::string> policies;
  std::vector<std::string> keys;
  for (const PageHost& h : page) {
    host_ids.push_back(h.id);
    policies.push_back(h.write->evaluation->policy_name());
    keys.push_back(h.write->evaluation_key);
  }

  {  // Transitions: a status "" is SQL NULL (no result before, or none after).
    std::vector<int64_t> ids;
    std::vector<std::string> policy, version, rule, share, classification, from, to, at;
    for (const PageHost& h : page) {
      const HostEvaluation& eval = *h.write->evaluation;
      const std::string evaluated_at = pg::TimestampText(eval.evaluated_at());
      for (const auto& t : h.write->transitions) {
        ids.push_back(h.id);
        policy.push_back(eval.policy_name());
        version.push_back(t.policy_version());
        rule.push_back(t.rule_id());
        share.push_back(t.share());
        classification.push_back(t.classification());
        from.push_back(pg::StatusText(t.from_status()).value_or(""));
        to.push_back(pg::StatusText(t.to_status()).value_or(""));
        at.push_back(evaluated_at);
      }
    }
    if (!ids.empty()) {
      tx.exec_params(
          "INSERT INTO compliance_transitions (host_id, policy_name, policy_version, rule_id, "
          "share_name, classification, from_status, to_status, at, labels) "
          "SELECT u.host_id, u.policy_name, u.policy_version, u.rule_id, u.share_name, "
          "u.classification, NULLIF(u.from_status, ''), NULLIF(u.to_status, ''), "
          "NULLIF(u.at, '')::timestamptz, h.labels "
          "FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
          "$7::text[], $8::text[], $9::text[]) WITH ORDINALITY AS u(host_id, policy_name, "
          "policy_version, rule_id, share_name, classification, from_status, to_status, at, i) "
          "JOIN hosts h ON h.id = u.host_id WHERE h.id = ANY($1::bigint[]) ORDER BY u.i",
          pg::BigintArray(ids), pg::TextArray(policy), pg::TextArray(version), pg::TextArray(rule),
          pg::TextArray(share), pg::TextArray(classification), pg::TextArray(from),
          pg::TextArray(to), pg::TextArray(at));
    }
  }

  // The page's results: each host's in its order, of two with the same rule and share only the
  // first (as an insert that kept the first of two did before).
  ResultRows rows;
  for (const PageHost& h : page) {
    const HostEvaluation& eval = *h.write->evaluation;
    const std::string evaluated_at = pg::TimestampText(eval.evaluated_at());
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto& r : eval.results()) {
      if (!seen.emplace(r.rule_id(), r.share()).second) continue;
      rows.ids.push_back(h.id);
      rows.policy.push_back(eval.policy_name());
      rows.version.push_back(eval.policy_version());
      rows.rule.push_back(r.rule_id());
      rows.share.push_back(r.share());
      rows.classification.push_back(r.classification());
      rows.status.push_back(pg::StatusText(r.status()).value_or(""));
      rows.severity.push_back(smbfleet::v1::Severity_Name(r.severity()));
      rows.message.push_back(r.message());
      rows.evidence.push_back(EvidenceJson(r.evidence()));
      rows.waiver.push_back(r.waiver_id());
      rows.ws2022.push_back(r.cis().ws2022());
      rows.ws2025.push_back(r.cis().ws2025());
      rows.at.push_back(evaluated_at);
    }
  }

  // The stored results that no new result equals (in every column but the policy version and
  // the evaluation time) are removed: changed ones, and those no longer evaluated. `= ANY` on
  // the ids: a join on unnest() alone is planned as a scan of the whole table once the page has
  // a few hundred hosts. A stored waiver_id is never '' (NULL for none).
  tx.exec_params(
      "DELETE FROM compliance_results r WHERE r.host_id = ANY($1::bigint[]) AND "
      "(r.host_id, r.policy_name) IN (SELECT * FROM unnest($1::bigint[], $2::text[])) AND NOT "
      "EXISTS (SELECT FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], "
      "$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[]) AS u(host_id, "
      "rule_id, share_name, classification, status, severity, message, evidence, waiver_id, "
      "cis_ws2022, cis_ws2025) WHERE u.host_id = r.host_id AND u.rule_id = r.rule_id AND "
      "u.share_name = r.share_name AND u.classification = r.classification AND u.status = "
      "r.status AND u.severity = r.severity AND u.message = r.message AND u.evidence::jsonb = "
      "r.evidence AND u.waiver_id = COALESCE(r.waiver_id, '') AND u.cis_ws2022 = r.cis_ws2022 "
      "AND u.cis_ws2025 = r.cis_ws2025)",
      pg::BigintArray(host_ids), pg::TextArray(policies), pg::BigintArray(rows.ids),
      pg::TextArray(rows.rule), pg::TextArray(rows.share), pg::TextArray(rows.classification),
      pg::TextArray(rows.status), pg::TextArray(rows.severity), pg::TextArray(rows.message),
      pg::TextArray(rows.evidence), pg::TextArray(rows.waiver), pg::TextArray(rows.ws2022),
      pg::TextArray(rows.ws2025));

  // What is left of the hosts' results is what the new results repeat: only their version and
  // evaluation time are set, in place (no indexed column changes, so the update can stay on the
  // row's page: migration 0021). After a policy change that is most of them.
  std::vector<bool> kept(rows.ids.size(), false);
  if (!rows.ids.empty()) {
    for (const auto& r : tx.exec_params(
             "UPDATE compliance_results r SET policy_version = u.policy_version, evaluated_at = "
             "NULLIF(u.at, '')::timestamptz FROM unnest($1::bigint[], $2::text[], $3::text[], "
             "$4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS u(host_id, policy_name, "
             "rule_id, share_name, policy_version, at, i) WHERE r.host_id = ANY($7::bigint[]) AND "
             "r.host_id = u.host_id AND r.policy_name = u.policy_name AND r.rule_id = u.rule_id "
             "AND r.share_name = u.share_name RETURNING u.i",
             pg::BigintArray(rows.ids), pg::TextArray(rows.policy), pg::TextArray(rows.rule),
             pg::TextArray(rows.share), pg::TextArray(rows.version), pg::TextArray(rows.at),
             pg::BigintArray(host_ids))) {
      kept[static_cast<size_t>(r[0].as<int64_t>() - 1)] = true;
    }
  }

  {  // The new and changed results, in each host's order.
    ResultRows fresh;
    for (size_t i = 0; i < rows.ids.size(); ++i) {
      if (!kept[i]) fresh.Add(rows, i);
    }
    if (!fresh.ids.empty()) {
      tx.exec_params(
          "INSERT INTO compliance_results (host_id, policy_name, policy_version, rule_id, "
          "share_name, classification, status, severity, message, evidence, waiver_id, "
          "cis_ws2022, cis_ws2025, evaluated_at) "
          "SELECT u.host_id, u.policy_name, u.policy_version, u.rule_id, u.share_name, "
          "u.classification, NULLIF(u.status, ''), u.severity, u.message, u.evidence::jsonb, "
          "NULLIF(u.waiver_id, ''), u.cis_ws2022, u.cis_ws2025, NULLIF(u.at, '')::timestamptz "
          "FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
          "$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], "
          "$13::text[], $14::text[]) WITH ORDINALITY AS u(host_id, policy_name, policy_version, "
          "rule_id, share_name, classification, status, severity, message, evidence, waiver_id, "
          "cis_ws2022, cis_ws2025, at, i) ORDER BY u.i "
          "ON CONFLICT (host_id, policy_name, rule_id, share_name) DO NOTHING",
          pg::BigintArray(fresh.ids), pg::TextArray(fresh.policy), pg::TextArray(fresh.version),
          pg::TextArray(fresh.rule), pg::TextArray(fresh.share),
          pg::TextArray(fresh.classification), pg::TextArray(fresh.status),
          pg::TextArray(fresh.severity), pg::TextArray(fresh.message),
          pg::TextArray(fresh.evidence), pg::TextArray(fresh.waiver), pg::TextArray(fresh.ws2022),
          pg::TextArray(fresh.ws2025), pg::TextArray(fresh.at));
    }
  }

  {
    std::vector<int64_t> ids;
    std::vector<std::string> name, classification, rule;
    for (const PageHost& h : page) {
      for (const auto& c : h.write->evaluation->classifications()) {
        ids.push_back(h.id);
        name.push_back(c.share());
        classification.push_back(c.classification());
        rule.push_back(c.rule());
      }
    }
    if (!ids.empty()) {
      tx.exec_params(
          "UPDATE host_shares s SET classification = c.classification, classification_rule = "
          "c.rule FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS c(host_id, "
          "name, classification, rule) WHERE s.host_id = c.host_id AND s.name = c.name",
          pg::BigintArray(ids), pg::TextArray(name), pg::TextArray(classification),
          pg::TextArray(rule));
    }
  }

  tx.exec_params(
      "UPDATE hosts h SET evaluation_key = u.evaluation_key FROM unnest($1::bigint[], "
      "$2::text[]) AS u(id, evaluation_key) WHERE h.id = u.id AND h.id = ANY($1::bigint[])",
      pg::BigintArray(host_ids), pg::TextArray(keys));
}

// Counts of a slice of the current results, by status, from their kept counts (`c`: rows of
// compliance_counts_current, migration 0015, or compliance_label_counts, migration 0017).
constexpr char kSliceCounts[] = R"sql(
  COALESCE(sum(c.n) FILTER (WHERE c.status = 'COMPLIANT'), 0)::bigint AS compliant,
  COALESCE(sum(c.n) FILTER (WHERE c.status = 'NON_COMPLIANT'), 0)::bigint AS non_compliant,
  COALESCE(sum(c.n) FILTER (WHERE c.status = 'WAIVED'), 0)::bigint AS waived,
  COALESCE(sum(c.n) FILTER (WHERE c.status = 'UNKNOWN'), 0)::bigint AS unknown,
  COALESCE(sum(c.n) FILTER (WHERE c.status = 'ERROR'), 0)::bigint AS errors
)sql";

double Pct(uint64_t good, uint64_t applicable) {
  return applicable == 0 ? -1 : 100.0 * static_cast<double>(good) / static_cast<double>(applicable);
}

smbfleet::v1::ComplianceSlice SliceFromRow(const pqxx::row& r) {
  smbfleet::v1::ComplianceSlice s;
  s.set_key(r["key"].as<std::string>());
  s.set_compliant(r["compliant"].as<uint32_t>());
  s.set_non_compliant(r["non_compliant"].as<uint32_t>());
  s.set_waived(r["waived"].as<uint32_t>());
  s.set_unknown(r["unknown"].as<uint32_t>());
  s.set_errors(r["errors"].as<uint32_t>());
  s.set_compliant_pct(Pct(s.compliant() + s.waived(), s.compliant() + s.non_compliant() +
                                                          s.waived() + s.unknown() + s.errors()));
  return s;
}

// Slices come back in byte order of their key, as the memory store sorts them.
void AddSlices(const pqxx::result& rows,
               google::protobuf::RepeatedPtrField<smbfleet::v1::ComplianceSlice>* out) {
  std::map<std::string, smbfleet::v1::ComplianceSlice> sorted;
  for (const auto& r : rows) {
    auto s = SliceFromRow(r);
    sorted[s.key()] = s;
  }
  for (auto& [key, s] : sorted) *out->Add() = std::move(s);
}

bool LegacyDialect(const std::string& name) {
  return name == "DIALECT_SMB1" || name == "DIALECT_SMB_2_0_2" || name == "DIALECT_SMB_2_1";
}

// Everything of the overview but by_rule (GetCompliance) and drift, aggregated in SQL.
void ReadOverview(pqxx::transaction_base& tx, const OverviewQuery& q, const std::string& policy,
                  const std::string& version, smbfleet::v1::GetFleetOverviewResponse* out) {
  const auto top = static_cast<int64_t>(q.top);
  out->set_hosts(pg::HostCount(tx));
  AddSlices(tx.exec(absl::StrCat("SELECT c.classification AS key, ", kSliceCounts,
                                 " FROM compliance_counts_current c WHERE c.on_share "
                                 "GROUP BY c.classification HAVING sum(c.n) > 0")),
            out->mutable_by_classification());
  // Per trusted label, from the counts kept per label (migration 0017), not per host.
  AddSlices(tx.exec(absl::StrCat(
                "SELECT c.key || '=' || c.value AS key, ", kSliceCounts,
                " FROM compliance_label_counts c JOIN policy_versions v ON v.policy_name = "
                "c.policy_name AND v.version = c.policy_version AND v.active "
                "GROUP BY c.key, c.value HAVING sum(c.n) > 0")),
            out->mutable_by_label());

  // The trend, from what each day's transitions changed per status (compliance_trend_counts):
  // a day's counts are the changes of every day up to it, so the days before the window add up
  // to its first day and a running sum per status gives the others.
  pqxx::result trend = tx.exec_params(
      R"sql(
      WITH w AS (
        SELECT (date_trunc('day', $1::timestamptz, 'UTC') AT TIME ZONE 'UTC')::date AS last_day),
      bounds AS (SELECT last_day - ($2::int - 1) AS first_day, last_day FROM w),
      days AS (
        SELECT d::date AS day
        FROM bounds, generate_series(bounds.first_day, bounds.last_day, interval '1 day') d),
      g AS (
        SELECT greatest(t.day, b.first_day) AS day, t.status, sum(t.n) AS n
        FROM compliance_trend_counts t, bounds b
        WHERE t.policy_name = $3 AND t.day <= b.last_day GROUP BY 1, 2),
      per_day AS (
        SELECT d.day, st.status,
               sum(COALESCE(g.n, 0)) OVER (PARTITION BY st.status ORDER BY d.day) AS n
        FROM days d CROSS JOIN (SELECT DISTINCT status FROM g) st
        LEFT JOIN g ON g.day = d.day AND g.status = st.status)
      SELECT to_char(d.day, 'YYYY-MM-DD') AS day,
             COALESCE(sum(p.n) FILTER (WHERE p.status = 'COMPLIANT'), 0)::bigint AS compliant,
             COALESCE(sum(p.n) FILTER (WHERE p.status = 'NON_COMPLIANT'), 0)::bigint
               AS non_compliant,
             COALESCE(sum(p.n) FILTER (WHERE p.status = 'WAIVED'), 0)::bigint AS waived,
             COALESCE(sum(p.n) FILTER (WHERE p.status <> 'NOT_APPLICABLE'), 0)::bigint
               AS applicable
      FROM days d LEFT JOIN per_day p ON p.day = d.day
      GROUP BY d.day ORDER BY d.day)sql",
      pg::Rfc3339(q.now), static_cast<int64_t>(q.trend_days), policy);
  for (const auto& r : trend) {
    auto* p = out->add_trend();
    p->set_day(r["day"].as<std::string>());
    p->set_compliant(r["compliant"].as<uint32_t>());
    p->set_non_compliant(r["non_compliant"].as<uint32_t>());
    p->set_compliant_pct(Pct(r["compliant"].as<uint64_t>() + r["waived"].as<uint64_t>(),
                             r["applicable"].as<uint64_t>()));
  }

  // The hosts failing longest under the active version of the overview's policy: one kept row
  // per host (compliance_host_failing) with its name (migration 0018), `top` rows read in the
  // order of its index, ties on `since` by name.
  for (const auto& r : tx.exec_params(
           "SELECT f.host_name AS host, EXTRACT(EPOCH FROM f.since)::float8 AS since, f.rules "
           "FROM compliance_host_failing f "
           "WHERE f.policy_name = $2 AND f.policy_version = $3 "
           "ORDER BY f.since, f.host_name COLLATE \"C\" LIMIT $1",
           top, policy, version)) {
    auto* h = out->add_failing_longest();
    h->set_name(r["host"].as<std::string>());
    pg::SetTimestamp(r["since"], h->mutable_since());
    h->set_count(r["rules"].as<uint32_t>());
  }

  const std::string stale_before = pg::Rfc3339(q.stale_before);
  out->set_stale_count(
      tx.exec_params1("SELECT count(*) FROM hosts WHERE last_seen < $1::timestamptz",
                      stale_before)[0]
          .as<uint32_t>());
  for (const auto& r : tx.exec_params(
           "SELECT name, EXTRACT(EPOCH FROM last_seen)::float8 AS since FROM hosts "
           "WHERE last_seen < $1::timestamptz ORDER BY last_seen, name COLLATE \"C\" LIMIT $2",
           stale_before, top)) {
    auto* h = out->add_stale();
    h->set_name(r["name"].as<std::string>());
    pg::SetTimestamp(r["since"], h->mutable_since());
  }

  // Share encryption and live sessions from their kept counts (migration 0017): a few rows
  // per writing connection, whatever the number of shares and sessions.
  for (const auto& r :
       tx.exec("SELECT classification, sum(n) AS shares, "
               "COALESCE(sum(n) FILTER (WHERE encrypted), 0) AS encrypted "
               "FROM share_encryption_counts GROUP BY classification HAVING sum(n) > 0 "
               "ORDER BY classification COLLATE \"C\"")) {
    auto* c = out->add_encryption();
    c->set_classification(r["classification"].as<std::string>());
    c->set_shares(r["shares"].as<uint32_t>());
    c->set_encrypted(r["encrypted"].as<uint32_t>());
    c->set_encrypted_pct(Pct(c->encrypted(), c->shares()));
  }

  auto* sessions = out->mutable_sessions();
  for (const auto& r : tx.exec("SELECT dialect, sum(n) AS sessions, "
                               "COALESCE(sum(n) FILTER (WHERE signing = 'PROTECTION_NONE'), 0) "
                               "AS unsigned_sessions, "
                               "COALESCE(sum(n) FILTER (WHERE encryption = 'PROTECTION_NONE'), 0) "
                               "AS unencrypted_sessions "
                               "FROM session_counts GROUP BY dialect HAVING sum(n) > 0")) {
    const auto dialect = r["dialect"].as<std::string>();
    const auto n = r["sessions"].as<uint32_t>();
    sessions->set_sessions(sessions->sessions() + n);
    sessions->set_unsigned_sessions(sessions->unsigned_sessions() +
                                    r["unsigned_sessions"].as<uint32_t>());
    sessions->set_unencrypted_sessions(sessions->unencrypted_sessions() +
                                       r["unencrypted_sessions"].as<uint32_t>());
    if (LegacyDialect(dialect)) {
      sessions->set_legacy_dialect_sessions(sessions->legacy_dialect_sessions() + n);
    }
    (*sessions->mutable_by_dialect())[dialect] = n;
  }
  // Each host's exposed sessions (unsigned or a legacy dialect), read in its index's order.
  for (const auto& r :
       tx.exec_params("SELECT name, exposed_sessions FROM hosts WHERE exposed_sessions > 0 "
                      "ORDER BY exposed_sessions DESC, name COLLATE \"C\" LIMIT $1",
                      top)) {
    auto* h = sessions->add_top_hosts();
    h->set_name(r["name"].as<std::string>());
    h->set_count(r["exposed_sessions"].as<uint32_t>());
  }
}

class PgComplianceStore : public ComplianceStore {
 public:
  explicit PgComplianceStore(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}

  absl::Status ActivatePolicy(const std::string& name, const std::string& version,
                              const std::string& source) override {
    return pool_->Run<pqxx::work>(
        absl::StrCat("activating policy ", name, " ", version),
        [&](pqxx::work& tx) -> absl::Status {
          tx.exec_params(
              "UPDATE policy_versions SET active = false WHERE policy_name = $1 AND active", name);
          tx.exec_params(
              "INSERT INTO policy_versions (policy_name, version, active, source) VALUES ($1, $2, "
              "true, $3) ON CONFLICT (policy_name, version) DO UPDATE SET active = true, source = "
              "EXCLUDED.source",
              name, version, source);
          // The kept counts of connections that are gone, merged into one row per key
          // (migrations 0015, 0017 and 0018).
          tx.exec("SELECT compliance_counts_fold(), fleet_counts_fold(), host_counts_fold()");
          tx.commit();
          return absl::OkStatus();
        });
  }

  absl::StatusOr<std::vector<smbfleet::v1::Waiver>> ActiveWaivers() override {
    // One statement (a batch of digest-only reports reads the waivers once): no BEGIN/COMMIT.
    return pool_->RunStatement(
        DatabaseOperation::kRead, "reading waivers",
        [&](pqxx::nontransaction& tx) -> absl::StatusOr<std::vector<smbfleet::v1::Waiver>> {
          // The view keeps only APPROVED, unrevoked waivers in their validity period.
          pqxx::result rows = tx.exec(
              absl::StrCat("SELECT ", pg::kWaiverColumns, " FROM waivers_active w ORDER BY w.id"));
          std::vector<smbfleet::v1::Waiver> out;
          out.reserve(rows.size());
          for (const auto& r : rows) out.push_back(pg::WaiverFromRow(r));
          return out;
        });
  }

  absl::StatusOr<std::string> EvaluationKey(const std::string& host) override {
    return pool_->Run<pqxx::read_transaction>(
        absl::StrCat("reading the evaluation key of ", host),
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::string> {
          pqxx::result rows =
              tx.exec_params("SELECT evaluation_key FROM hosts WHERE name = $1", host);
          if (rows.empty()) return std::string();
          return rows[0]["evaluation_key"].as<std::string>();
        });
  }

  absl::StatusOr<std::vector<EvaluationState>> EvaluationStates(const std::string& after_host,
                                                                uint32_t limit) override {
    return pool_->Run<pqxx::read_transaction>(
        "listing evaluation keys",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<EvaluationState>> {
          pqxx::result rows = tx.exec_params(
              "SELECT name, encode(posture_hash, 'hex') AS digest, evaluation_key FROM hosts "
              "WHERE name > $1 AND posture_hash IS NOT NULL ORDER BY name LIMIT $2",
              after_host, static_cast<int64_t>(limit));
          std::vector<EvaluationState> out;
          out.reserve(rows.size());
          for (const auto& r : rows) {
            out.push_back({r["name"].as<std::string>(), r["digest"].as<std::string>(),
                           r["evaluation_key"].as<std::string>()});
          }
          return out;
        });
  }

  absl::StatusOr<std::vector<ResultStatus>> CurrentResults(
      const std::string& host, const std::string& policy_name) override {
    return pool_->Run<pqxx::read_transaction>(
        absl::StrCat("reading the results of ", host),
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<ResultStatus>> {
          pqxx::result rows = tx.exec_params(
              "SELECT r.rule_id, r.share_name, r.policy_version, r.status FROM compliance_results "
              "r "
              "JOIN hosts h ON h.id = r.host_id WHERE h.name = $1 AND r.policy_name = $2",
              host, policy_name);
          std::vector<ResultStatus> out;
          out.reserve(rows.size());
          for (const auto& r : rows) {
            out.push_back({r["rule_id"].as<std::string>(), r["share_name"].as<std::string>(),
                           r["policy_version"].as<std::string>(),
                           pg::StatusFromText(r["status"].as<std::string>())});
          }
          return out;
        });
  }

  absl::Status SaveEvaluation(const EvaluationWrite& w) override {
    return pool_->Run<pqxx::work>(
        absl::StrCat("storing the evaluation of ", w.host), [&](pqxx::work& tx) -> absl::Status {
          pqxx::result h = tx.exec_params(
              "SELECT id, evaluation_key FROM hosts WHERE name = $1 FOR UPDATE", w.host);
          if (h.empty()) return absl::NotFoundError(absl::StrCat("no host named '", w.host, "'"));
          if (h[0]["evaluation_key"].as<std::string>() != w.expected_key) {
            return absl::AbortedError(
                absl::StrCat("the results of ", w.host, " changed while it was evaluated"));
          }
          WriteEvaluations(tx, {{h[0]["id"].as<int64_t>(), &w}});
          tx.commit();
          return absl::OkStatus();
        });
  }

  absl::StatusOr<std::map<std::string, StoredEvaluation>> StoredEvaluations(
      const std::vector<std::string>& hosts, const std::string& policy_name) override {
    return pool_->Run<pqxx::read_transaction>(
        absl::StrCat("reading the results of ", hosts.size(), " host(s)"),
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::map<std::string, StoredEvaluation>> {
          pqxx::result rows = tx.exec_params(
              "SELECT h.name, h.evaluation_key, r.rule_id, r.share_name, r.policy_version, "
              "r.status FROM hosts h LEFT JOIN compliance_results r ON r.host_id = h.id AND "
              "r.policy_name = $2 WHERE h.name = ANY($1::text[])",
              pg::TextArray(hosts), policy_name);
          std::map<std::string, StoredEvaluation> out;
          for (const auto& r : rows) {
            StoredEvaluation& e = out[r["name"].as<std::string>()];
            e.evaluation_key = r["evaluation_key"].as<std::string>();
            if (r["rule_id"].is_null()) continue;  // no results yet
            e.results.push_back({r["rule_id"].as<std::string>(), r["share_name"].as<std::string>(),
                                 r["policy_version"].as<std::string>(),
                                 pg::StatusFromText(r["status"].as<std::string>())});
          }
          return out;
        });
  }

  absl::StatusOr<std::vector<absl::Status>> SaveEvaluations(
      const std::vector<EvaluationWrite>& writes) override {
    std::vector<std::string> names;
    names.reserve(writes.size());
    for (const EvaluationWrite& w : writes) names.push_back(w.host);
    if (std::set<std::string>(names.begin(), names.end()).size() != names.size()) {
      return absl::InvalidArgumentError("SaveEvaluations: a host is written twice");
    }
    if (writes.empty()) return std::vector<absl::Status>();
    return pool_->Run<pqxx::work>(
        absl::StrCat("storing the evaluations of ", writes.size(), " host(s)"),
        [&](pqxx::work& tx) -> absl::StatusOr<std::vector<absl::Status>> {
          // Locked in name order, as batches of digest-only reports lock them, so that two such
          // transactions cannot deadlock.
          pqxx::result rows = tx.exec_params(
              "SELECT u.i, h.id, h.evaluation_key FROM "
              "unnest($1::text[]) WITH ORDINALITY AS u(name, i) JOIN hosts h ON h.name = u.name "
              "ORDER BY h.name FOR UPDATE OF h",
              pg::TextArray(names));
          std::vector<absl::Status> out(writes.size());
          std::vector<bool> found(writes.size(), false);
          std::vector<PageHost> page;  // in name order, as locked
          page.reserve(rows.size());
          for (const auto& r : rows) {
            const auto i = static_cast<size_t>(r["i"].as<int64_t>() - 1);
            const EvaluationWrite& w = writes[i];
            found[i] = true;
            if (r["evaluation_key"].as<std::string>() != w.expected_key) {
              out[i] = absl::AbortedError(
                  absl::StrCat("the results of ", w.host, " changed while it was evaluated"));
              continue;
            }
            page.push_back({r["id"].as<int64_t>(), &w});
          }
          WriteEvaluations(tx, page);
          for (size_t i = 0; i < writes.size(); ++i) {
            if (!found[i]) {
              out[i] = absl::NotFoundError(absl::StrCat("no host named '", writes[i].host, "'"));
            }
          }
          tx.commit();
          return out;
        });
  }

  absl::StatusOr<smbfleet::v1::GetComplianceResponse> GetCompliance() override {
    return pool_->Run<pqxx::read_transaction>(
        "reading compliance",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<smbfleet::v1::GetComplianceResponse> {
          smbfleet::v1::GetComplianceResponse out;
          pqxx::result active = tx.exec(
              "SELECT policy_name, version FROM policy_versions WHERE active ORDER BY 1 LIMIT 1");
          if (!active.empty()) {
            out.set_policy_name(active[0]["policy_name"].as<std::string>());
            out.set_policy_version(active[0]["version"].as<std::string>());
          }
          pqxx::result rows = tx.exec(
              "SELECT policy_name, rule_id, compliant, non_compliant, waived, unknown, errors, "
              "not_applicable, COALESCE(compliant_pct, -1)::float8 AS compliant_pct "
              "FROM compliance_now_by_rule ORDER BY policy_name, rule_id");
          for (const auto& r : rows) {
            auto* rc = out.add_rules();
            rc->set_policy_name(r["policy_name"].as<std::string>());
            rc->set_rule_id(r["rule_id"].as<std::string>());
            rc->set_compliant(r["compliant"].as<uint32_t>());
            rc->set_non_compliant(r["non_compliant"].as<uint32_t>());
            rc->set_waived(r["waived"].as<uint32_t>());
            rc->set_unknown(r["unknown"].as<uint32_t>());
            rc->set_errors(r["errors"].as<uint32_t>());
            rc->set_not_applicable(r["not_applicable"].as<uint32_t>());
            rc->set_compliant_pct(r["compliant_pct"].as<double>());
          }
          return out;
        });
  }

  absl::StatusOr<smbfleet::v1::GetFleetOverviewResponse> GetFleetOverview(
      const OverviewQuery& query) override {
    ASSIGN_OR_RETURN(smbfleet::v1::GetComplianceResponse compliance, GetCompliance());
    return pool_->Run<pqxx::read_transaction>(
        "reading the fleet overview",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<smbfleet::v1::GetFleetOverviewResponse> {
          smbfleet::v1::GetFleetOverviewResponse out;
          out.set_policy_name(compliance.policy_name());
          out.set_policy_version(compliance.policy_version());
          *out.mutable_by_rule() = compliance.rules();
          ReadOverview(tx, query, compliance.policy_name(), compliance.policy_version(), &out);
          return out;
        });
  }

  absl::StatusOr<std::vector<smbfleet::v1::Finding>> ListFindings(const std::string& host,
                                                                  const std::string& rule_id,
                                                                  uint32_t limit) override {
    return pool_->Run<pqxx::read_transaction>(
        "listing findings",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<smbfleet::v1::Finding>> {
          pqxx::result rows = tx.exec_params(
              "SELECT host, rule_id, share_name, classification, severity, message, "
              "evidence::text AS evidence, EXTRACT(EPOCH FROM failing_since)::float8 AS "
              "failing_since, policy_version FROM compliance_failing_since "
              "WHERE ($1 = '' OR host = $1) AND ($2 = '' OR rule_id = $2) "
              "ORDER BY failing_since, host, rule_id, share_name LIMIT $3",
              host, rule_id, static_cast<int64_t>(limit));
          std::vector<smbfleet::v1::Finding> out;
          out.reserve(rows.size());
          for (const auto& r : rows) out.push_back(FindingFromRow(r));
          return out;
        });
  }

  absl::StatusOr<std::vector<smbfleet::v1::Finding>> ListWaivedFindings(const std::string& host,
                                                                        const std::string& rule_id,
                                                                        uint32_t limit) override {
    return pool_->Run<pqxx::read_transaction>(
        "listing waived findings",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<smbfleet::v1::Finding>> {
          // failing_since: when the result last turned NON_COMPLIANT (before the waiver hid it).
          pqxx::result rows = tx.exec_params(
              "SELECT c.host, c.rule_id, c.share_name, c.classification, c.severity, c.message, "
              "c.evidence::text AS evidence, COALESCE(c.waiver_id, '') AS waiver_id, "
              "EXTRACT(EPOCH FROM COALESCE((SELECT max(t.at) FROM compliance_transitions t "
              "  WHERE t.host_id = c.host_id AND t.policy_name = c.policy_name "
              "    AND t.rule_id = c.rule_id AND t.share_name = c.share_name "
              "    AND t.to_status = 'NON_COMPLIANT'), c.evaluated_at))::float8 AS failing_since, "
              "c.policy_version FROM compliance_current c "
              "WHERE c.status = 'WAIVED' AND ($1 = '' OR c.host = $1) AND ($2 = '' OR c.rule_id "
              "= $2) ORDER BY c.host, c.rule_id, c.share_name LIMIT $3",
              host, rule_id, static_cast<int64_t>(limit));
          std::vector<smbfleet::v1::Finding> out;
          out.reserve(rows.size());
          for (const auto& r : rows) {
            smbfleet::v1::Finding f = FindingFromRow(r);
            f.set_waiver_id(r["waiver_id"].as<std::string>());
            out.push_back(std::move(f));
          }
          return out;
        });
  }

 private:
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace

std::unique_ptr<ComplianceStore> NewPgComplianceStore(std::shared_ptr<ConnectionPool> pool) {
  return std::make_unique<PgComplianceStore>(std::move(pool));
}

}  // namespace smbfleet::collector

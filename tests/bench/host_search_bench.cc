// The console's host search and overview at fleet size: seeds --hosts hosts (default 100,000)
// with trusted labels, shares, sessions, results and transitions of five rules into a fresh
// PostgreSQL database, then times pages of ListHosts (HostStore::FindHosts, a page and the total
// of all pages) for each kind of filter, and GetFleetOverview. Prints one JSON object; a goal,
// not a test. Needs SMBFLEET_TEST_PG_DSN (a role that may create databases).
//
//   host_search_bench [--hosts=N] [--runs=N] [--page=N]

#include <chrono>
#include <cstdio>
#include <functional>
#include <pqxx/pqxx>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "collector/store/postgres/pg_store.h"
#include "nlohmann/json.hpp"
#include "tests/bench/bench_flags.h"
#include "tests/testing/pg_fixture.h"

namespace {

using smbfleet::tests::bench::IntFlag;
using smbfleet::tests::bench::MillisSince;
using smbfleet::tests::bench::Percentile;

using Clock = std::chrono::steady_clock;
using smbfleet::collector::HostPage;
using smbfleet::collector::HostQuery;

// The fleet in a few set-based statements: names fs000001.., 20 sites, 3 tiers, two platforms;
// two shares and one session per host; five rules, "signing" failing on every tenth host and
// "smb1" on every hundredth, each result with one transition within the last 30 days (written
// after the results, so every failing host's kept `since` is the one evaluation time: a tie).
void Seed(const std::string& dsn, int hosts) {
  pqxx::connection c(dsn);
  pqxx::work tx(c);
  tx.exec_params(
      R"sql(
      INSERT INTO hosts (name, platform, os_name, os_version, agent_version, labels, first_seen,
                         last_seen, last_changed)
      SELECT 'fs' || lpad(i::text, 6, '0'),
             CASE WHEN i % 2 = 0 THEN 'PLATFORM_WINDOWS' ELSE 'PLATFORM_SAMBA' END,
             CASE WHEN i % 2 = 0 THEN 'Windows Server 2022' ELSE 'Debian 12' END,
             CASE WHEN i % 2 = 0 THEN '10.0.20348' ELSE 'Samba 4.19.4' END, '0.9.0',
             '{}'::jsonb, now() - interval '60 days',
             now() - (i % 500) * interval '1 minute' - CASE WHEN i % 50 = 0 THEN interval '1 day'
                                                           ELSE interval '0' END,
             now() - interval '1 day'
      FROM generate_series(1, $1) i)sql",
      hosts);
  tx.exec(R"sql(
      INSERT INTO postures (host_id, report_id, stored_at, posture_hash, posture, posture_json)
      SELECT id, gen_random_uuid(), now(), '\x00'::bytea, '\x'::bytea,
             jsonb_build_object('server', jsonb_build_object('encryptData', id % 3 = 0))
      FROM hosts)sql");
  tx.exec(R"sql(
      INSERT INTO host_state (host_id, posture_id, posture_stored_at, updated_at)
      SELECT host_id, id, stored_at, now() FROM postures)sql");
  tx.exec(R"sql(
      INSERT INTO host_shares (host_id, name, path, encrypt_data, classification,
                               server_encrypt_data)
      SELECT id, s, '/srv/' || s, id % 4 = 0, CASE s WHEN 'finance' THEN 'confidential'
                                                   ELSE 'public' END, id % 3 = 0
      FROM hosts CROSS JOIN (VALUES ('finance'), ('public')) v(s))sql");
  tx.exec(R"sql(
      INSERT INTO host_sessions (host_id, session_id, client_address, client_name, user_name,
                                 dialect, signing, encryption, signing_algorithm, cipher, shares)
      SELECT id, '1', '10.0.' || (id % 250) || '.7', 'pc' || id, 'CORP\user',
             CASE WHEN id % 25 = 0 THEN 'DIALECT_SMB_2_1' ELSE 'DIALECT_SMB_3_1_1' END,
             CASE WHEN id % 10 = 0 THEN 'PROTECTION_NONE' ELSE 'PROTECTION_FULL' END,
             'PROTECTION_NONE', 'AES_128_GMAC', 'CRYPTO_ALGORITHM_UNSPECIFIED', '["finance"]'
      FROM hosts)sql");
  tx.exec(R"sql(
      INSERT INTO policy_versions (policy_name, version, active) VALUES ('baseline', '1', true))sql");
  // One evaluation time for every result, whichever transaction writes it.
  const std::string evaluated =
      tx.exec1("SELECT (now() - interval '1 hour')::text")[0].as<std::string>();
  tx.commit();
  // Labels and results a few thousand hosts per transaction: their count triggers lock each
  // host's name (migration 0017), and one transaction may hold only so many locks.
  constexpr int kHostsPerTransaction = 5000;
  for (int lo = 0; lo < hosts; lo += kHostsPerTransaction) {
    pqxx::work chunk(c);
    chunk.exec_params(R"sql(
      INSERT INTO host_labels (host, key, value, set_by)
      SELECT name, 'site', 'site-' || (id % 20), 'bench' FROM hosts WHERE id > $1 AND id <= $2
      UNION ALL SELECT name, 'tier', 'tier-' || (id % 3), 'bench' FROM hosts
      WHERE id > $1 AND id <= $2)sql",
                      lo, lo + kHostsPerTransaction);
    chunk.exec_params(R"sql(
      INSERT INTO compliance_results (host_id, policy_name, policy_version, rule_id, status,
                                      evaluated_at)
      SELECT h.id, 'baseline', '1', r,
             CASE WHEN r = 'signing' AND h.id % 10 = 0 THEN 'NON_COMPLIANT'
                  WHEN r = 'smb1' AND h.id % 100 = 0 THEN 'NON_COMPLIANT'
                  WHEN r = 'audit' AND h.id % 7 = 0 THEN 'UNKNOWN'
                  ELSE 'COMPLIANT' END,
             $3::timestamptz
      FROM hosts h CROSS JOIN (VALUES ('signing'), ('smb1'), ('audit'), ('guest'),
                                      ('dialect')) v(r)
      WHERE h.id > $1 AND h.id <= $2)sql",
                      lo, lo + kHostsPerTransaction, evaluated);
    chunk.commit();
  }
  pqxx::work last(c);
  last.exec(R"sql(
      INSERT INTO compliance_transitions (host_id, policy_name, policy_version, rule_id,
                                          from_status, to_status, at)
      SELECT host_id, policy_name, policy_version, rule_id, NULL, status,
             now() - ((host_id * 7 + length(rule_id)) % 30) * interval '1 day'
      FROM compliance_results)sql");
  last.commit();
  pqxx::nontransaction vacuum(c);
  vacuum.exec("VACUUM ANALYZE");
}

}  // namespace

int main(int argc, char** argv) {
  const int hosts = IntFlag(argc, argv, "hosts", 100'000);
  const int runs = IntFlag(argc, argv, "runs", 50);
  const int page = IntFlag(argc, argv, "page", 50);
  if (smbfleet::testing::AdminDsn().empty()) {
    std::fprintf(stderr, "host_search_bench: SMBFLEET_TEST_PG_DSN is not set\n");
    return 2;
  }
  const std::string dsn = smbfleet::testing::CreateTestDatabase();
  if (auto s = smbfleet::collector::ApplyMigrations(dsn, smbfleet::collector::BuiltinMigrations());
      !s.ok()) {
    std::fprintf(stderr, "host_search_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  auto start = Clock::now();
  try {
    Seed(dsn, hosts);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "host_search_bench: seeding: %s\n", e.what());
    return 1;
  }
  const double seed_s = MillisSince(start) / 1000;
  auto stores = smbfleet::collector::NewPgStore(dsn, 2);
  if (!stores.ok()) {
    std::fprintf(stderr, "host_search_bench: %s\n", stores.status().ToString().c_str());
    return 1;
  }
  auto& store = *stores->hosts;

  std::mt19937 rng(42);
  auto name_at = [](int i) { return absl::StrFormat("fs%06d", i); };
  // Each case: a query per run (the deep page starts somewhere in the last 5%).
  const std::vector<std::pair<std::string, std::function<HostQuery()>>> cases = {
      {"no_filter", [] { return HostQuery{}; }},
      {"query",
       [] {
         HostQuery q;
         q.query = "42";
         return q;
       }},
      {"label",
       [] {
         HostQuery q;
         q.labels = {{"site", "site-7"}};
         return q;
       }},
      {"two_labels",
       [] {
         HostQuery q;
         q.labels = {{"site", "site-7"}, {"tier", "tier-1"}};
         return q;
       }},
      {"os",
       [] {
         HostQuery q;
         q.os = "debian";
         return q;
       }},
      {"platform",
       [] {
         HostQuery q;
         q.platform = smbfleet::v1::PLATFORM_WINDOWS;
         return q;
       }},
      {"failing_rule",
       [] {
         HostQuery q;
         q.failing_rule = "smb1";
         return q;
       }},
      {"deep_page",
       [&] {
         HostQuery q;
         q.after_name = name_at(hosts - hosts / 20 + static_cast<int>(rng() % (hosts / 20)));
         return q;
       }},
  };
  nlohmann::json out = {
      {"hosts", hosts}, {"page_size", page}, {"runs", runs}, {"seed_seconds", seed_s}};
  for (const auto& [name, make] : cases) {
    std::vector<double> ms;
    uint32_t total = 0;
    size_t returned = 0;
    for (int i = 0; i < runs; ++i) {
      HostQuery q = make();
      q.limit = static_cast<uint32_t>(page);
      start = Clock::now();
      auto result = store.FindHosts(q);
      ms.push_back(MillisSince(start));
      if (!result.ok()) {
        std::fprintf(stderr, "host_search_bench: %s: %s\n", name.c_str(),
                     result.status().ToString().c_str());
        return 1;
      }
      total = result->total;
      returned = result->hosts.size();
    }
    out[name] = {{"p50_ms", Percentile(ms, 0.5)},
                 {"p95_ms", Percentile(ms, 0.95)},
                 {"total", total},
                 {"page_rows", returned}};
  }

  std::vector<double> overview_ms;
  smbfleet::collector::OverviewQuery oq;
  for (int i = 0; i < runs; ++i) {
    oq.now = absl::Now();
    oq.stale_before = oq.now - absl::Hours(2);
    start = Clock::now();
    auto o = stores->compliance->GetFleetOverview(oq);
    overview_ms.push_back(MillisSince(start));
    if (!o.ok()) {
      std::fprintf(stderr, "host_search_bench: overview: %s\n", o.status().ToString().c_str());
      return 1;
    }
  }
  out["overview"] = {{"p50_ms", Percentile(overview_ms, 0.5)},
                     {"p95_ms", Percentile(overview_ms, 0.95)},
                     {"max_ms", Percentile(overview_ms, 1.0)}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

// Evaluation speed: the baseline policy over a synthetic fleet (default 100,000 hosts with 20
// shares and 50 sessions each) on one core. Prints one JSON object; a goal, not a test.
//
//   policy_eval_bench [--hosts=N] [--shares=N] [--sessions=N] [--distinct=N] [--policy=FILE]
//                     [--plans] [--arrival]
//
// Postures are generated (deterministically) into a pool of --distinct hosts that the run
// cycles through, so memory stays bounded while caches see many different hosts: with the
// default 1,000 (26 MB of postures) every host is a cold read from memory, the worst case.
// --arrival evaluates each host the way the collector does, right after its report is parsed
// from the wire: the run parses and evaluates, then parses alone, and the evaluation's time
// is the difference (parse_cpu_seconds says what the parsing took).
// results_digest hashes the evaluations of the pool (computed after the timed loop), so a
// change to the evaluator can be checked to produce the same results.

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "policy/evaluate.h"
#include "policy/plan.h"

namespace {

using smbfleet::v1::Posture;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

Posture MakeHost(int i, int shares, int sessions, std::mt19937* rng) {
  static const char* kNames[] = {"Finance", "HR",      "backup-01",   "Projects",  "Public",
                                 "Legal",   "Scans",   "Users",       "Software",  "Archive",
                                 "payroll", "veeam01", "Engineering", "Marketing", "Data"};
  static const smbfleet::v1::Dialect kDialects[] = {
      smbfleet::v1::DIALECT_SMB_3_1_1, smbfleet::v1::DIALECT_SMB_3_1_1,
      smbfleet::v1::DIALECT_SMB_3_1_1, smbfleet::v1::DIALECT_SMB_3_0_2,
      smbfleet::v1::DIALECT_SMB_3_0,   smbfleet::v1::DIALECT_SMB_2_1,
      smbfleet::v1::DIALECT_SMB1};
  auto coin = [&](int pct) { return static_cast<int>((*rng)() % 100) < pct; };
  Posture p;
  auto* h = p.mutable_host();
  h->set_hostname(absl::StrCat("fs", i));
  h->set_fqdn(absl::StrCat("fs", i, ".corp.example"));
  int kind = i % 5;
  if (kind == 4) {
    h->set_platform(smbfleet::v1::PLATFORM_SAMBA);
    h->set_os_version("4.17.12-Debian");
  } else {
    h->set_platform(smbfleet::v1::PLATFORM_WINDOWS);
    static const char* kBuilds[] = {"10.0.14393", "10.0.17763", "10.0.20348", "10.0.26100"};
    h->set_os_version(kBuilds[kind]);
  }
  (*h->mutable_labels())["site"] = absl::StrCat("site-", i % 40);
  if (coin(20)) (*h->mutable_labels())["link"] = "wan";
  if (coin(5)) (*h->mutable_labels())["role"] = "backup";
  auto* s = p.mutable_server();
  s->set_smb1_enabled(coin(15));
  s->set_require_signing(coin(60));
  s->set_encrypt_data(coin(10));
  s->set_reject_unencrypted_access(true);
  s->set_request_compression(coin(30));
  s->set_min_dialect(coin(50) ? smbfleet::v1::DIALECT_SMB_3_1_1 : smbfleet::v1::DIALECT_SMB_2_0_2);
  s->set_name_hardening_level(static_cast<uint32_t>((*rng)() % 3));
  s->set_null_session_shares_known(true);
  if (coin(5)) s->add_null_session_shares("COMCFG");
  s->set_guest_access_allowed(coin(10));
  if (kind == 3) {
    s->set_audit_client_does_not_support_encryption(coin(70));
    s->set_audit_client_does_not_support_signing(coin(70));
    s->set_audit_insecure_guest_logon(coin(70));
  }
  auto* c = p.mutable_client();
  c->set_smb1_enabled(coin(10));
  c->set_require_signing(coin(60));
  c->set_enable_insecure_guest_logons(coin(10));
  for (int k = 0; k < shares; ++k) {
    auto* sh = p.add_shares();
    const char* base = kNames[static_cast<size_t>(k) % (sizeof(kNames) / sizeof(kNames[0]))];
    sh->set_name(k < 15 ? std::string(base) : absl::StrCat(base, "-", k));
    sh->set_path(absl::StrCat(kind == 4 ? "/srv/" : "D:\\Shares\\", sh->name()));
    sh->set_encrypt_data(coin(40));
  }
  for (int k = 0; k < sessions; ++k) {
    auto* se = p.add_sessions();
    se->set_session_id(absl::StrCat(1000000 + k));
    se->set_client_address(absl::StrCat("10.", i % 250, ".", k / 250, ".", k % 250));
    se->set_client_name(absl::StrCat("WS", i, "-", k));
    se->set_user(absl::StrCat("CORP\\user", k));
    se->set_dialect(kDialects[(*rng)() % (sizeof(kDialects) / sizeof(kDialects[0]))]);
    se->set_guest(coin(2));
    se->add_shares()->set_name(p.shares(static_cast<int>((*rng)() % p.shares_size())).name());
  }
  return p;
}

// FNV-1a over the deterministic serialization of the evaluations of the pool's postures
// (outside the timed loop): equal digests mean the evaluation produced the same results.
uint64_t ResultsDigest(const smbfleet::policy::Policy& policy, const std::vector<Posture>& pool,
                       absl::Time now) {
  uint64_t h = 1469598103934665603ull;
  smbfleet::v1::HostEvaluation eval;
  std::string bytes;
  for (const Posture& p : pool) {
    smbfleet::policy::EvaluateHostInto(policy, p, {}, now, &eval);
    bytes.clear();
    {
      google::protobuf::io::StringOutputStream os(&bytes);
      google::protobuf::io::CodedOutputStream cos(&os);
      cos.SetSerializationDeterministic(true);
      eval.SerializeToCodedStream(&cos);
    }
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

bool Flag(const std::string& arg, const std::string& name, std::string* value) {
  if (!absl::StartsWith(arg, name + "=")) return false;
  *value = arg.substr(name.size() + 1);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int hosts = 100000, shares = 20, sessions = 50, distinct = 1000;
  bool plans = false, arrival = false;
  std::string policy_file = std::string(SMBFLEET_SOURCE_DIR) + "/policy/policies/baseline.yaml";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    bool ok = true;
    if (Flag(a, "--hosts", &v))
      ok = absl::SimpleAtoi(v, &hosts) && hosts > 0;
    else if (Flag(a, "--shares", &v))
      ok = absl::SimpleAtoi(v, &shares) && shares > 0;
    else if (Flag(a, "--sessions", &v))
      ok = absl::SimpleAtoi(v, &sessions) && sessions >= 0;
    else if (Flag(a, "--distinct", &v))
      ok = absl::SimpleAtoi(v, &distinct) && distinct > 0;
    else if (Flag(a, "--policy", &v))
      policy_file = v;
    else if (a == "--plans")
      plans = true;
    else if (a == "--arrival")
      arrival = true;
    else
      ok = false;
    if (!ok) {
      std::fprintf(stderr, "policy_eval_bench: bad argument '%s'\n", a.c_str());
      return 2;
    }
  }
  std::ifstream in(policy_file);
  std::stringstream ss;
  ss << in.rdbuf();
  auto policy = smbfleet::policy::ParsePolicy(policy_file, ss.str());
  if (!policy.ok()) {
    std::fprintf(stderr, "%s\n", std::string(policy.status().message()).c_str());
    return 1;
  }
  std::mt19937 rng(42);
  std::vector<Posture> pool;
  pool.reserve(static_cast<size_t>(distinct));
  for (int i = 0; i < distinct; ++i) pool.push_back(MakeHost(i, shares, sessions, &rng));

  std::vector<std::string> wire;
  if (arrival) {
    for (const Posture& p : pool) wire.push_back(p.SerializeAsString());
  }
  Posture incoming;  // reused, as a collector's worker would
  auto posture_of = [&](int i) -> const Posture& {
    if (!arrival) return pool[static_cast<size_t>(i % distinct)];
    if (!incoming.ParseFromString(wire[static_cast<size_t>(i % distinct)])) std::abort();
    return incoming;
  };
  double parse_cpu = 0;
  if (arrival) {
    double t0 = ThreadCpuSeconds();
    for (int i = 0; i < hosts; ++i) posture_of(i);
    parse_cpu = ThreadCpuSeconds() - t0;
  }

  const absl::Time now = absl::FromUnixSeconds(1796083200);
  smbfleet::v1::HostEvaluation eval;
  uint64_t results = 0, non_compliant = 0, plan_steps = 0, affected = 0;
  auto wall0 = std::chrono::steady_clock::now();
  double cpu0 = ThreadCpuSeconds();
  for (int i = 0; i < hosts; ++i) {
    const Posture& p = posture_of(i);
    smbfleet::policy::EvaluateHostInto(*policy, p, {}, now, &eval);
    results += static_cast<uint64_t>(eval.results_size());
    non_compliant += eval.non_compliant();
    if (plans && eval.non_compliant() > 0) {
      auto plan = smbfleet::policy::PlanRemediation(*policy, p, eval, {}, now);
      plan_steps += static_cast<uint64_t>(plan.steps_size());
      affected += static_cast<uint64_t>(plan.impact().clients_size());
    }
  }
  double cpu = ThreadCpuSeconds() - cpu0 - parse_cpu;
  double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count() - parse_cpu;
  const uint64_t digest = ResultsDigest(*policy, pool, now);
  std::printf(
      "{\"benchmark\": \"policy_eval\", \"policy\": \"%s\", \"policy_version\": \"%s\", "
      "\"rules\": %zu, \"hosts\": %d, \"shares_per_host\": %d, \"sessions_per_host\": %d, "
      "\"distinct_postures\": %d, \"mode\": \"%s\", \"plans\": %s, \"results\": %llu, "
      "\"non_compliant_results\": %llu, \"plan_steps\": %llu, \"affected_clients\": %llu, "
      "\"wall_seconds\": %.4f, \"cpu_seconds\": %.4f, \"us_per_host\": %.3f, "
      "\"hosts_per_second\": %.1f, \"goal_seconds_per_100k_hosts\": 1.0, "
      "\"seconds_per_100k_hosts\": %.4f, \"parse_cpu_seconds\": %.4f, "
      "\"results_digest\": \"%016llx\"}\n",
      policy->name.c_str(), policy->version.c_str(), policy->rules.size(), hosts, shares, sessions,
      distinct, arrival ? "arrival" : "pool", plans ? "true" : "false",
      static_cast<unsigned long long>(results), static_cast<unsigned long long>(non_compliant),
      static_cast<unsigned long long>(plan_steps), static_cast<unsigned long long>(affected), wall,
      cpu, cpu / hosts * 1e6, hosts / cpu, cpu / hosts * 100000.0, parse_cpu,
      static_cast<unsigned long long>(digest));
  return 0;
}

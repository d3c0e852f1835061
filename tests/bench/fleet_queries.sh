#!/usr/bin/env bash
# Policy change and console queries at fleet size (docs/scaling.md, "Policy change and queries
# at 100,000 hosts"). A private PostgreSQL and the development CA; a collector with the baseline
# policy; --hosts simulated hosts seeded THROUGH THE REPORT PATH in rounds of --round agents
# (smbfleet-loadgen: each agent its own certificate and mutual-TLS connection, one report of the
# loadgen's posture shapes, then gone), each report stored and evaluated by the collector. Then:
#   (a) the collector is stopped and started with a changed policy (the baseline with another
#       version): the time from that start until every host's stored results are the new
#       version's (polled in compliance_results every 0.5 s), with no agent reporting;
#   (b) p50/p95 of GetCompliance, GetFleetOverview and ListHosts (host searches) through gRPC
#       (fleet_queries_bench: one mutual-TLS channel as the viewer, one call at a time).
# Prints ONE JSON document on stdout; progress on stderr. Bounded: each round and the
# re-evaluation have a deadline, after which the figure is null with what was reached.
#
#   tests/bench/fleet_queries.sh BUILD_DIR [--hosts 100000] [--round 5000] [--samples 200]
#                                [--reevaluate-threads 2] [--rounds-parallel 1]
set -euo pipefail
fq_root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 1 && $1 != --* ]] || {
  echo "usage: fleet_queries.sh BUILD_DIR [--hosts N] [--round N] [--samples N] [--reevaluate-threads N]" >&2
  exit 2
}
build=$(cd "$1" && pwd)
shift
hosts=100000 round=5000 samples=200 threads=2
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --round) round=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --reevaluate-threads) threads=$2; shift 2 ;;
    *) echo "fleet_queries.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for v in "$hosts" "$round" "$samples"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "fleet_queries.sh: '$v' is not a count" >&2; exit 2; }
done
[[ $threads =~ ^[1-9][0-9]?$ ]] || { echo "fleet_queries.sh: --reevaluate-threads: '$threads' is not 1-16" >&2; exit 2; }

export SMBFLEET_BUILD_DIR=$build
# shellcheck source=../fault/lib.sh
source "$fq_root/tests/fault/lib.sh"
loadgen_bin=$build/loadgen/smbfleet-loadgen  # read by run_loadgen (tests/fault/lib.sh)
bench_bin=$build/tests/bench/fleet_queries_bench
for bin in collector/smbfleet-collector agent/smbfleet-agent cli/smbfleetctl loadgen/smbfleet-loadgen tests/bench/fleet_queries_bench; do
  [[ -x "$build/$bin" ]] || { echo "FAIL: $build/$bin is not built" >&2; exit 1; }
done
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if ((2 * round + 1000 > $(ulimit -n))); then
  echo "fleet_queries.sh: --round $round needs $((2 * round + 1000)) open files; the limit is $(ulimit -n)" >&2
  exit 2
fi
kGoalReevaluateS=30 kGoalQueryMs=100

start_private_pg fq
e2e_init "$build/collector/smbfleet-collector" "$build/agent/smbfleet-agent" "$build/cli/smbfleetctl" >&2
trap fault_cleanup EXIT
note() { echo "-- $*" >&2; }

new_database
port=$(free_port)
policy_a=$fq_root/policy/policies/baseline.yaml
version_a=$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$policy_a" | head -1)
version_b="$version_a-b"
policy_b=$work/policy-b.yaml
sed "s/^version: .*/version: \"$version_b\"/" "$policy_a" >"$policy_b"
grep -q "^version: \"$version_b\"" "$policy_b" || fail "could not make the changed policy"

# fq_collector NAME POLICY_FILE: a collector on the fixed port with that policy.
fq_collector() {
  {
    echo "listen: 127.0.0.1:$port"
    echo "tls: {cert: pki/collector.pem, key: pki/collector.key, client_ca: pki/ca.pem}"
    echo "database: {dsn: '$dsn'}"
    echo "policy: {file: '$2', reevaluate_threads: $threads}"
    echo "log_level: info"
    cat "$work/pki/collector-identity.yaml"
  } >"$work/$1.yaml"
  rm -f "$work/$1.port"
  spawn "$1" "$collector_bin" --config "$work/$1.yaml" --port_file "$work/$1.port"
  wait_for_file "$work/$1.port" 60 || fail "collector $1 did not start"
}
q() { psql "$dsn" -qAt -c "$1"; }

# --- seeding, through the report path ---------------------------------------------------------
note "seeding $hosts hosts in rounds of $round (policy $version_a)"
fq_collector collector-a "$policy_a"
seed_t0=$(epoch_ms)
rounds=0 acked_total=0 seed_errors='{}'
for ((first = 0; first < hosts; first += round)); do
  n=$((hosts - first < round ? hosts - first : round))
  name=seed-$rounds
  run_loadgen "$name" --collector "127.0.0.1:$port" --agents "$n" --first_agent "$first" \
    --reports "$n" --rate 0 --report_timeout_ms 60000 --max_backoff_ms 5000 \
    --max_seconds $((120 + n / 20))
  wait_loadgen "$name" $((240 + n / 20))
  acked=$(jq '.acked' "$work/$name.summary.json")
  seed_errors=$(jq -c --argjson e "$seed_errors" '.errors as $n | $e + ($n // {} | with_entries(.value += ($e[.key] // 0)))' "$work/$name.summary.json")
  acked_total=$((acked_total + acked))
  rounds=$((rounds + 1))
  note "   round $rounds: $acked of $n acked ($(( ($(epoch_ms) - seed_t0) / 1000 )) s so far)"
  rm -f "$work/$name.acked" "$work/$name.log"
done
seed_s=$(( ($(epoch_ms) - seed_t0) / 1000 ))
stored_hosts=$(q "SELECT count(*) FROM hosts WHERE posture_hash IS NOT NULL")
evaluated_a=$(q "SELECT count(DISTINCT host_id) FROM compliance_results WHERE policy_version = '$version_a'")
note "seeded: $stored_hosts hosts with a posture, $evaluated_a evaluated under $version_a, in $seed_s s"
stop_proc collector-a

# --- (a) restart with a changed policy -----------------------------------------------------------
note "restarting with policy $version_b ($threads re-evaluation threads)"
t0=$(epoch_ms)
fq_collector collector-b "$policy_b"
listening_ms=$(($(epoch_ms) - t0))
bound_s=$((60 + stored_hosts / 10))
reeval_ms=null done_b=0
deadline=$((t0 + bound_s * 1000))
while :; do
  done_b=$(q "SELECT count(DISTINCT host_id) FROM compliance_results WHERE policy_version = '$version_b'")
  if ((done_b >= stored_hosts)); then reeval_ms=$(($(epoch_ms) - t0)); break; fi
  (($(epoch_ms) < deadline)) || break
  exited collector-b && fail "collector-b exited during the re-evaluation"
  sleep 0.5
done
pass_line=$(grep -o 're-evaluation done: .*' "$work/collector-b.log" | tail -1 || true)
note "   all $done_b of $stored_hosts re-evaluated after ${reeval_ms} ms ($pass_line)"
# The fleet as the console sees it under the new policy, once.
overview_hosts=$(q "SELECT count(*) FROM compliance_current WHERE policy_version = '$version_b'")

# --- (b) the console's reads ------------------------------------------------------------------------
note "queries: $samples samples each through gRPC"
queries=$("$bench_bin" --collector "127.0.0.1:$port" --cert "$work/pki/operator-viewer.pem" \
  --key "$work/pki/operator-viewer.key" --ca "$work/pki/ca.pem" --samples "$samples") ||
  note "   some calls failed: $queries"
note "   $queries"
stop_proc collector-b

jq -n --argjson hosts "$hosts" --argjson round "$round" --argjson stored "$stored_hosts" \
  --argjson acked "$acked_total" --argjson seed_s "$seed_s" --argjson errors "$seed_errors" \
  --argjson eval_a "$evaluated_a" --argjson reeval_ms "$reeval_ms" --argjson done_b "$done_b" \
  --argjson listening_ms "$listening_ms" --arg pass "$pass_line" --argjson threads "$threads" \
  --argjson bound "$bound_s" --argjson rows "$overview_hosts" --argjson q "$queries" \
  --arg va "$version_a" --arg vb "$version_b" \
  --argjson goal_s "$kGoalReevaluateS" --argjson goal_ms "$kGoalQueryMs" '
  def query($k): $q[$k] + {goal_p95_ms: $goal_ms, met: ($q[$k].p95_ms <= $goal_ms)};
  {hosts: $hosts,
   seeding: {how: "smbfleet-loadgen rounds of \($round) agents, each one report (the loadgen posture shapes: 1-50 shares, 0-200 sessions, skewed small) over its own mutual-TLS connection, stored and evaluated by the collector",
             acked: $acked, hosts_with_posture: $stored, evaluated_under_a: $eval_a, seconds: $seed_s,
             errors: $errors},
   policy: {a: $va, b: $vb},
   reevaluation: {measured_s: (if $reeval_ms == null then null else $reeval_ms / 1000 end),
                  goal_s: $goal_s,
                  met: ($reeval_ms != null and $reeval_ms <= $goal_s * 1000),
                  hosts_reevaluated: $done_b, of: $stored, threads: $threads,
                  from: "collector start with policy b until every host has results of b",
                  collector_listening_after_s: ($listening_ms / 1000),
                  hosts_per_s: (if $reeval_ms == null then null else ($done_b / ($reeval_ms / 1000) | round) end),
                  pass_log: $pass, bound_s: $bound, result_rows_of_b: $rows,
                  limit: (if $reeval_ms != null and $reeval_ms <= $goal_s * 1000 then null
                          else "the database work of each page of 500 hosts: about 20,000 result rows deleted and inserted, with their indexes, foreign keys and kept counts (a few statements a page); see docs/scaling.md" end)},
   queries: {client: "fleet_queries_bench: AdminService over one mutual-TLS gRPC channel as operator-viewer, sequential",
             compliance: query("compliance"), fleet_overview: query("fleet_overview"),
             host_search: query("host_search")}}'

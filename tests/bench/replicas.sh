#!/usr/bin/env bash
# Reports per second through one collector and through two on the same PostgreSQL: for each,
# a fresh database, the collector(s), and smbfleet-loadgen with every report made at the start
# (--rate 0), its agents spread over the collectors listed (agent i on entry i % n). Prints one
# JSON object: reports_per_s per number of collectors (the loadgen's report phase: start to
# last ack), and the stored/lost/duplicates counts of each run. Bounded by --max_seconds.
#
#   SMBFLEET_BUILD_DIR=build bash tests/bench/replicas.sh [--agents 200] [--reports 4000]
# Starts its own PostgreSQL (tests/fault/lib.sh).
agents=200 reports=4000
args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --agents) agents=$2; shift 2 ;;
    --reports) reports=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
# shellcheck source=../fault/lib.sh
source "$(dirname "$0")/../fault/lib.sh"
fault_init replicas_bench "${args[@]}"

runs=()
for n in 1 2; do
  step "$n collector(s), $agents agents, $reports reports at once"
  new_database
  targets=()
  for ((k = 0; k < n; k++)); do
    p=$(free_port)
    start_fixed_collector "c$n-$k" "$p"
    targets+=("127.0.0.1:$p")
  done
  run_loadgen "load$n" --collector "$(IFS=,; echo "${targets[*]}")" --agents "$agents" \
    --reports "$reports" --rate 0 --max_seconds 300
  wait_loadgen "load$n" 320
  loadgen_figures "load$n"
  runs+=("$(jq -nc --argjson n "$n" --argjson s "$load" --argjson c "$counts" '{
    collectors: $n, reports_per_s: $s.report_phase.reports_per_s, acked: $s.acked,
    stored: $c.stored, lost: $c.lost, duplicates: $c.duplicates }')")
  for ((k = 0; k < n; k++)); do stop_proc "c$n-$k" TERM; done
done
figures=$(printf '%s\n' "${runs[@]}" | jq -sc --argjson agents "$agents" --argjson reports "$reports" \
  '{bench: "replicas", agents: $agents, reports: $reports, runs: .}')
expect 'all(.runs[]; .lost == 0 and .duplicates == 0)' "reports lost or stored twice"
fault_finish

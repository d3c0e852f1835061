#!/usr/bin/env bash
# Restart PostgreSQL during ingest, once with a fast shutdown and once with an immediate one
# (crash recovery on start), without touching the collector. The simulated agents keep their
# reports and retry; when the database is back the same collector stores them: nothing acked is
# lost, nothing is stored twice, every report is acked in the end. Figures: the time from each
# restart to the next stored report, the agents' errors by code.
#
#   pg_restart.sh [--short|--long]   short: 2,000 reports from 50 agents; long: 10,000 from 200
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
fault_init pg_restart "$@"
if [[ $mode == long ]]; then agents=200 reports=10000 rate=250; else agents=50 reports=2000 rate=100; fi

step "database and collector (durable PostgreSQL)"
fault_collector
collector_pid=${e2e_pid[collector]}

step "ingest: $reports reports from $agents agents at $rate/s"
run_loadgen load --collector "127.0.0.1:$port" --agents "$agents" --reports "$reports" \
  --rate "$rate" --max_seconds 150

recover=()
restart_ms=()
k=0
for how in fast immediate; do
  k=$((k + 1))
  wait_stored_at_least 120 $((reports * k / 3))
  before=$(stored_reports)
  step "PostgreSQL restart ($how) at $before stored"
  t0=$(epoch_ms)
  bash "$e2e_root/deploy/pg.sh" restart "$pg_dir" "$how" >/dev/null
  restart_ms+=($(($(epoch_ms) - t0)))
  if stored_within 60 $((before + 1)); then
    recover+=($(($(epoch_ms) - t0)))
    echo "   stored again $((recover[-1])) ms after the restart began"
  else
    recover+=(null)
    echo "   nothing stored within 60 s of the database's return"
  fi
done

step "waiting for every report to be acked"
wait_loadgen load 200
collector_alive=true
exited collector && collector_alive=false
[[ ${e2e_pid[collector]} == "$collector_pid" ]] || collector_alive=false
loadgen_figures load
# One log line per outage and one per recovery (the pool's, the LISTEN session's), not one per
# call: two outages of a few hundred failed calls each stay within a handful of lines.
error_lines=$(grep -cE '^[^ ]+ (warning|error) ' "$work/collector.log" || true)
grep -E '^[^ ]+ (warning|error) ' "$work/collector.log" | cut -c1-300 | sed 's/^/   collector: /' >&2 || true
figures=$(jq -n --arg mode "$mode" --argjson r "$(report_json)" \
  --argjson recover "$(printf '%s\n' "${recover[@]}" | jq -s -c .)" \
  --argjson restart "$(printf '%s\n' "${restart_ms[@]}" | jq -s -c .)" \
  --argjson alive "$collector_alive" --argjson error_lines "$error_lines" '{
    scenario: "pg_restart", mode: $mode, agents: '"$agents"', restarts: ["fast", "immediate"],
    collector_restarted: ($alive | not), pg_restart_ms: $restart, recover_ms: $recover,
    collector_warning_error_lines: $error_lines } + $r')
expect '.collector_restarted == false' "the collector exited"
expect '.recover_ms | all(. != null)' "ingest did not resume after a database restart"
expect '.collector_warning_error_lines <= 12' "the collector logged the outages per call, not once each"
expect_every_report "$reports"
fault_finish

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
# Each part of the collector that touches the database (the pool, the LISTEN sessions, the
# rollout scheduler, the approver-set and revocation pollers) logs an outage once, not once per
# call or per tick: at most two lines per restart each (a connection that got through while the
# server was still stopping makes a second, real, outage), however long the restart takes.
warnings=$(grep -E '^[^ ]+ (warning|error) ' "$work/collector.log" || true)
printf '%s\n' "$warnings" | grep -v '^$' | cut -c1-300 | sed 's/^/   collector: /' >&2 || true
# Lines by component: the text after "[collector] " up to the first colon.
by_component=$(printf '%s\n' "$warnings" | { grep -v '^$' || true; } |
  sed -E 's/^[^ ]+ [a-z]+ \[[a-z]+\] ([^:"]*).*/\1/' | jq -R -s -c '
    split("\n") | map(select(length > 0)) | group_by(.) | map({(.[0]): length}) | add // {}')
figures=$(jq -n --arg mode "$mode" --argjson r "$(report_json)" \
  --argjson recover "$(printf '%s\n' "${recover[@]}" | jq -s -c .)" \
  --argjson restart "$(printf '%s\n' "${restart_ms[@]}" | jq -s -c .)" \
  --argjson alive "$collector_alive" --argjson by_component "$by_component" '{
    scenario: "pg_restart", mode: $mode, agents: '"$agents"', restarts: ["fast", "immediate"],
    collector_restarted: ($alive | not), pg_restart_ms: $restart, recover_ms: $recover,
    collector_warning_error_lines: ([$by_component[]] | add // 0),
    collector_warning_error_lines_by_component: $by_component } + $r')
expect '.collector_restarted == false' "the collector exited"
expect '.recover_ms | all(. != null)' "ingest did not resume after a database restart"
expect '[.collector_warning_error_lines_by_component[]] | all(. <= 4)' \
  "a part of the collector logged the outages per call or per tick, not once each"
expect_every_report "$reports"
fault_finish

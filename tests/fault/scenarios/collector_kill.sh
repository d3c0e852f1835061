#!/usr/bin/env bash
# kill -9 the collector three times during a burst of reports from simulated agents, restarting
# it on the same port each time; then count the reports by id in PostgreSQL against the ids the
# agents saw acked. Every acked report stored (lost 0), none stored twice (duplicates 0), every
# report acked in the end; the time from each kill to the next stored report is the recovery.
#
#   collector_kill.sh [--short|--long]   short: 2,000 reports from 50 agents; long: 10,000 from 200
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
fault_init collector_kill "$@"
if [[ $mode == long ]]; then agents=200 reports=10000 rate=500; else agents=50 reports=2000 rate=200; fi

step "database and collector (durable PostgreSQL)"
fault_collector

step "burst: $reports reports from $agents agents at $rate/s"
run_loadgen load --collector "127.0.0.1:$port" --agents "$agents" --reports "$reports" \
  --rate "$rate" --max_seconds 240

recover=()
for k in 1 2 3; do
  wait_stored_at_least 120 $((reports * k / 4))
  step "kill -9 number $k at $(stored_reports) stored"
  before=$(stored_reports)
  t_kill=$(epoch_ms)
  stop_proc collector KILL
  start_fixed_collector collector "$port"
  wait_stored_at_least 60 $((before + 1))
  recover+=($(($(epoch_ms) - t_kill)))
  echo "   stored again $((recover[-1])) ms after the kill"
done

step "waiting for every report to be acked"
wait_loadgen load 240
loadgen_figures load
figures=$(jq -n --arg mode "$mode" --argjson r "$(report_json)" \
  --argjson recover "$(printf '%s\n' "${recover[@]}" | jq -s -c .)" '{
    scenario: "collector_kill", mode: $mode, agents: '"$agents"', kills: 3, recover_ms: $recover
  } + $r')
expect_every_report "$reports"
fault_finish

#!/usr/bin/env bash
# Many simulated agents hold Watch streams and report; the collector is restarted (SIGTERM, on
# the same port). Every agent reconnects by itself with jittered backoff within a bound, no
# report is lost or stored twice. Figures: the reconnect curve (streams connected per second
# after the restart; the 100 ms curve is in the loadgen's summary), the time until all are back,
# the collector's CPU seconds from its start until then, its shutdown time.
#
#   reconnect_storm.sh [--short|--long]   short: 2,000 agents; long: 10,000
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
fault_init reconnect_storm "$@"
if [[ $mode == long ]]; then agents=10000 bound=300 max_s=900; else agents=2000 bound=120 max_s=300; fi
# The storm is about reconnecting, not ingest: 4,000 changed reports whatever the number of
# agents (this machine stores about 200 changed reports a second; issue 18 measures ingest),
# spread so that they span the restart (10,000 agents take about 50 s to connect first).
reports=4000
if [[ $mode == long ]]; then rate=50; else rate=200; fi

step "database and collector (durable PostgreSQL)"
fault_collector

step "$agents agents with Watch streams, $reports reports at $rate/s"
run_loadgen load --collector "127.0.0.1:$port" --agents "$agents" --reports "$reports" \
  --rate "$rate" --watch --max_backoff_ms 5000 --max_seconds "$max_s"

# all_connected SECONDS: until every agent's stream is open; sets $waited_ms (null on timeout).
all_connected() {
  local t0 deadline
  t0=$(epoch_ms)
  deadline=$((t0 + $1 * 1000))
  until [[ $(loadgen_status load connected) == "$agents" ]]; do
    if (($(epoch_ms) >= deadline)); then waited_ms=null; return 1; fi
    sleep 0.1
  done
  waited_ms=$(($(epoch_ms) - t0))
}
all_connected "$bound" || fail "only $(loadgen_status load connected) of $agents streams opened within ${bound}s"
connect_ms=$waited_ms
echo "   all $agents connected in $connect_ms ms"
sleep 2  # some reports in flight while the collector goes

step "collector restart (SIGTERM, then the same port)"
pid=${e2e_pid[collector]}
t_stop=$(epoch_ms)
kill -TERM "$pid"
shutdown_forced=false
until exited collector; do
  # shutdown_timeout (20 s) drains a full work queue; the collector's own guard exits 5 s later.
  if [[ $shutdown_forced == false ]] && (($(epoch_ms) - t_stop > 26000)); then
    echo "   the collector did not exit within 26 s of SIGTERM: kill -9"
    shutdown_forced=true
    kill -KILL "$pid" 2>/dev/null || true
  fi
  sleep 0.1
done
wait "$pid" 2>/dev/null || true
unset "e2e_pid[collector]"
shutdown_ms=$(($(epoch_ms) - t_stop))
t_restart=$(epoch_ms)
start_fixed_collector collector "$port"
reconnected=true
all_connected "$bound" || reconnected=false
reconnect_ms=$waited_ms
cpu=$(collector_cpu_seconds collector)
echo "   reconnected: $reconnected, after $reconnect_ms ms; collector CPU ${cpu}s"

step "waiting for every report to be acked"
deadline=$(($(epoch_ms) + 120000))
until [[ $(loadgen_status load acked) == "$reports" ]] || (($(epoch_ms) > deadline)); do sleep 0.2; done
kill -TERM "${e2e_pid[load]}"  # the loadgen ends its streams, writes its figures and exits
wait_loadgen load 60
loadgen_figures load
summary=$work/load.summary.json
# Streams connected per second since the restart, from the loadgen's 100 ms curve.
curve=$(jq -c --argjson t "$((t_restart - $(jq .start_unix_ms "$summary")))" '
  [.curve[] | select(.[0] >= $t) | [((.[0] - $t) / 1000 | floor), .[1]]]
  | group_by(.[0]) | map([.[0][0], (map(.[1]) | max)])' "$summary")
echo "   reconnect curve (s, connected): $curve"

figures=$(jq -n --arg mode "$mode" --argjson r "$(report_json)" --argjson s "$load" \
  --argjson curve "$curve" --argjson reconnect "$reconnect_ms" --argjson connect "$connect_ms" \
  --argjson shutdown "$shutdown_ms" --argjson forced "$shutdown_forced" --argjson cpu "$cpu" \
  --argjson reconnected "$reconnected" --argjson bound "$bound" '{
    scenario: "reconnect_storm", mode: $mode, agents: $s.agents, bound_s: $bound,
    first_connect_all_ms: $connect, shutdown_ms: $shutdown, shutdown_forced: $forced,
    all_reconnected: $reconnected, reconnect_all_ms: $reconnect, collector_cpu_s: $cpu,
    reconnect_ms: $s.watch.reconnect_ms, stream_ends: $s.watch.stream_ends } + $r
    + {reconnect_curve: $curve}')
expect '.all_reconnected' "not every agent reconnected within ${bound}s"
expect '.shutdown_forced == false' "the collector did not exit within 20 s of SIGTERM"
expect_every_report "$reports"
fault_finish

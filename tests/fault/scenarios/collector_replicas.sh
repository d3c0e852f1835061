#!/usr/bin/env bash
# Two collectors on one PostgreSQL (stateless replicas). Simulated agents with Watch streams are
# spread over both (agent i starts on collector i % 2), and one real agent lists both, A first.
# Reports are stored through both, and a change approved through B reaches the real agent on A
# (PostgreSQL's NOTIFY carries the order across). Then collector A is stopped (SIGTERM): every
# agent it held reconnects to B within a bound, and a refresh asked through B's admin API reaches
# the real agent that had been on A. A second round restarts A and kills B (SIGKILL): every agent
# moves back to A. Then the reports are counted by id: every acked one stored exactly once.
#
#   collector_replicas.sh [--short|--long]   short: 200 agents, 3,000 reports; long: 1,000, 10,000
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
host=fs2022  # the real agent: the host name of the Windows capture it replays
fault_init collector_replicas "$@" "$host"
if [[ $mode == long ]]; then agents=1000 reports=10000 rate=150; else agents=200 reports=3000 rate=100; fi
bound=60  # seconds for every agent of a stopped collector to be connected to the other
all=$((agents + 1))

# metric NAME SERIES: the value of SERIES on collector NAME's GET /metrics (console port).
metric() {
  python3 - "${console_port[$1]}" "$2" <<'PY'
import ssl, sys, urllib.request
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
body = urllib.request.urlopen(f"https://127.0.0.1:{sys.argv[1]}/metrics", context=ctx, timeout=5).read()
for line in body.decode().splitlines():
    name, _, value = line.rpartition(" ")
    if name == sys.argv[2]:
        print(int(float(value)))
        sys.exit(0)
sys.exit(1)
PY
}
connected() { metric "$1" smbfleet_agents_connected 2>/dev/null || echo 0; }
stored_by() { metric "$1" 'smbfleet_reports_total{result="stored"}' 2>/dev/null || echo 0; }

declare -A grpc_port=() console_port=()
replica() {  # replica NAME: (re)starts collector NAME on its fixed ports
  start_fixed_collector "$1" "${grpc_port[$1]}" "console: {listen: '127.0.0.1:${console_port[$1]}'}"
  poll 30 "collector $1's /metrics" metric "$1" smbfleet_agents_connected
}

# all_on NAME SECONDS: until collector NAME holds every agent's stream (the simulated ones and
# the real one); sets $waited_ms, null on the timeout.
all_on() {
  local t0 deadline
  t0=$(epoch_ms)
  deadline=$((t0 + $2 * 1000))
  until (($(connected "$1") == all)); do
    if (($(epoch_ms) >= deadline)); then waited_ms=null; return 1; fi
    sleep 0.1
  done
  waited_ms=$(($(epoch_ms) - t0))
}

# stop_replica NAME SIGNAL: stops collector NAME, waiting for its exit; sets $shutdown_ms.
stop_replica() {
  local pid=${e2e_pid[$1]} t0
  t0=$(epoch_ms)
  kill "-$2" "$pid"
  until exited "$1"; do
    (($(epoch_ms) - t0 < 30000)) || { kill -KILL "$pid" 2>/dev/null || true; fail "collector $1 did not exit within 30 s of SIG$2"; }
    sleep 0.1
  done
  wait "$pid" 2>/dev/null || true
  unset "e2e_pid[$1]"
  shutdown_ms=$(($(epoch_ms) - t0))
}

sims_connected() { [[ $(loadgen_status load connected) == "$agents" ]]; }
on_b_too() { (($(streams_opened b) >= 1)); }
reported_since() { (($(host_reports) > $1)); }
host_reports() { psql "$dsn" -qAt -c "SELECT count(*) FROM reports r JOIN hosts h ON h.id = r.host_id WHERE h.name = '$host'"; }
streams_opened() { grep -c "watch stream of $host opened" "$work/$1.log" 2>/dev/null || true; }

step "database and two collectors, A and B, on it"
new_database
for name in a b; do
  grpc_port[$name]=$(free_port)
  console_port[$name]=$(free_port)
  replica "$name"
done
ctl_port=${grpc_port[b]}  # the admin API used is B's

step "the real agent, listing A then B"
agent_config "$host" "windows-capture:$e2e_root/tests/fixtures/windows/ws2022" a |
  sed "s/address: '127.0.0.1:${grpc_port[a]}'/address: ['127.0.0.1:${grpc_port[a]}', '127.0.0.1:${grpc_port[b]}']/" \
    >"$work/agent.yaml"
grep -q "127.0.0.1:${grpc_port[b]}" "$work/agent.yaml" || fail "the agent configuration lists no collector B"
start_agent agent "$work/agent.yaml"
poll 30 "a stored report of $host" ctl admin host show "$host"
poll 30 "the real agent's stream on A" grep -q "watch stream of $host opened" "$work/a.log"

step "$agents simulated agents over A and B, $reports reports at $rate/s"
run_loadgen load --collector "127.0.0.1:${grpc_port[a]},127.0.0.1:${grpc_port[b]}" \
  --agents "$agents" --reports "$reports" --rate "$rate" --watch --max_backoff_ms 2000 \
  --max_seconds 300
poll 120 "every simulated agent's stream" sims_connected
wait_stored_at_least 120 $((reports / 3))
on_a=$(connected a) on_b=$(connected b)
stored_a=$(stored_by a) stored_b=$(stored_by b)
echo "   streams: A $on_a, B $on_b; reports stored through A $stored_a, through B $stored_b"
((on_a + on_b == all)) || fail "$((on_a + on_b)) streams on A and B, expected $all"

step "a change approved through B reaches the real agent on A (enforcement off there: REFUSED)"
id=$(propose proposer --host "$host" --reason "replicas")
ctl approver-a changes approve "$id" --comment "first look" >/dev/null || fail "first approval of $id"
if [[ $(change_state "$id") == CHANGE_STATE_PROPOSED ]]; then
  ctl approver-b changes approve "$id" --comment "second look" >/dev/null || fail "second approval of $id"
fi
wait_host_state 30 "$id" "$host" REFUSED
(($(streams_opened b) == 0)) || fail "the real agent's stream was on B, not A, when the change reached it"

step "round 1: SIGTERM to A; its agents move to B"
t_stop=$(epoch_ms)
stop_replica a TERM
term_shutdown_ms=$shutdown_ms
moved=true
all_on b "$bound" || moved=false
term_move_ms=$([[ $waited_ms == null ]] && echo null || echo $(($(epoch_ms) - t_stop)))
echo "   A exited in $term_shutdown_ms ms; every agent on B ${term_move_ms} ms after SIGTERM"
poll 30 "the real agent's stream on B" on_b_too
before=$(host_reports)
ctl admin host refresh "$host" >/dev/null || fail "host refresh of $host through B"
poll 30 "a report of $host asked through B" reported_since "$before"
refreshed=true

step "round 2: A again, SIGKILL to B; every agent moves to A"
replica a
wait_stored_at_least 120 $((reports * 2 / 3))
t_stop=$(epoch_ms)
stop_replica b KILL
moved_back=true
all_on a "$bound" || moved_back=false
kill_move_ms=$([[ $waited_ms == null ]] && echo null || echo $(($(epoch_ms) - t_stop)))
echo "   every agent on A ${kill_move_ms} ms after SIGKILL"
replica b

step "waiting for every report to be acked"
deadline=$(($(epoch_ms) + 120000))
until [[ $(loadgen_status load acked) == "$reports" ]] || (($(epoch_ms) > deadline)); do sleep 0.2; done
kill -TERM "${e2e_pid[load]}"  # the loadgen ends its streams, writes its figures and exits
wait_loadgen load 60
loadgen_figures load
figures=$(jq -n --arg mode "$mode" --argjson r "$(report_json)" --argjson bound "$bound" \
  --argjson on_a "$on_a" --argjson on_b "$on_b" --argjson stored_a "$stored_a" \
  --argjson stored_b "$stored_b" --argjson term_shutdown "$term_shutdown_ms" \
  --argjson term_move "$term_move_ms" --argjson moved "$moved" --argjson kill_move "$kill_move_ms" \
  --argjson moved_back "$moved_back" --argjson refreshed "$refreshed" '{
    scenario: "collector_replicas", mode: $mode, agents: '"$all"', bound_s: $bound,
    streams_before: {a: $on_a, b: $on_b}, stored_before: {a: $stored_a, b: $stored_b},
    sigterm: {shutdown_ms: $term_shutdown, all_moved: $moved, move_all_ms: $term_move},
    sigkill: {all_moved: $moved_back, move_all_ms: $kill_move},
    change_through_b_reached_agent_on_a: true, refresh_through_b_reached_agent: $refreshed } + $r')
expect '.stored_before.a > 0 and .stored_before.b > 0' "reports were not stored through both collectors"
expect '.streams_before.a > 0 and .streams_before.b > 0' "agents were not spread over both collectors"
expect '.sigterm.all_moved' "not every agent moved to B within ${bound}s of A's SIGTERM"
expect '.sigkill.all_moved' "not every agent moved to A within ${bound}s of B's SIGKILL"
expect_every_report "$reports"
fault_finish

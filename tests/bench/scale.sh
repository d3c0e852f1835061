#!/usr/bin/env bash
# The fleet at scale (docs/scaling.md): a private PostgreSQL, the development CA, and for each
# step a fresh database and collector that N simulated agents (smbfleet-loadgen, each with its
# own certificate, mutual-TLS connection, Watch stream and 127.x source address) connect to.
# Per step: the time until all N streams are open, the collector's memory before and after
# (VmRSS, VmHWM) and so KB per idle agent, then one report per agent and reports acked per
# second, and the reports table counted by report id; then a change to every host (one audit
# setting), approved by two approvers in one wave, and the time from the approval to acks from
# 99% of its hosts (the push). Prints ONE JSON document on stdout: the
# steps (the curve as the fleet grows) and each figure as measured / goal, with what limits it.
#
#   tests/bench/scale.sh BUILD_DIR [--short] [--agents-steps "1000 10000 100000"]
#                                  [--connect-rate 500] [--collector-limits "KEY: VALUE, ..."]
#                                  [--push-hosts N]
#
# --short: one step of 1,000 agents, and the run fails unless every agent connected, every
# report was acked and stored exactly once and every host of the pushed change (100 of them)
# acked it (no timing checks): CTest e2e_scale_short.
# --push-hosts N: push the change to the first N hosts by name only (default: every host).
# --collector-limits adds keys to the collectors' `limits:` (e.g. "tls_frame_bytes: 4KiB"), to
# measure a setting against the defaults. Steps that need more open files than the hard limit allows are skipped, naming the limit.
set -euo pipefail
scale_root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 1 && $1 != --* ]] || {
  echo "usage: scale.sh BUILD_DIR [--short] [--agents-steps \"1000 10000\"] [--connect-rate N]" >&2
  exit 2
}
build=$(cd "$1" && pwd)
shift
short=false steps="1000 10000 100000" connect_rate=500 collector_limits= push_hosts=
while [[ $# -gt 0 ]]; do
  case $1 in
    --short) short=true steps=1000 push_hosts=${push_hosts:-100}; shift ;;
    --push-hosts) push_hosts=$2; shift 2 ;;
    --agents-steps) steps=$2; shift 2 ;;
    --connect-rate) connect_rate=$2; shift 2 ;;
    --collector-limits) collector_limits=$2; shift 2 ;;
    *) echo "scale.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for n in $steps; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "scale.sh: --agents-steps: '$n' is not a count" >&2; exit 2; }
done
[[ -z $push_hosts || $push_hosts =~ ^[1-9][0-9]*$ ]] || { echo "scale.sh: --push-hosts: '$push_hosts' is not a count" >&2; exit 2; }
[[ $connect_rate =~ ^[0-9]+$ ]] || { echo "scale.sh: --connect-rate: '$connect_rate' is not a number" >&2; exit 2; }

export SMBFLEET_BUILD_DIR=$build
export collector_limits  # read by start_collector (tests/e2e/lib.sh)
# shellcheck source=../fault/lib.sh
source "$scale_root/tests/fault/lib.sh"
loadgen_bin=$build/loadgen/smbfleet-loadgen  # read by run_loadgen (tests/fault/lib.sh)
for bin in collector/smbfleet-collector agent/smbfleet-agent cli/smbfleetctl loadgen/smbfleet-loadgen; do
  [[ -x "$build/$bin" ]] || { echo "FAIL: $build/$bin is not built" >&2; exit 1; }
done

# Both the collector and the loadgen hold one socket per agent: open files up to the hard limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
files_limit=$(ulimit -n)
kGoalKbPerAgent=50 kGoalAgents=100000
# Sockets beyond the agents': PostgreSQL connections, logs, gRPC's own descriptors.
kSpareFiles=1000

# A private, fast PostgreSQL (this measures the collector, not fsync).
start_private_pg scale
e2e_init "$build/collector/smbfleet-collector" "$build/agent/smbfleet-agent" "$build/cli/smbfleetctl" >&2
trap fault_cleanup EXIT

note() { echo "-- $*" >&2; }
rss_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/${e2e_pid[$1]}/status"; }

# until_status NAME FIELD WANT SECONDS: waits until loadgen NAME's progress FIELD reaches WANT;
# sets $waited_ms, or returns 1 (waited_ms=null) after SECONDS.
until_status() {
  local t0
  t0=$(epoch_ms)
  local deadline=$((t0 + $4 * 1000))
  until (($(loadgen_status "$1" "$2") >= $3)); do
    if (($(epoch_ms) >= deadline)); then waited_ms=null; return 1; fi
    exited "$1" && { waited_ms=null; return 1; }
    sleep 0.2
  done
  waited_ms=$(($(epoch_ms) - t0))
}

# push N LOADGEN COLLECTOR: proposes a change to every host, approves it (two approvers, one
# wave) and waits for the loadgen's agents to ack it. Sets $push (JSON): the change, its hosts,
# the approval's time (Unix ms, taken before the approving command), whether acks from 99% of
# the hosts came within the bound, and the parts before the acks: each smbfleetctl call's time
# and the dispatch (the collector's first and last "sent ... change orders" log line). The
# latency itself, and when the orders arrived, come from the loadgen's summary once it ended.
push() {
  local n=$1 load=$2 collector=$3 id out hosts t0 t1 bound want acked_all=true
  local propose_ms approve_a_ms approve_b_ms=null
  # A proposal or approval of many hosts may take longer than smbfleetctl's default deadline
  # (30 s; docs/scaling.md, the push).
  local deadline=(--call-timeout 10m)
  # Every host, one harmless setting the simulated postures leave unset (an audit switch), so
  # that the change goes to every agent. The hosts by name: a settings file (at most 1 MiB).
  {
    echo "hosts:"
    psql "$dsn" -qAt -c "SELECT name FROM hosts ORDER BY name LIMIT ${push_hosts:-ALL}" | sed 's/^/  - /'
    echo "settings:"
    echo "  - {setting: server.auditClientDoesNotSupportSigning, value: \"true\"}"
  } >"$work/push-$n.yaml"
  t1=$(epoch_ms)
  if ! out=$(ctl proposer "${deadline[@]}" changes propose --settings "$work/push-$n.yaml" --reason "scale: push to $n agents" 2>&1); then
    push=$(jq -nc --arg why "$(head -c 500 <<<"$out")" '{skipped: "the proposal was refused: \($why)"}')
    return 0
  fi
  propose_ms=$(($(epoch_ms) - t1))
  id=$(head -n1 <<<"$out")
  hosts=$(ctl viewer "${deadline[@]}" changes show "$id" --format=json | jq '.change.hosts | length')
  want=$(((hosts * 99 + 99) / 100))
  # Generous: the acks of one change are applied one step after another (docs/scaling.md).
  bound=$((60 + hosts / 5))
  t0=$(epoch_ms)
  out=$(ctl approver-a "${deadline[@]}" changes approve "$id" 2>&1) || { echo "$out" >&2; fail "approve $id"; }
  approve_a_ms=$(($(epoch_ms) - t0))
  if grep -q "approval 1 of 2" <<<"$out"; then
    t0=$(epoch_ms)
    out=$(ctl approver-b "${deadline[@]}" changes approve "$id" 2>&1) || { echo "$out" >&2; fail "second approval of $id"; }
    approve_b_ms=$(($(epoch_ms) - t0))
  fi
  # 99% first (seen on the status file, every 200 ms), then every host: with every ack in, the
  # loadgen's own times of the acks give the 99% point exactly.
  local t99=null
  until_status "$load" orders_acked "$want" "$bound" && t99=$(epoch_ms) || acked_all=false
  [[ $acked_all == false ]] || until_status "$load" orders_acked "$hosts" 60 || true
  note "   pushed $id to $hosts hosts: 99% acked: $acked_all ($(((${t99/null/$t0} - t0) / 1000)) s after the approval began)"
  # The dispatch: the first and the last log line of orders sent (the log's own clock, ms).
  local sent first=null last=null
  sent=$(grep -a "sent [0-9]* change orders" "$work/$collector.log" | awk '{print $1}' || true)
  if [[ -n $sent ]]; then
    first=$(epoch_ms "$(head -n1 <<<"$sent")")
    last=$(epoch_ms "$(tail -n1 <<<"$sent")")
  fi
  push=$(jq -nc --arg id "$id" --argjson hosts "$hosts" --argjson want "$want" \
    --argjson t0 "$t0" --argjson t99 "$t99" --argjson ok "$acked_all" --argjson bound "$bound" \
    --argjson propose_ms "$propose_ms" --argjson approve_a_ms "$approve_a_ms" \
    --argjson approve_b_ms "$approve_b_ms" --argjson first "$first" --argjson last "$last" \
    '{change: $id, hosts: $hosts, acks_wanted: $want, approved_unix_ms: $t0,
      acked_99_seen_unix_ms: $t99, acked_99_within_bound: $ok, bound_s: $bound,
      propose_ms: $propose_ms, approve_ms: [$approve_a_ms, $approve_b_ms],
      dispatch_first_unix_ms: $first, dispatch_last_unix_ms: $last}')
}

results=()
status=0
for n in $steps; do
  if ((n + kSpareFiles > files_limit)); then
    note "$n agents: skipped, open files limit $files_limit"
    results+=("$(jq -nc --argjson n "$n" --argjson l "$files_limit" '{agents: $n, skipped:
      "open files: the hard limit \($l) is below \($n) agents + 1000 (each process holds a socket per agent); raise it with ulimit -Hn or LimitNOFILE="}')")
    continue
  fi
  note "$n agents"
  new_database
  name=collector-$n
  # ctl talks to this step's collector, which registers the approvers' keys in its new database.
  unset ctl_port
  approvers_registered=
  start_collector "$name" >&2
  sleep 1  # startup allocations settle
  rss_before=$(rss_kb "$name" VmRSS)
  # From the loadgen's start: minting N certificates, then the ramp, then handshakes that the
  # collector takes at its own pace (about 150/s on 2 shared cores).
  connect_bound=$((60 + n / 50 + (connect_rate > 0 ? n / connect_rate : 0)))
  report_bound=$((60 + n / 50))
  # A 60 s report deadline: N reports at once queue at the collector, and a resend after a
  # timeout would count a report twice in the rate.
  run_loadgen "load-$n" --collector "127.0.0.1:${collector_port[$name]}" --agents "$n" \
    --reports "$n" --watch --hold_reports --connect_rate "$connect_rate" \
    --report_timeout_ms 60000 --max_backoff_ms 5000 --max_seconds $((connect_bound + report_bound + 120))
  connected=true
  until_status "load-$n" connected "$n" "$connect_bound" || connected=false
  connect_ms=$waited_ms
  sleep 2  # the last handshakes' buffers are released
  rss_idle=$(rss_kb "$name" VmRSS)
  hwm_idle=$(rss_kb "$name" VmHWM)
  # The simulator's side of the same connections: whether N agents and the collector fit one
  # machine together is the sum of both.
  loadgen_rss=$(rss_kb "load-$n" VmRSS)
  now_connected=$(loadgen_status "load-$n" connected)
  note "   connected $now_connected/$n in ${connect_ms} ms; collector RSS ${rss_before} -> ${rss_idle} KB; loadgen RSS ${loadgen_rss} KB"

  kill -USR1 "${e2e_pid[load-$n]}"
  all_acked=true
  until_status "load-$n" acked "$n" "$report_bound" || all_acked=false
  rss_after=$(rss_kb "$name" VmRSS)
  hwm_after=$(rss_kb "$name" VmHWM)
  loadgen_rss_after=$(rss_kb "load-$n" VmRSS || true)  # the simulator's, every report acked
  push='{"skipped": "not every report was acked"}'
  [[ $all_acked != true ]] || push "$n" "load-$n" "$name"
  kill -TERM "${e2e_pid[load-$n]}"
  wait_loadgen "load-$n" 120
  loadgen_figures "load-$n" >&2
  stop_proc "$name"
  results+=("$(jq -nc --argjson n "$n" --argjson s "$load" --argjson c "$counts" \
    --argjson connected_all "$connected" --argjson acked_all "$all_acked" \
    --argjson before "$rss_before" --argjson idle "$rss_idle" \
    --argjson hwm_idle "$hwm_idle" --argjson after "$rss_after" --argjson hwm_after "$hwm_after" \
    --argjson loadgen_rss "${loadgen_rss:-null}" --argjson loadgen_after "${loadgen_rss_after:-null}" \
    --argjson now "$now_connected" --argjson rc "$loadgen_rc" --argjson push "$push" '{
      agents: $n, connected: $now, all_connected: $connected_all,
      connect_s: (if $s.watch.all_connected_ms == null then null
                  else $s.watch.all_connected_ms / 1000 end),
      collector_rss_kb: {start: $before, idle: $idle, idle_hwm: $hwm_idle, after_reports: $after,
                         after_reports_hwm: $hwm_after},
      kb_per_agent: (if $now > 0 then (($idle - $before) / $now * 10 | round) / 10 else null end),
      loadgen_rss_kb: $loadgen_rss,
      loadgen_kb_per_agent: (if $now > 0 and $loadgen_rss != null
                             then ($loadgen_rss / $now * 10 | round) / 10 else null end),
      loadgen_rss_kb_after_reports: $loadgen_after,
      reports: $s.produced, acked: $s.acked, all_acked: $acked_all,
      reports_per_s: $s.report_phase.reports_per_s,
      stored: $c.stored, stored_distinct: $c.stored_distinct, duplicates: $c.duplicates,
      lost: $c.lost, errors: $s.errors, stream_ends: $s.watch.stream_ends,
      first_connect_ms: $s.watch.first_connect_ms, loadgen_exit: $rc,
      push: (if $push.skipped != null then $push else $push + {
        orders_acked: $s.orders.acked, orders_failed: $s.orders.failed,
        ack_errors: $s.orders.ack_errors,
        latency_99_s: (if $s.orders.acked >= $push.hosts and $s.orders.acked_at_ms.p99 != null
          then ((($s.start_unix_ms + $s.orders.acked_at_ms.p99 - $push.approved_unix_ms) / 10
                 | round) / 100)
          elif $push.acked_99_seen_unix_ms != null
          then ((($push.acked_99_seen_unix_ms - $push.approved_unix_ms) / 100 | round) / 10)
          else null end),
        # Where the time went, in s from the start of the (last) approving command: its call,
        # the dispatch (first and last order sent), the arrival of the orders at the agents.
        breakdown: (def s(ms): if ms == null then null
                               else (((ms - $push.approved_unix_ms) / 10 | round) / 100) end; {
          approve_call_s: (($push.approve_ms | map(select(. != null)) | last) / 1000),
          dispatch_first_s: s($push.dispatch_first_unix_ms),
          dispatch_last_s: s($push.dispatch_last_unix_ms),
          received_first_s: s(if $s.orders.received_at_ms.min == null then null
                              else $s.start_unix_ms + $s.orders.received_at_ms.min end),
          received_99_s: s(if $s.orders.received_at_ms.p99 == null then null
                           else $s.start_unix_ms + $s.orders.received_at_ms.p99 end),
          ack_ms_p50: $s.orders.ack_ms.p50, ack_ms_p99: $s.orders.ack_ms.p99}),
        latency_all_s: (if $s.orders.acked >= $push.hosts and $s.orders.acked_at_ms.max != null
          then ((($s.start_unix_ms + $s.orders.acked_at_ms.max - $push.approved_unix_ms) / 10
                 | round) / 100) else null end)} end)}')")
done

steps_json=$(printf '%s\n' "${results[@]}" | jq -sc .)
figures=$(jq -nc --argjson steps "$steps_json" --argjson goal_kb "$kGoalKbPerAgent" \
  --argjson goal_n "$kGoalAgents" --argjson files "$files_limit" --argjson short "$short" \
  --arg limits "$collector_limits" '
  ([$steps[] | select(.skipped == null)]) as $run
  | ([$run[] | select(.all_connected)] | max_by(.agents)) as $top
  | ([$run[] | select(.all_connected)] | map(.agents) | max) as $held
  | {short: $short, open_files_limit: $files, collector_limits: $limits, steps: $steps, figures: {
      kb_per_agent: {measured: $top.kb_per_agent, goal: $goal_kb, at_agents: $top.agents,
        met: ($top.kb_per_agent != null and $top.kb_per_agent <= $goal_kb),
        limit: (if $top.kb_per_agent != null and $top.kb_per_agent <= $goal_kb then null else
          "the collector keeps the per-connection state of gRPC: TLS session and record buffers, HTTP/2 transport and the Watch call (docs/scaling.md)" end)},
      agents_held: {measured: $held, goal: $goal_n, met: (($held // 0) >= $goal_n),
        limit: (if ($held // 0) >= $goal_n then null else
          (if ($held // 0) < ($run | map(.agents) | max // 0) then
             "not every agent connected within the bound: TLS handshakes at the collector (connect_s)"
           else ([$steps[] | select(.skipped != null) | .skipped][0]
                 // "steps up to \($held) agents only (--agents-steps)") end) end)},
      reports_per_s: ($run | map({agents, reports_per_s})),
      push_latency: ($run | map({agents, hosts: .push.hosts, latency_99_s: .push.latency_99_s,
        goal_s: (if .agents >= 100000 then 10 elif .agents >= 10000 then 1 else null end),
        met: (if .push.latency_99_s == null then false
              elif .agents >= 100000 then .push.latency_99_s <= 10
              elif .agents >= 10000 then .push.latency_99_s <= 1 else null end),
        limit: (if .push.skipped != null then .push.skipped
                elif .push.latency_99_s == null then "fewer than every host acked the change"
                elif .agents >= 10000 and .push.latency_99_s > (if .agents >= 100000 then 10 else 1 end) then "the approving call (the change fetched and signed, every host read and its order written) and the acks, applied in steps on the change one after another (push.breakdown; docs/scaling.md, the push)"
                else null end)}))}}')

if [[ $short == true ]]; then
  # The short form's checks: everything connected, every report acked and stored exactly once.
  fault_status=0
  expect '[.steps[] | select(.skipped == null)] | length > 0' "no step ran"
  expect 'all(.steps[] | select(.skipped == null); .all_connected and .connected == .agents)' \
    "not every agent connected"
  expect 'all(.steps[] | select(.skipped == null); .all_acked and .acked == .agents and .reports == .agents)' \
    "not every report was acked"
  expect 'all(.steps[] | select(.skipped == null); .stored == .agents and .stored_distinct == .agents and .duplicates == 0 and .lost == 0)' \
    "reports not stored exactly once"
  expect 'all(.steps[] | select(.skipped == null); .push.hosts > 0 and .push.acked_99_within_bound and .push.orders_acked >= .push.hosts and .push.orders_failed == 0)' \
    "the change was not acked by every host it was pushed to"
  status=$fault_status
fi
((status == 0)) || e2e_logs
jq . <<<"$figures"
exit "$status"

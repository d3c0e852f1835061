#!/usr/bin/env bash
# kill -9 a real agent many times at random points while it collects into its spool and delivers
# it: half the runs with the collector reachable (reports sent, acked, removed), half with it
# unreachable (reports pile up). Two spooled files are then damaged (a flipped bit, a torn tail)
# as a disk might. A last run with the collector reachable must deliver everything: each report
# the agent said it spooled is stored exactly once or set aside as one of the damaged files, no
# damaged file crashes the agent, and the agent tells the collector how many it set aside.
#
#   agent_spool_kill.sh [--short|--long]   short: 30 kills; long: 300
# Needs SMBFLEET_BUILD_DIR; starts its own durable PostgreSQL.
# shellcheck source-path=SCRIPTDIR source=agent_common.bash
source "$(dirname "$0")/agent_common.bash"
host=fs2022  # the host name of the capture replayed
fault_init agent_spool_kill "$@" "$host"
if [[ $mode == long ]]; then kills=300; else kills=30; fi

spool=$work/agent-$host/spool
log=$work/agent.log

step "database, collector, agent configurations (collector reachable and not)"
new_database
start_collector collector
agent_config "$host" "windows-capture:$e2e_root/tests/fixtures/windows/ws2022" collector |
  sed 's/benchmark_interval: 24h/benchmark_interval: 0s/' >"$work/agent-up.yaml"
dead=$(free_port)
sed "s/127.0.0.1:${collector_port[collector]}/127.0.0.1:$dead/" "$work/agent-up.yaml" >"$work/agent-down.yaml"

spooled_lines() { grep -c ' spooled$' "$log" 2>/dev/null || true; }
spooled_since() { (($(spooled_lines) > $1)); }
spool_empty() { [[ -z "$(find "$spool" -maxdepth 1 -name '*.report' 2>/dev/null)" ]]; }

step "$kills kills at random points (0-1500 ms after start)"
windows=(40 80 160 400 1500)  # ms: a kill falls at random within one of these after the start
up_runs=0
for ((i = 0; i < kills; i++)); do
  if ((RANDOM % 2)); then config=up; up_runs=$((up_runs + 1)); else config=down; fi
  # The agent starts, collects, spools and delivers within tens of milliseconds: most kills land
  # in that stretch, the rest later (with the Watch stream open, between cycles).
  window=${windows[RANDOM % ${#windows[@]}]}
  delay=$((RANDOM % window))
  start_agent agent "$work/agent-$config.yaml"
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  exited agent && fail "the agent exited by itself in run $i"
  stop_proc agent KILL
done

step "three more reports spooled with the collector unreachable, two of them then damaged"
for ((i = 0; i < 3; i++)); do
  before=$(spooled_lines)
  start_agent agent "$work/agent-down.yaml"
  poll 30 "a report spooled" spooled_since "$before"
  stop_proc agent KILL
done
kills=$((kills + 3))
mapfile -t files < <(find "$spool" -maxdepth 1 -name '*.report' | sort | tail -2)
((${#files[@]} == 2)) || fail "expected at least two spooled reports, found ${#files[@]}"
damaged=()
for f in "${files[@]}"; do
  id=${f##*/}
  id=${id#*-}
  damaged+=("${id%.report}")
done
# A flipped bit in the last byte; a file cut short.
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[-1] ^= 1; open(sys.argv[1], "wb").write(b)' "${files[0]}"
truncate -s -7 "${files[1]}"

step "the agent with the collector reachable delivers what is left"
start_agent agent "$work/agent-up.yaml"
poll 60 "an empty spool" spool_empty
# The next report tells the collector about the damaged files.
poll 30 "a report requested" ctl admin host refresh "$host"
poll 30 "a stored report with the spool's CORRUPT count" spool_told CORRUPT
exited agent && fail "the agent exited"
stop_proc agent TERM

step "counting"
spooled_ids "$log" >"$work/written"
psql "$dsn" -qAt -c "SELECT report_id FROM reports" | sort >"$work/delivered"
find "$spool" -maxdepth 1 -name '*.report' -printf '%f\n' | sed 's/^[0-9]*-//; s/\.report$//' | sort >"$work/still"
find "$spool/rejected" -maxdepth 1 -name '*.corrupt' -printf '%f\n' 2>/dev/null | sed 's/\.corrupt$//' | sort >"$work/corrupt"
printf '%s\n' "${damaged[@]}" | sort >"$work/damaged"
cmp -s "$work/corrupt" "$work/damaged" || fail "set aside as corrupt: $(tr '\n' ' ' <"$work/corrupt"), damaged: ${damaged[*]}"
sort -u "$work/delivered" "$work/still" "$work/corrupt" >"$work/accounted"
lost=$(comm -23 "$work/written" "$work/accounted" | wc -l)
duplicated=$(duplicated_reports)
corrupt_detected=$(grep -c 'spool file \(torn\|corrupt\)' "$log" || true)
resent=$(grep -c 'delivered as .*: DUPLICATE' "$log" || true)
leftovers=$(grep -c 'left by an interrupted write' "$log" || true)
unlogged=$(comm -13 "$work/written" "$work/delivered" | wc -l)
crashed=$(grep -c 'terminate called\|Segmentation\|Aborted' "$log" || true)
((lost == 0)) || fail "$lost spooled reports neither stored nor still spooled: $(comm -23 "$work/written" "$work/accounted" | tr '\n' ' ')"
((duplicated == 0)) || fail "$duplicated reports stored twice"
((corrupt_detected == 2)) || fail "expected 2 damaged files detected, the log says $corrupt_detected"
((crashed == 0)) || fail "the agent crashed"
emit_json=$(jq -nc --arg mode "$mode" --argjson kills "$kills" --argjson up "$up_runs" \
  --argjson written "$(wc -l <"$work/written")" --argjson delivered "$(wc -l <"$work/delivered")" \
  --argjson still "$(wc -l <"$work/still")" --argjson corrupt "$corrupt_detected" \
  --argjson lost "$lost" --argjson dup "$duplicated" --argjson resent "$resent" \
  --argjson leftovers "$leftovers" --argjson unlogged "$unlogged" \
  '{scenario: "agent_spool_kill", mode: $mode, kills: $kills, runs_collector_reachable: $up,
    reports_written: $written, delivered: $delivered, still_spooled: $still,
    corrupt_detected: $corrupt, lost: $lost, duplicated: $dup,
    resent_answered_duplicate: $resent, temp_leftovers_removed: $leftovers,
    delivered_not_logged_as_spooled: $unlogged}')
echo "$emit_json"

#!/usr/bin/env bash
# The agent's spool on a small tmpfs the scenario mounts, the collector down. The agent spools a
# report every cycle (interval 10s); then the file system is filled to the last block. The agent
# keeps running: each new report takes the place of the oldest spooled one, the full disk is
# logged once (not every cycle). The space is freed: it logs once that writes work again. The
# collector comes back on the same port: everything spooled is delivered, and the reports tell
# the collector how many were dropped (probe error spool/DROPPED). No spooled report is lost
# other than those the log names as dropped.
#
#   agent_disk_full.sh [--short|--long]   short: 2 cycles on a full disk; long: 6
# Needs SMBFLEET_BUILD_DIR and root (mount); starts its own durable PostgreSQL. Without the right
# to mount it prints a "skipped" figure and exits 0.
# shellcheck source-path=SCRIPTDIR source=agent_common.bash
source "$(dirname "$0")/agent_common.bash"

probe=$(mktemp -d /tmp/smbfleet-fault-mnt.XXXXXX)
if ! mount -t tmpfs -o size=64k tmpfs "$probe" 2>/dev/null; then
  rmdir "$probe"
  echo '{"scenario":"agent_disk_full","skipped":"cannot mount a tmpfs (needs root)"}'
  exit 0
fi
umount "$probe"
rmdir "$probe"

host=fs2022  # the host name of the capture replayed
fault_init agent_disk_full "$@" "$host"
if [[ $mode == long ]]; then full_cycles=6; else full_cycles=2; fi
disk=$work/disk
# The agent first (it has files open on the tmpfs), then the mount.
before_cleanup() {
  [[ -z "${e2e_pid[agent]:-}" ]] || stop_proc agent KILL
  if mountpoint -q "$disk"; then umount "$disk"; fi
}

log=$work/agent.log
spooled_lines() { grep -c ' spooled$' "$log" 2>/dev/null || true; }
spooled_at_least() { (($(spooled_lines) >= $1)); }
logged() { grep -q "$1" "$log"; }
spool_empty() { [[ -z "$(find "$disk/spool" -maxdepth 1 -name '*.report' 2>/dev/null)" ]]; }

step "database; a collector started once for its port, then stopped"
new_database
start_collector collector
port=${collector_port[collector]}
stop_proc collector TERM

step "a 1 MiB tmpfs for the spool; the agent reports every 10 s"
mkdir -p "$disk"
mount -t tmpfs -o size=1m tmpfs "$disk"
agent_config "$host" "windows-capture:$e2e_root/tests/fixtures/windows/ws2022" collector |
  sed -e 's/interval: 1h/interval: 10s/; s/benchmark_interval: 24h/benchmark_interval: 0s/' \
    -e "s|spool: {dir: agent-$host/spool}|spool: {dir: disk/spool}|" >"$work/agent.yaml"
grep -q 'spool: {dir: disk/spool}' "$work/agent.yaml" || fail "agent config: spool not on the tmpfs"
start_agent agent "$work/agent.yaml"
poll 40 "two spooled reports" spooled_at_least 2

step "the disk filled; $full_cycles cycles on a full disk"
dd if=/dev/zero of="$disk/filler" bs=4k 2>/dev/null || true
[[ $(df --output=avail -B1 "$disk" | tail -1) -lt 4096 ]] || fail "the tmpfs is not full"
before=$(spooled_lines)
poll $((15 * full_cycles + 10)) "$full_cycles reports spooled on the full disk" spooled_at_least $((before + full_cycles))
exited agent && fail "the agent exited on a full disk"
logged 'cannot write a report' || fail "the full disk was not logged"

step "space freed: writes work again"
rm -f "$disk/filler"
poll 30 "writes working again" logged 'writes work again;'

step "the collector back on port $port: everything spooled is delivered"
sed -i "s/^listen: .*/listen: 127.0.0.1:$port/" "$work/collector.yaml"
rm -f "$work/collector.port"
spawn collector "$collector_bin" --config "$work/collector.yaml" --port_file "$work/collector.port"
wait_for_file "$work/collector.port" 30 || fail "the collector did not start again on port $port"
poll 60 "an empty spool" spool_empty
poll 30 "a stored report with the spool's DROPPED count" spool_told DROPPED
exited agent && fail "the agent exited"
stop_proc agent TERM

step "counting"
spooled_ids "$log" >"$work/written"
grep -o 'dropping the oldest report [0-9a-f-]\{36\}' "$log" | awk '{print $5}' | sort -u >"$work/dropped"
psql "$dsn" -qAt -c "SELECT report_id FROM reports" | sort >"$work/delivered"
sort -u "$work/delivered" "$work/dropped" >"$work/accounted"
lost=$(comm -23 "$work/written" "$work/accounted" | wc -l)
dropped_delivered=$(comm -12 "$work/dropped" "$work/delivered" | wc -l)
full_logged=$(grep -c 'cannot write a report' "$log" || true)
recovered_logged=$(grep -c 'writes work again;' "$log" || true)
dropped_for_room=$(grep -c 'no space left for a new report' "$log" || true)
duplicated=$(duplicated_reports)
told=$(psql "$dsn" -qAt -c "SELECT max((regexp_match(e->>'message', '^([0-9]+)'))[1]::int) FROM posture_documents,
  jsonb_array_elements(posture_json->'probeErrors') e WHERE e->>'probe' = 'spool' AND e->>'code' = 'DROPPED'")
((lost == 0)) || fail "$lost spooled reports neither delivered nor logged as dropped"
((duplicated == 0)) || fail "$duplicated reports stored twice"
((dropped_delivered == 0)) || fail "$dropped_delivered reports logged as dropped were delivered"
((full_logged == 1)) || fail "the full disk was logged $full_logged times, expected once"
((recovered_logged == 1)) || fail "the recovery was logged $recovered_logged times, expected once"
((dropped_for_room >= full_cycles)) || fail "$dropped_for_room reports gave way on the full disk, expected $full_cycles or more"
jq -nc --arg mode "$mode" --argjson full_cycles "$full_cycles" \
  --argjson written "$(wc -l <"$work/written")" --argjson delivered "$(wc -l <"$work/delivered")" \
  --argjson dropped "$(wc -l <"$work/dropped")" --argjson room "$dropped_for_room" \
  --argjson full "$full_logged" --argjson recovered "$recovered_logged" --argjson lost "$lost" \
  --argjson told "${told:-0}" --argjson dup "$duplicated" \
  '{scenario: "agent_disk_full", mode: $mode, cycles_on_full_disk: $full_cycles,
    reports_written: $written, delivered: $delivered, dropped: $dropped,
    dropped_to_make_room: $room, dropped_count_told: $told, full_disk_log_lines: $full,
    recovered_log_lines: $recovered, lost: $lost, duplicated: $dup}'

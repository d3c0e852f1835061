#!/usr/bin/env bash
# What a host costs PostgreSQL and the collector (docs/scaling.md "Sizing"): a private durable
# PostgreSQL, a collector, and N simulated agents (smbfleet-loadgen) that report in three
# phases: every host's first posture, then --changed new postures per host, then --unchanged
# resends of the last one. After each phase: every table's size (pg_total_relation_size), the
# WAL written (pg_stat_wal) and the CPU seconds of the collector and of PostgreSQL's server
# processes. Prints ONE JSON document: per phase the totals and the cost per report, and the
# bytes per host for the current state. A partitioned table counts as one (its partitions summed).
#
# And the history a host adds per day (history_per_host_day): the growth of the history tables
# (postures, reports, report_ids, host_events, compliance_transitions, host_benchmarks) per
# changed report, times 24 (an hourly report, each a new posture: the sessions change every
# time). --settings_every N makes the server settings, and so the policy results, change only
# every N new postures (24: once a day) instead of every time. --session_reports N makes each
# session last N new postures (1/N of them new each time, the others' open files and age
# moving on) instead of every session new every time.
#
#   tests/bench/storage.sh BUILD_DIR [--hosts 500] [--changed 4] [--unchanged 4]
#                          [--settings_every 1] [--session_reports 1]
set -euo pipefail
storage_root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 1 && $1 != --* ]] || { echo "usage: storage.sh BUILD_DIR [--hosts N] [--changed N] [--unchanged N]" >&2; exit 2; }
build=$(cd "$1" && pwd)
shift
hosts=500 changed=4 unchanged=4 settings_every=1 session_reports=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --settings_every) settings_every=$2; shift 2 ;;
    --session_reports) session_reports=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --changed) changed=$2; shift 2 ;;
    --unchanged) unchanged=$2; shift 2 ;;
    *) echo "storage.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for v in "$hosts" "$changed" "$unchanged" "$settings_every" "$session_reports"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "storage.sh: '$v' is not a count" >&2; exit 2; }
done
((hosts > 0)) || { echo "storage.sh: --hosts must be at least 1" >&2; exit 2; }

export SMBFLEET_BUILD_DIR=$build
# shellcheck source=../fault/lib.sh
source "$storage_root/tests/fault/lib.sh"
# fault_init starts a durable PostgreSQL (WAL and fsync as in production) and the certificates.
fault_init storage >&2
new_database
start_collector main >&2
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

note() { echo "-- $*" >&2; }
postmaster_pid=$(head -1 "$pg_dir/data/postmaster.pid")
# pg_cpu_seconds: user+system CPU of the postmaster's children alive now (the collector's pooled
# connections live for the whole run, so their CPU is kept).
pg_cpu_seconds() {
  local hz sum=0 pid
  hz=$(getconf CLK_TCK)
  for pid in $(pgrep -P "$postmaster_pid"); do
    sum=$((sum + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  awk -v s="$sum" -v hz="$hz" 'BEGIN {printf "%.2f", s / hz}'
}
# measure: JSON of the database's tables (bytes), WAL bytes so far and both CPU figures.
measure() {
  psql "$dsn" -qAt -c "CHECKPOINT" >/dev/null 2>&1 || true
  local tables wal
  tables=$(psql "$dsn" -qAt -c "SELECT coalesce(json_object_agg(name, bytes), '{}') FROM (
    SELECT COALESCE(pg_partition_root(c.oid), c.oid)::regclass::text AS name,
           sum(pg_total_relation_size(c.oid))::bigint AS bytes
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'r' AND n.nspname = 'public' GROUP BY 1) t")
  wal=$(psql "$dsn" -qAt -c "SELECT wal_bytes FROM pg_stat_wal")
  jq -cn --argjson t "$tables" --argjson wal "$wal" --arg cc "$(collector_cpu_seconds main)" \
    --arg pc "$(pg_cpu_seconds)" \
    '{tables: $t, database_bytes: ([$t[]] | add), wal_bytes: $wal,
      collector_cpu_s: ($cc | tonumber), postgres_cpu_s: ($pc | tonumber)}'
}
# phase NAME REPORTS CHANGE_RATE: one loadgen run over the same hosts; prints the phase's JSON.
phase() {
  local name=$1 reports=$2 rate=$3 before after
  before=$(measure)
  run_loadgen "$name" --collector "127.0.0.1:${collector_port[main]}" --agents "$hosts" \
    --reports "$reports" --rate 0 --change_rate "$rate" --seed 7 --max_seconds 1800 \
    --report_timeout_ms 60000 --settings_every "$settings_every" \
    --session_reports "$session_reports" >/dev/null
  wait_loadgen "$name" 1900
  [[ $loadgen_rc == 0 ]] || fail "loadgen $name exited $loadgen_rc"
  after=$(measure)
  jq -cn --arg name "$name" --argjson n "$reports" --argjson b "$before" --argjson a "$after" \
    --slurpfile s "$work/$name.summary.json" '{
      phase: $name, reports: $n, outcomes: $s[0].outcomes, reports_per_s: $s[0].report_phase.reports_per_s,
      after: $a,
      per_report: {
        database_bytes: (($a.database_bytes - $b.database_bytes) / $n | floor),
        wal_bytes: (($a.wal_bytes - $b.wal_bytes) / $n | floor),
        collector_cpu_ms: (($a.collector_cpu_s - $b.collector_cpu_s) * 1000 / $n),
        postgres_cpu_ms: (($a.postgres_cpu_s - $b.postgres_cpu_s) * 1000 / $n)},
      grown_tables: ([$a.tables | to_entries[] | {key, value: (.value - ($b.tables[.key] // 0))}
                      | select(.value > 0)] | sort_by(-.value) | from_entries)}'
}

start=$(measure)
note "first posture of $hosts hosts"
first=$(phase first "$hosts" 1)
note "$changed new postures per host"
more='null'
((changed == 0)) || more=$(phase changed $((hosts * changed)) 1)
note "$unchanged unchanged reports per host"
same='null'
((unchanged == 0)) || same=$(phase unchanged $((hosts * unchanged)) 0)

jq -n --argjson hosts "$hosts" --argjson start "$start" --argjson first "$first" \
  --argjson changed "$more" --argjson unchanged "$same" \
  --argjson settings_every "$settings_every" --argjson session_reports "$session_reports" \
  --arg pg "$(psql "$dsn" -qAt -c 'SHOW server_version')" '{
    hosts: $hosts, postgres: $pg, settings_every: $settings_every,
    session_reports: $session_reports,
    bytes_per_host_first_posture: (($first.after.database_bytes - $start.database_bytes) / $hosts | floor),
    phases: [$first, $changed, $unchanged | select(. != null)],
    # A new loadgen process knows no earlier posture, so the unchanged phase begins with one new
    # posture per host (OUTCOME_STORED): its cost per unchanged report takes those out at the
    # changed phase'"'"'s cost per report.
    per_unchanged_report: (if $changed == null or $unchanged == null then null else
      ($unchanged.outcomes.OUTCOME_STORED // 0) as $s | ($unchanged.reports - $s) as $u |
      if $u <= 0 then null else
        ($unchanged.per_report | to_entries | map({key,
          value: ((.value * $unchanged.reports - $s * $changed.per_report[.key]) / $u)}) | from_entries)
      end end),
    history_per_host_day: (if $changed == null then null else
      ["postures", "reports", "report_ids", "host_events", "compliance_transitions",
       "host_benchmarks"] as $history |
      ($changed.grown_tables | with_entries(select(.key | IN($history[])))
       | map_values(. * 24 / $changed.reports | floor)) as $by |
      {reports_per_day: 24, model: "hourly reports, each a new posture",
       bytes: ([$by[]] | add // 0), by_table: $by} end)}'

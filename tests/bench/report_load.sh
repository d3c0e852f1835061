#!/usr/bin/env bash
# The collector's report path under load, measured from outside: a private PostgreSQL, one
# smbfleet-collector over mutual TLS, and report_load_bench as N agents with their own
# certificates. Runs with policy evaluation off, then on, each against a fresh database, and
# prints one JSON line per phase (first / unchanged / digest / changed; digest: the unchanged
# posture as digest-only reports). Bounded: --reports per phase.
#
# After the changed phase, one more line per policy (phase "copy_baseline"): the same rows the
# changed phase inserted, table by table (counted from pg_stat_user_tables around the phase),
# loaded with a raw COPY into bare copies of those tables with their indexes (no unique checks,
# no keys, no triggers) in the same PostgreSQL, and the changed phase's rate as a share of that
# COPY's (`changedVsCopy`; the issue's goal is at least 0.5 with policy on). The kept counts
# (`*_counts`, compliance_host_failing) are left out of the rows: they are the store's own
# bookkeeping, not a report's data.
#
#   tests/bench/report_load.sh [BUILD_DIR] [--hosts 200] [--reports 2000] [--concurrency 16]
#                              [--capture tests/fixtures/windows/ws2022] [--collector BIN]
#                              [--policy "off on"] [--short]
#
# --short (CI, label e2e): 20 hosts, 100 reports a phase, policy on, and checks, not times: every
# report answered, the changed phase all stored, and the COPY baseline made of that phase's rows.
#
# --collector runs another collector binary (e.g. an older build) against the same client.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/deploy/lib.sh"
build=$root/build
if [[ $# -gt 0 && $1 != --* ]]; then build=$1; shift; fi
build=$(cd "$build" && pwd)
hosts=200 reports=2000 concurrency=16 capture=$root/tests/fixtures/windows/ws2022
collector_bin= policies="off on" short=false
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --reports) reports=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --capture) capture=$2; shift 2 ;;
    --collector) collector_bin=$2; shift 2 ;;
    --policy) policies=$2; shift 2 ;;
    --short) short=true hosts=20 reports=100 policies=on; shift ;;
    *) echo "report_load.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
collector_bin=${collector_bin:-$build/collector/smbfleet-collector}
[[ -x $collector_bin ]] || { echo "report_load.sh: $collector_bin is not built" >&2; exit 2; }
collector_bin=$(realpath "$collector_bin")
for b in agent/smbfleet-agent tests/bench/report_load_bench; do
  [[ -x "$build/$b" ]] || { echo "report_load.sh: $build/$b is not built" >&2; exit 2; }
done

work=$(mktemp -d /tmp/smbfleet-load.XXXXXX)
chmod 755 "$work"
collector_pid=
cleanup() {
  [[ -n $collector_pid ]] && kill "$collector_pid" 2>/dev/null && wait "$collector_pid" 2>/dev/null
  bash "$root/deploy/pg.sh" stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

names=()
for ((i = 0; i < hosts; i++)); do names+=("$(printf 'load-%04d' "$i")"); done
bash "$root/deploy/ca.sh" dev "$work/pki" "${names[@]}" >/dev/null
"$build/agent/smbfleet-agent" collect --once --source="windows-capture:$capture" --format=json \
  > "$work/posture.json"
admin_dsn=$(bash "$root/deploy/pg.sh" start "$work/pg" "$(free_port)")

# Rows inserted so far per table, a partitioned table as one: {"table": rows}. Read once the
# collector has stopped, when its connections have flushed their statistics.
inserted_rows() {
  local i
  for ((i = 0; i < 100; i++)); do
    [[ $(psql "$1" -qAt -c "SELECT count(*) FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid()") == 0 ]] && break
    sleep 0.1
  done
  psql "$1" -qAt -c "
    SELECT COALESCE(json_object_agg(t, n), '{}') FROM (
      SELECT COALESCE(p.relname, c.relname) AS t, sum(s.n_tup_ins) AS n
      FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class p ON p.oid = i.inhparent
      WHERE s.schemaname = 'public' GROUP BY 1) x"
}

# The raw COPY of what the changed phase inserted: per table, as many rows as the phase inserted
# (the table's rows repeated when it now holds fewer: sessions and shares are replaced in place)
# written to a binary file, then loaded with COPY into a bare table LIKE it with its indexes made
# non-unique. Prints {"seconds": total, "tables": {t: {rows, ms}}}.
copy_baseline() {
  local dsn=$1 grown=$2 dir=$work/copy
  mkdir -p "$dir"
  local t n
  local tables=()
  while IFS=$'\t' read -r t n; do
    [[ -n $t ]] || continue
    tables+=("$t:$n")
    psql "$dsn" -qAt -v ON_ERROR_STOP=1 -v t="$t" <<'SQL' >/dev/null
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS copy_baseline;
SELECT format('CREATE TABLE copy_baseline.%I (LIKE public.%I INCLUDING DEFAULTS)', :'t', :'t') \gexec
SELECT regexp_replace(pg_get_indexdef(x.indexrelid),
                      '^CREATE (UNIQUE )?INDEX \S+ ON (ONLY )?\S+',
                      format('CREATE INDEX ON copy_baseline.%I', :'t'))
FROM pg_index x WHERE x.indrelid = format('public.%I', :'t')::regclass \gexec
SQL
    psql "$dsn" -qAt -v ON_ERROR_STOP=1 -c "COPY (SELECT r.* FROM public.\"$t\" r,
      generate_series(1, (SELECT ceil($n::numeric / GREATEST(count(*), 1))::int
                          FROM public.\"$t\")) LIMIT $n) TO STDOUT (FORMAT binary)" > "$dir/$t.bin"
  done < <(jq -r 'to_entries[] | select(.value > 0) | "\(.key)\t\(.value)"' <<<"$grown")
  local timings='{}' ms
  for entry in "${tables[@]}"; do
    t=${entry%%:*} n=${entry##*:}
    ms=$(psql "$dsn" -qAt -v ON_ERROR_STOP=1 -c '\timing on' \
      -c "COPY copy_baseline.\"$t\" FROM STDIN (FORMAT binary)" < "$dir/$t.bin" |
      sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1)
    timings=$(jq -c --arg t "$t" --argjson n "$n" --argjson ms "$ms" '. + {($t): {rows: $n, ms: $ms}}' <<<"$timings")
  done
  PGOPTIONS="-c client_min_messages=warning" psql "$dsn" -qAt -c 'DROP SCHEMA copy_baseline CASCADE' >/dev/null
  rm -rf "$dir"
  jq -c '(([.[].ms] | add) // 0) as $ms | {seconds: ($ms / 1000), tables: .}' <<<"$timings"
}

start_collector() {
  rm -f "$work/port"
  (cd "$work" && exec "$collector_bin" --config "collector-$1.yaml" \
    --port_file "$work/port" >>"$work/collector-$1.log" 2>&1) &
  collector_pid=$!
  wait_for_file "$work/port" 30 || { cat "$work/collector-$1.log" >&2; exit 1; }
}
stop_collector() {
  kill "$collector_pid"; wait "$collector_pid" 2>/dev/null || true; collector_pid=
}
run_bench() {
  "$build/tests/bench/report_load_bench" --target "127.0.0.1:$(cat "$work/port")" \
    --pki "$work/pki" --posture "$work/posture.json" --hosts "$hosts" --reports "$reports" \
    --concurrency "$concurrency" --label "policy-$policy" --phases "$1" && return
  echo "report_load.sh: calls failed; the collector's log ends:" >&2
  tail -20 "$work/collector-$policy.log" >&2
  return 1
}

for policy in $policies; do
  db="load_$policy"
  dsn="${admin_dsn%/*}/$db"
  psql "$admin_dsn" -qAt -c "CREATE DATABASE $db" >/dev/null
  {
    echo "listen: 127.0.0.1:0"
    echo "tls: {cert: pki/collector.pem, key: pki/collector.key, client_ca: pki/ca.pem}"
    echo "database: {dsn: '$dsn'}"
    echo "log_level: warn"
    cat "$work/pki/collector-identity.yaml"
    [[ $policy == on ]] && echo "policy: {file: '$root/policy/policies/baseline.yaml'}"
  } > "$work/collector-$policy.yaml"
  start_collector "$policy"
  run_bench first,unchanged,digest | tee -a "$work/lines.json"
  # The changed phase runs against a collector started again, so that the rows it inserts can
  # be told apart: a stopped collector's connections have flushed their statistics.
  stop_collector
  before=$(inserted_rows "$dsn")
  start_collector "$policy"
  changed=$(run_bench changed) || { echo "$changed"; exit 1; }
  echo "$changed" | tee -a "$work/lines.json"
  stop_collector
  after=$(inserted_rows "$dsn")
  grown=$(jq -cn --argjson b "$before" --argjson a "$after" '$a | with_entries(
    select(.key | test("_counts$|^compliance_host_failing$") | not)
    | .value -= ($b[.key] // 0) | select(.value > 0))')
  copy=$(copy_baseline "$dsn" "$grown")
  jq -cn --argjson c "$changed" --argjson copy "$copy" --arg name "policy-$policy" '
    ($c.reports / $copy.seconds) as $rate |
    {bench: "report_load", label: $name, phase: "copy_baseline",
     how: "the rows the changed phase inserted, per table, by a raw COPY (binary) into bare tables with the same indexes, non-unique, no keys or triggers",
     reports: $c.reports, seconds: $copy.seconds, reportsPerSecond: $rate,
     changedReportsPerSecond: $c.reportsPerSecond,
     changedVsCopy: ($c.reportsPerSecond / $rate), tables: $copy.tables}' | tee -a "$work/lines.json"
done

if [[ $short == true ]]; then
  check() {
    jq -se "$1" "$work/lines.json" >/dev/null || { echo "report_load.sh --short: $2" >&2; exit 1; }
  }
  check 'map(select(.phase != "copy_baseline")) | length == 4 and all(.errors == 0)' \
    "a phase is missing or had errors"
  # A resend after "stored but not evaluated" is answered OUTCOME_DUPLICATE.
  check "map(select(.phase == \"changed\"))[0].outcomes |
         (.OUTCOME_STORED // 0) + (.OUTCOME_DUPLICATE // 0) == $reports" \
    "the changed phase did not store every report"
  check "map(select(.phase == \"copy_baseline\"))[0] | .reports == $reports and
         .tables.postures.rows == $reports and .tables.reports.rows == $reports and
         .tables.compliance_results.rows > 0 and .reportsPerSecond > 0" \
    "the COPY baseline is not the changed phase's rows (a posture and a report row each, results)"
fi

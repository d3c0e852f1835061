# shellcheck shell=bash
# Shared helpers of the fault scenarios (sourced). On top of tests/e2e/lib.sh (certificates,
# collectors, agents, cleanup by PID), a scenario gets its own durable PostgreSQL, a collector
# on a fixed port that survives restarts, smbfleet-loadgen and the counting of reports by id.
#
#   source "$(dirname "$0")/../lib.sh"
#   fault_init NAME "$@"        # parses --short/--long into $mode; starts PostgreSQL
#
# SMBFLEET_BUILD_DIR names the build tree with the binaries.
set -euo pipefail
fault_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../e2e/lib.sh
source "$fault_root/tests/e2e/lib.sh"

fault_init() {  # fault_init SCENARIO [--short|--long] [HOST...]
  scenario=$1
  shift
  mode=short
  case "${1:-}" in
    --short) shift ;;
    --long) mode=long; shift ;;
    -*) echo "usage: $scenario.sh [--short|--long]" >&2; exit 2 ;;
  esac
  : "${SMBFLEET_BUILD_DIR:?the build tree with the binaries}"
  local b=$SMBFLEET_BUILD_DIR
  loadgen_bin=$b/loadgen/smbfleet-loadgen
  local bin
  for bin in "$b/collector/smbfleet-collector" "$b/agent/smbfleet-agent" "$b/cli/smbfleetctl" "$loadgen_bin"; do
    [[ -x "$bin" ]] || { echo "FAIL: $bin is not built" >&2; exit 1; }
  done
  # The scenario's own durable server: killed and restarted by some scenarios, so it proves that
  # what was committed stays committed.
  start_private_pg fault --durable
  e2e_init "$b/collector/smbfleet-collector" "$b/agent/smbfleet-agent" "$b/cli/smbfleetctl" "$@"
  trap fault_cleanup EXIT  # e2e_init set its own: ours calls it, then stops PostgreSQL
}

# start_private_pg NAME [pg.sh start OPTION...]: a PostgreSQL of its own in a new folder,
# $pg_dir (fault_cleanup stops it and removes the folder), on a free port (three tries);
# exports its DSN as SMBFLEET_TEST_PG_DSN.
start_private_pg() {
  local name=$1 attempt
  shift
  pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/smbfleet-$name-pg.XXXXXX")
  trap fault_cleanup EXIT
  for attempt in 1 2 3; do
    if SMBFLEET_TEST_PG_DSN=$(bash "$fault_root/deploy/pg.sh" start "$pg_dir" "$(free_port)" "$@" 2>"$pg_dir/start.err"); then
      export SMBFLEET_TEST_PG_DSN
      return 0
    fi
  done
  cat "$pg_dir/start.err" >&2
  echo "FAIL: PostgreSQL did not start" >&2
  exit 1
}

fault_cleanup() {
  local rc=$?
  set +e
  # A scenario's own teardown that must come first (e.g. stopping an agent before unmounting).
  if declare -F before_cleanup >/dev/null; then before_cleanup; fi
  # e2e_cleanup reads the exit status as $? (KEEP_E2E=onfail).
  if [[ -n "${work:-}" ]]; then (exit "$rc"); e2e_cleanup >&2; fi  # stdout ends with the figures
  bash "$fault_root/deploy/pg.sh" stop "$pg_dir" >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
  exit "$rc"
}

# start_fixed_collector NAME PORT [YAML LINE...]: start_collector on 127.0.0.1:PORT, so that a
# restart keeps the address the agents dial.
start_fixed_collector() {
  local name=$1 port=$2
  shift 2
  collector_listen=127.0.0.1:$port start_collector "$name" "$@"
}

# collector_cpu_seconds NAME: user+system CPU seconds the running process NAME has used.
collector_cpu_seconds() {
  local pid=${e2e_pid[$1]:?}
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat"
}

stored_reports() { psql "$dsn" -qAt -c "SELECT count(*) FROM reports"; }

# stored_within SECONDS N: waits until the database holds N reports; sets $waited_ms; returns 1
# (waited_ms=null) if it does not within SECONDS.
stored_within() {
  local seconds=$1 want=$2 t0
  t0=$(epoch_ms)
  local deadline=$((t0 + seconds * 1000))
  until (($(stored_reports 2>/dev/null || echo 0) >= want)); do
    if (($(epoch_ms) >= deadline)); then
      waited_ms=null
      return 1
    fi
    sleep 0.1
  done
  waited_ms=$(($(epoch_ms) - t0))
}

# wait_stored_at_least SECONDS N: as stored_within, failing the scenario on the timeout.
wait_stored_at_least() {
  stored_within "$@" ||
    fail "waited $1s for $2 stored reports; $(stored_reports 2>/dev/null || echo '?') stored"
}

# count_reports ACKED_IDS_FILE: JSON figures of the reports table against the ids the loadgen
# saw acked: stored (rows), distinct ids, duplicates (rows beyond one per id), lost (acked, not
# stored), unacked_stored (stored, never acked: the loadgen stopped before its retry).
count_reports() {
  local ids=$1
  psql "$dsn" -qAt -v ON_ERROR_STOP=1 >"$work/count.out" <<SQL
CREATE TEMP TABLE acked (report_id text);
\copy acked FROM '$ids'
SELECT json_build_object(
  'acked', (SELECT count(*) FROM acked),
  'acked_distinct', (SELECT count(DISTINCT report_id) FROM acked),
  'stored', (SELECT count(*) FROM reports),
  'stored_distinct', (SELECT count(DISTINCT report_id) FROM reports),
  'duplicates', (SELECT count(*) - count(DISTINCT report_id) FROM reports),
  'lost', (SELECT count(*) FROM (SELECT DISTINCT report_id FROM acked) a
           WHERE NOT EXISTS (SELECT 1 FROM reports r WHERE r.report_id::text = a.report_id)),
  'unacked_stored', (SELECT count(*) FROM reports r
           WHERE NOT EXISTS (SELECT 1 FROM acked a WHERE a.report_id = r.report_id::text)),
  'stale_evaluations', (SELECT count(*) FROM hosts h
           WHERE (SELECT max(received_at) FROM reports r WHERE r.host_id = h.id AND r.changed)
               > coalesce((SELECT max(evaluated_at) FROM compliance_results c
                           WHERE c.host_id = h.id), '-infinity')));
SQL
  tail -1 "$work/count.out"
}

# run_loadgen NAME ARGS...: smbfleet-loadgen in the background against the collector's port
# with the scenario's certificates; its summary goes to $work/NAME.summary.json, acked ids to
# $work/NAME.acked, its progress to $work/NAME.status.
run_loadgen() {
  local name=$1
  shift
  spawn "$name" "$loadgen_bin" --pki "$work/pki" --summary "$work/$name.summary.json" \
    --acked_ids "$work/$name.acked" --status_file "$work/$name.status" "$@"
}

# wait_loadgen NAME SECONDS: waits for loadgen NAME to exit by itself; sets $loadgen_rc.
wait_loadgen() {
  local name=$1 seconds=$2 pid
  local deadline=$(($(epoch_ms) + seconds * 1000))
  until exited "$name"; do
    (($(epoch_ms) < deadline)) || { stop_proc "$name" TERM; fail "loadgen $name still running after ${seconds}s"; }
    sleep 0.2
  done
  pid=${e2e_pid[$name]}
  loadgen_rc=0
  wait "$pid" || loadgen_rc=$?
  unset "e2e_pid[$name]"
}

# loadgen_status NAME FIELD: a field of the loadgen's progress file (0 before it exists).
loadgen_status() { jq -r ".$2" "$work/$1.status" 2>/dev/null || echo 0; }

# fault_collector: a database on the scenario's server and a collector on a fixed port, $port.
fault_collector() {
  new_database
  port=$(free_port)
  start_fixed_collector collector "$port"
}

# loadgen_figures NAME: once loadgen NAME ended, sets $load (its summary without the curve) and
# $counts (count_reports of the ids it saw acked), and prints both.
loadgen_figures() {
  local summary=$work/$1.summary.json
  [[ -s $summary ]] || fail "the loadgen $1 wrote no summary"
  load=$(jq -c 'del(.curve)' "$summary")
  counts=$(count_reports "$work/$1.acked")
  echo "   loadgen: $load"
  echo "   database: $counts"
}

# report_json: the figures every loadgen scenario prints, from $load and $counts.
report_json() {
  jq -nc --argjson s "$load" --argjson c "$counts" '{
    sent: $s.produced, acked: $s.acked, stored: $c.stored, duplicates: $c.duplicates,
    lost: $c.lost, stale_evaluations: $c.stale_evaluations, unacked: $s.unacked,
    unacked_stored: $c.unacked_stored, rejected: $s.rejected, retries: $s.retries,
    errors: $s.errors, outcomes: $s.outcomes, agent_recovery_ms: $s.recovery_ms,
    elapsed_s: $s.elapsed_s }'
}

# expect JQ MESSAGE: a check of $figures; a failed one is reported and fails the scenario at
# fault_finish, after its figures are printed.
fault_status=0
expect() {
  jq -e "$1" <<<"$figures" >/dev/null || { echo "FAIL: $2" >&2; fault_status=1; }
}

# expect_every_report N: nothing acked is lost, nothing is stored twice, all N were made and
# acked, none refused as invalid, every host's last report evaluated.
expect_every_report() {
  expect '.lost == 0' "acked reports missing from the database"
  expect '.duplicates == 0' "reports stored more than once"
  expect ".unacked == 0 and .sent == $1" "reports never acked (loadgen exit ${loadgen_rc:-?})"
  expect '.rejected == 0' "reports refused as invalid"
  # A report stored whose evaluation never ran (e.g. stored, collector killed, the resend answered
  # DUPLICATE and not evaluated): the host's findings lag its posture.
  expect '.stale_evaluations == 0' "hosts whose last report was stored but never evaluated"
}

# fault_finish: prints $figures as the last line of stdout (one JSON object) and exits with the
# checks' result.
fault_finish() {
  ((fault_status == 0)) || e2e_logs
  jq -c . <<<"$figures"
  exit "$fault_status"
}

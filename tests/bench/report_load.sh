#!/usr/bin/env bash
# The collector's report path under load, measured from outside: a private PostgreSQL, one
# smbfleet-collector over mutual TLS, and report_load_bench as N agents with their own
# certificates. Runs with policy evaluation off, then on, each against a fresh database, and
# prints one JSON line per phase (first / unchanged / digest / changed; digest: the unchanged
# posture as digest-only reports). Bounded: --reports per phase.
#
#   tests/bench/report_load.sh [BUILD_DIR] [--hosts 200] [--reports 2000] [--concurrency 16]
#                              [--capture tests/fixtures/windows/ws2022] [--collector BIN]
#                              [--policy "off on"]
#
# --collector runs another collector binary (e.g. an older build) against the same client.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/deploy/lib.sh"
build=$root/build
if [[ $# -gt 0 && $1 != --* ]]; then build=$1; shift; fi
build=$(cd "$build" && pwd)
hosts=200 reports=2000 concurrency=16 capture=$root/tests/fixtures/windows/ws2022
collector_bin= policies="off on"
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --reports) reports=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --capture) capture=$2; shift 2 ;;
    --collector) collector_bin=$2; shift 2 ;;
    --policy) policies=$2; shift 2 ;;
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

for policy in $policies; do
  db="load_$policy"
  psql "$admin_dsn" -qAt -c "CREATE DATABASE $db" >/dev/null
  {
    echo "listen: 127.0.0.1:0"
    echo "tls: {cert: pki/collector.pem, key: pki/collector.key, client_ca: pki/ca.pem}"
    echo "database: {dsn: '${admin_dsn%/*}/$db'}"
    echo "log_level: warn"
    cat "$work/pki/collector-identity.yaml"
    [[ $policy == on ]] && echo "policy: {file: '$root/policy/policies/baseline.yaml'}"
  } > "$work/collector-$policy.yaml"
  rm -f "$work/port"
  (cd "$work" && exec "$collector_bin" --config "collector-$policy.yaml" \
    --port_file "$work/port" >"$work/collector-$policy.log" 2>&1) &
  collector_pid=$!
  wait_for_file "$work/port" 30 || { cat "$work/collector-$policy.log" >&2; exit 1; }
  "$build/tests/bench/report_load_bench" --target "127.0.0.1:$(cat "$work/port")" \
    --pki "$work/pki" --posture "$work/posture.json" --hosts "$hosts" --reports "$reports" \
    --concurrency "$concurrency" --label "policy-$policy"
  kill "$collector_pid"; wait "$collector_pid" 2>/dev/null || true; collector_pid=
done

#!/usr/bin/env bash
# End to end: a real smbd with held smbclient sessions (SMB 3.1.1 signed, SMB 3.1.1 encrypted,
# SMB 3.0, SMB 2.1) -> smbfleet-agent -> gRPC over mutual TLS -> smbfleet-collector ->
# PostgreSQL -> smbfleetctl shows the sessions with the right dialects. Then the Watch stream:
# `smbfleetctl host refresh` makes the running agent report again.
#
#   pipeline_test.sh COLLECTOR AGENT SMBFLEETCTL      (needs SMBFLEET_TEST_PG_DSN)
set -euo pipefail
collector_bin=$1 agent_bin=$2 ctl_bin=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/deploy/lib.sh"
: "${SMBFLEET_TEST_PG_DSN:?set by deploy/test.sh}"

work=$(mktemp -d /tmp/smbfleet-e2e.XXXXXX)
chmod 755 "$work"  # smbd serves the shares as the lab user
pids=()
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for s in s311 s311enc s300 s210; do bash "$root/deploy/samba-lab.sh" release "$work/samba" "$s" >/dev/null 2>&1 || true; done
  bash "$root/deploy/samba-lab.sh" stop "$work/samba" >/dev/null 2>&1 || true
  if [[ "${KEEP_E2E:-}" != 1 ]]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT

host=e2e-fs01
bash "$root/deploy/ca.sh" dev "$work/pki" "$host" >/dev/null

echo "-- Samba lab with held sessions"
smb_port=$(free_port)
bash "$root/deploy/samba-lab.sh" start "$work/samba" "$smb_port" >/dev/null
conf=$(bash "$root/deploy/samba-lab.sh" conf "$work/samba")
lab=(bash "$root/deploy/samba-lab.sh")
"${lab[@]}" hold "$work/samba" s311 demo >/dev/null
"${lab[@]}" hold "$work/samba" s311enc finance --client-protection=encrypt >/dev/null
"${lab[@]}" hold "$work/samba" s300 demo -m SMB3_00 >/dev/null
"${lab[@]}" hold "$work/samba" s210 finance -m SMB2_10 >/dev/null

echo "-- database and collector"
db="smbfleet_e2e_$$_$RANDOM"
psql "$SMBFLEET_TEST_PG_DSN" -qAt -c "CREATE DATABASE $db" >/dev/null
dsn="${SMBFLEET_TEST_PG_DSN%/*}/$db"
cat > "$work/collector.yaml" <<YAML
listen: 127.0.0.1:0
tls: {cert: pki/collector.pem, key: pki/collector.key, client_ca: pki/ca.pem}
database: {dsn: '$dsn'}
watch: {keepalive_interval: 5s}
policy: {file: '$root/policy/policies/baseline.yaml'}
log_level: info
YAML
"$collector_bin" --config "$work/collector.yaml" --port_file "$work/port" >"$work/collector.log" 2>&1 &
pids+=($!)
wait_for_file "$work/port" 30 || { cat "$work/collector.log"; fail "collector did not start"; }
port=$(cat "$work/port")

echo "-- agent, one report"
{
  echo "collector: {address: '127.0.0.1:$port', server_name: localhost}"
  echo "tls: {cert: pki/agent-$host.pem, key: pki/agent-$host.key, ca: pki/ca.pem}"
  echo "source: 'samba:$conf'"
  echo "labels: {site: lab, classification_hint: demo}"
  echo "schedule: {interval: 1h, splay: 0s, benchmark_interval: 24h}"
  echo "spool: {dir: spool}"
  echo "tool_env:"
  "${lab[@]}" env "$work/samba" | sed -E "s/^([^=]+)=(.*)$/  \1: '\2'/"
} > "$work/agent.yaml"
"$agent_bin" run --config "$work/agent.yaml" --once >"$work/agent-once.log" 2>&1 \
  || { cat "$work/agent-once.log"; fail "agent run --once failed"; }
grep -q "OUTCOME_STORED" "$work/agent-once.log" || { cat "$work/agent-once.log"; fail "first report not stored"; }

ctl=("$ctl_bin" --collector "127.0.0.1:$port" --cert "$work/pki/operator-admin.pem"
     --key "$work/pki/operator-admin.key" --ca "$work/pki/ca.pem")
"${ctl[@]}" host show "$host" --format=json > "$work/host.json" || fail "host show failed"
"${ctl[@]}" host show "$host" > "$work/host.txt"
cat "$work/host.txt"

check() { grep -q -- "$2" "$work/$1" || fail "$3 (looked for '$2' in $1)"; }
check host.json '"platform": "PLATFORM_SAMBA"' "platform"
check host.json '"dialect": "DIALECT_SMB_3_1_1"' "SMB 3.1.1 session missing"
check host.json '"dialect": "DIALECT_SMB_3_0"' "SMB 3.0 session missing"
check host.json '"dialect": "DIALECT_SMB_2_1"' "SMB 2.1 session missing"
check host.json '"encryption": "PROTECTION_FULL"' "encrypted tree connect missing"
check host.json '"cipher": "AES_128_GCM"' "AES-128-GCM cipher missing"
check host.json '"algorithm": "AES_128_GCM"' "benchmark missing"
check host.json '"site": "lab"' "labels missing"
sessions=$(grep -c '"sessionId"' "$work/host.json")
[[ "$sessions" -eq 4 ]] || fail "expected 4 sessions, got $sessions"
"${ctl[@]}" hosts | grep -q "$host" || fail "hosts does not list $host"

echo "-- policy evaluated at ingest"
"${ctl[@]}" compliance > "$work/compliance.txt" || fail "compliance failed"
cat "$work/compliance.txt"
check compliance.txt "Policy baseline" "no active policy"
check compliance.txt "min-dialect-3-1-1" "rule missing from compliance"
"${ctl[@]}" findings --host "$host" --format=json > "$work/findings.json" || fail "findings failed"
check findings.json '"ruleId": "min-dialect-3-1-1"' "Samba without min protocol SMB3_11 not flagged"
check findings.json '"share": "finance"' "unencrypted confidential share not flagged"
"${ctl[@]}" findings --host "$host"

echo "-- same state again: unchanged, stored once"
"$agent_bin" run --config "$work/agent.yaml" --once >"$work/agent-twice.log" 2>&1 || fail "second run failed"
grep -q "OUTCOME_UNCHANGED" "$work/agent-twice.log" || { cat "$work/agent-twice.log"; fail "unchanged posture was stored again"; }
[[ $(psql "$dsn" -qAt -c "SELECT count(*) FROM postures") -eq 1 ]] || fail "postures stored twice"
[[ $(psql "$dsn" -qAt -c "SELECT count(*) FROM reports") -eq 2 ]] || fail "reports not counted"

echo "-- running agent: Watch stream and a nudge"
"$agent_bin" run --config "$work/agent.yaml" >"$work/agent.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  [[ $(psql "$dsn" -qAt -c "SELECT count(*) FROM reports") -ge 3 ]] && break
  sleep 0.2
done
[[ $(psql "$dsn" -qAt -c "SELECT count(*) FROM reports") -ge 3 ]] || { cat "$work/agent.log"; fail "startup report missing"; }
for _ in $(seq 1 100); do
  "${ctl[@]}" host refresh "$host" >/dev/null 2>&1 && break
  sleep 0.2
done
for _ in $(seq 1 100); do
  [[ $(psql "$dsn" -qAt -c "SELECT count(*) FROM reports") -ge 4 ]] && break
  sleep 0.2
done
[[ $(psql "$dsn" -qAt -c "SELECT count(*) FROM reports WHERE reason = 'nudge'") -ge 1 ]] \
  || { cat "$work/agent.log"; fail "nudge did not produce a report"; }

echo "-- a session goes away: the next report is a change"
"${lab[@]}" release "$work/samba" s210 >/dev/null
sleep 0.5
"${ctl[@]}" host refresh "$host" >/dev/null
for _ in $(seq 1 100); do
  [[ $(psql "$dsn" -qAt -c "SELECT count(*) FROM postures") -ge 2 ]] && break
  sleep 0.2
done
[[ $(psql "$dsn" -qAt -c "SELECT count(*) FROM host_sessions") -eq 3 ]] || fail "latest sessions not updated"
echo "PASS"

#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs a small smbfleet on this machine —
# a private PostgreSQL, the collector, a local Samba server with demo shares and live client
# sessions and its agent, plus a simulated fleet of Windows servers replayed from capture
# folders. The agents enroll with a token an admin makes (each makes its own key and gets a
# short-lived certificate from the collector's issuing CA). Proposes a change for the Samba server (as the proposer) and prints the commands that
# approve it (as two approvers) and watch it apply. Prints where to look, the web console's
# address and a token to sign in to it with, and runs until Ctrl-C, then stops everything it
# started.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"

bash "$here/setup.sh"
build=${SMBFLEET_BUILD_DIR:-$root/build}
echo "== building ($build)"
build_tree "$root" "$build"

run=${SMBFLEET_RUN_DIR:-$root/run}
mkdir -p "$run"
chmod 755 "$run"
pids=()
sessions=()
stop_all() {
  echo
  echo "== stopping"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for s in "${sessions[@]}"; do bash "$here/samba-lab.sh" release "$run/samba" "$s" >/dev/null 2>&1 || true; done
  bash "$here/samba-lab.sh" stop "$run/samba" >/dev/null 2>&1 || true
  bash "$here/pg.sh" stop "$run/pg" >/dev/null 2>&1 || true
  echo "stopped; state kept in $run"
}
trap stop_all EXIT
trap 'exit 0' INT TERM

# Host names as certificates carry them: lower case letters, digits, '-' and '.'.
host_name() {
  local h
  h=$(tr '[:upper:]' '[:lower:]' <<<"$1")
  h=${h//[^a-z0-9.-]/-}
  h=${h##-}
  echo "${h%%-}"
}
samba_host=$(host_name "$(hostname -s 2>/dev/null || echo samba01)")
fleet=()
if compgen -G "$root/tests/fixtures/windows/*/" >/dev/null; then
  for d in "$root"/tests/fixtures/windows/*/; do
    fleet+=("$(host_name "sim-$(basename "$d")")")
  done
fi
echo "== certificates ($run/pki): the collector's and the operators'"
bash "$here/ca.sh" dev "$run/pki" >/dev/null
# ca.sh also makes the agents CA (agents-ca.*, under the root): the collector's issuing CA.

echo "== PostgreSQL"
pg_port=${SMBFLEET_PG_PORT:-$(free_port)}
dsn=$(bash "$here/pg.sh" start "$run/pg" "$pg_port")

echo "== collector"
port=${SMBFLEET_PORT:-7443}
console_port=${SMBFLEET_CONSOLE_PORT:-8443}
cat > "$run/collector.yaml" <<YAML
listen: 127.0.0.1:$port
console: {listen: '127.0.0.1:$console_port'}
tls: {cert: pki/collector.pem, key: pki/collector.key, client_ca: pki/ca.pem}
database: {dsn: '$dsn'}
enrollment: {ca_cert: pki/agents-ca.pem, ca_key: pki/agents-ca.key, certificate_lifetime: 7d}
policy: {file: '$root/policy/policies/baseline.yaml'}
log_level: info
YAML
cat "$run/pki/collector-identity.yaml" >> "$run/collector.yaml"
rm -f "$run/port"
"$build/collector/smbfleet-collector" --config "$run/collector.yaml" --port_file "$run/port" \
  >"$run/collector.log" 2>&1 &
pids+=($!)
wait_for_file "$run/port" 30 || { tail -20 "$run/collector.log"; exit 1; }

echo "== Samba with demo shares and client sessions"
smb_port=${SMBFLEET_SMB_PORT:-$(free_port)}
bash "$here/samba-lab.sh" start "$run/samba" "$smb_port" >/dev/null
conf=$(bash "$here/samba-lab.sh" conf "$run/samba")
bash "$here/samba-lab.sh" hold "$run/samba" modern demo >/dev/null && sessions+=(modern)
bash "$here/samba-lab.sh" hold "$run/samba" encrypted finance --client-protection=encrypt >/dev/null && sessions+=(encrypted)
bash "$here/samba-lab.sh" hold "$run/samba" legacy finance -m SMB2_10 >/dev/null && sessions+=(legacy)

agent_config() {  # name source
  local name=$1 source=$2
  echo "collector: {address: '127.0.0.1:$port', server_name: localhost}"
  echo "tls: {cert: agents/$name/agent.pem, key: agents/$name/agent.key, ca: pki/ca.pem}"
  echo "enroll: {token_file: enroll.token, host: $name}"
  echo "source: '$source'"
  echo "labels: {site: demo}"
  echo "schedule: {interval: 10m, splay: 5s, benchmark_interval: 24h}"
  echo "spool: {dir: spool/$name}"
  echo "trust: $trust"
}

echo "== approver keys ($run/keys)"
# Each approver's own Ed25519 key, as `smbfleetctl keys init` makes it on their machine; only
# the public halves leave: an admin registers them and the agents pin them (`trust:`).
mkdir -p -m 700 "$run/keys"
for who in approver-a approver-b; do
  [[ -f "$run/keys/$who.key" ]] ||
    "$build/cli/smbfleetctl" keys init --key "$run/keys/$who.key" >/dev/null
  "$build/cli/smbfleetctl" keys show --key "$run/keys/$who.key" >"$run/keys/$who.pub"
done
approver_public() { sed -n 's/^public key: //p' "$run/keys/$1.pub"; }
trust="{approvers: {approver-a: '$(approver_public approver-a)', approver-b: '$(approver_public approver-b)'}}"

ctl_config() {  # operator certificate name
  echo "collector: 127.0.0.1:$port"
  echo "server_name: localhost"
  echo "tls: {cert: pki/operator-$1.pem, key: pki/operator-$1.key, ca: pki/ca.pem}"
}
ctl_config admin > "$run/ctl.yaml"
for who in viewer proposer approver-a approver-b; do ctl_config "$who" > "$run/ctl-$who.yaml"; done
export SMBFLEET_CTL_CONFIG=$run/ctl.yaml
ctl=$build/cli/smbfleetctl

echo "== an enrollment token for the agents (admin)"
# One use per agent; an agent that enrolled in an earlier run keeps its certificate and renews it.
(umask 077
 "$ctl" enroll-tokens create --uses $((1 + ${#fleet[@]})) --expires 1h --label site=demo \
   --comment "quick start" | grep -E '^set_' >"$run/enroll.token")

echo "== agents (each enrolls: its key is made locally, only a CSR is sent)"
{
  agent_config "$samba_host" "samba:$conf"
  # This demo server applies approved changes to its own lab configuration; the allowlist is
  # what the baseline policy's plan sets on Samba.
  echo "changes: {enforce: true, allow: [server.requireSigning, client.requireSigning,"
  echo "                                  server.minDialect, share.encryptData,"
  echo "                                  client.minDialect, client.requireEncryption]}"
  echo "tool_env:"
  bash "$here/samba-lab.sh" env "$run/samba" | sed -E "s/^([^=]+)=(.*)$/  \1: '\2'/"
} > "$run/agent-$samba_host.yaml"
"$build/agent/smbfleet-agent" run --config "$run/agent-$samba_host.yaml" >"$run/agent-$samba_host.log" 2>&1 &
pids+=($!)
i=0
for d in "$root"/tests/fixtures/windows/*/; do
  [[ -d "$d" ]] || continue
  name=${fleet[$i]}; i=$((i + 1))
  agent_config "$name" "windows-capture:$d" > "$run/agent-$name.yaml"
  "$build/agent/smbfleet-agent" run --config "$run/agent-$name.yaml" >"$run/agent-$name.log" 2>&1 &
  pids+=($!)
done

for _ in $(seq 1 60); do
  "$ctl" host show "$samba_host" >/dev/null 2>&1 && break
  sleep 1
done
# The admin registers the approvers' public keys (already there from an earlier run is fine).
for who in approver-a approver-b; do
  "$ctl" approvers add "$who" --public-key "@$run/keys/$who.pub" >/dev/null 2>&1 || true
done

echo "== a console sign-in token (admin makes it for 'console-demo': viewer and proposer)"
# Shown once by the collector; kept here 0600 so that a later look needs no new token.
(umask 077
 "$ctl" tokens create console-demo --roles viewer,proposer --expires 7d | grep -E '^sft_' \
   >"$run/console.token") || { echo "cannot make a console token"; exit 1; }

echo "== a change for $samba_host, proposed by 'proposer'"
change=""
if out=$("$ctl" --config "$run/ctl-proposer.yaml" changes propose --host "$samba_host" \
    --reason "quick start: the baseline policy's plan for $samba_host" 2>&1); then
  change=$(head -1 <<<"$out")
  "$ctl" changes show "$change" || true
else
  echo "$out"
  echo "(nothing proposed; a change applied in an earlier run stays in $run/samba/conf.d)"
fi

cat <<EOF2

smbfleet is running: collector on 127.0.0.1:$port (mutual TLS), PostgreSQL on 127.0.0.1:$pg_port,
Samba on 127.0.0.1:$smb_port, agents for $samba_host and ${#fleet[@]} simulated Windows servers.

  export SMBFLEET_CTL_CONFIG=$run/ctl.yaml
  $build/cli/smbfleetctl hosts
  $build/cli/smbfleetctl certs list
  $build/cli/smbfleetctl host show $samba_host
  $build/cli/smbfleetctl host refresh $samba_host
  $build/cli/smbfleetctl compliance
  $build/cli/smbfleetctl findings --host $samba_host
  $build/cli/smbfleetctl policy eval --policy $root/policy/policies/baseline.yaml --posture FILE

Logs are in $run/*.log. Ctrl-C stops everything.
EOF2
if [[ -n "$change" ]]; then
  # Four-eyes: the proposer may not approve; a change whose impact names a client that would be
  # refused needs two approvers.
  approvers=(approver-a)
  shown=$("$ctl" changes show "$change" --format=json || true)
  if grep -q '"approvalsRequired": 2' <<<"$shown"; then
    approvers+=(approver-b)
  fi
  echo
  echo "Change $change waits for approval (operator certificates in $run/pki, one per role; each"
  echo "approver signs with their own key from $run/keys):"
  echo
  for who in "${approvers[@]}"; do
    echo "  $ctl --config $run/ctl-$who.yaml changes approve $change --key $run/keys/$who.key"
  done
  echo "  $ctl changes watch $change"
  echo "  $ctl --config $run/ctl-approver-a.yaml changes rollback $change --key $run/keys/approver-a.key   # undo it"
  echo "  $ctl audit --change $change"
  echo
fi
"$build/cli/smbfleetctl" hosts || true
# The console's certificate is the collector's, from this run's own CA ($run/pki/ca.pem): a
# browser warns until that CA is trusted.
echo
echo "console: https://127.0.0.1:$console_port/"
echo "sign in with: $(cat "$run/console.token")"
while true; do
  for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null || { echo "a process stopped unexpectedly; see $run/*.log"; exit 1; }
  done
  sleep 2
done

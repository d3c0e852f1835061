#!/usr/bin/env bash
# The web console end to end in a real headless chromium: a collector serving the console over
# HTTPS on a real PostgreSQL, a live Samba host with an enrolled agent (enforcement on), people
# signed in with API tokens. console_e2e.mjs drives the pages; this script sets the scene and
# checks the Samba host afterwards.
#
#   console_e2e_test.sh BUILD_DIR COLLECTOR AGENT SMBFLEETCTL      (needs SMBFLEET_TEST_PG_DSN)
#
# Scenarios (the issue's):
#   - an operator signs in with the client certificate the browser presents
#   - a viewer finds no approve button; a forged ApproveChange with the viewer's session: 403
#   - the proposer (who also holds the approver role) proposes from a finding on the host page,
#     finds no approve button on their own change; a forged, validly signed approval: 403/409
#   - approver-a and approver-b approve in their browsers with their key files (the change needs
#     two: it would refuse the lab's SMB2_10 client); the page follows the rollout to "applied"
#     and smb.conf says so
#   - the overview's numbers equal `smbfleetctl compliance --format=json`
#   - "who would break" for the rule names the clients the host would refuse; the hosts page's
#     filters in the URL (query, failing rule) reach the server
#   - for a client-side rule it names the servers instead: the old NAS a second host's client
#     talks to (an agent replaying the ws2022-nas-client capture)
#   - a share named `<img src=x onerror=alert(1)>` shows as text: no dialog, no img element
#   - the host page shows each live session's lowest RTT (the agent's sock_diag reading) and the
#     host's NICs, equal to what the API answers for the same report
#   - GET /metrics on the console port: the counters move with this real traffic (a connected
#     agent, its stored report, the change order acked APPLIED)
# Screenshots: BUILD_DIR/test-artifacts/console/*.png
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: console_e2e_test.sh BUILD_DIR COLLECTOR AGENT SMBFLEETCTL}
shift
# shellcheck source=../e2e/lib.sh
source "$here/../e2e/lib.sh"

readonly HOST=fs-console
readonly WIN=fs-win-client
readonly HOSTILE='<img src=x onerror=alert(1)>'
readonly ALLOW="[server.requireSigning, client.requireSigning, server.minDialect, share.encryptData, client.minDialect, client.requireEncryption]"

e2e_init "$@" "$HOST" "$WIN"
command -v node >/dev/null || fail "node is missing (deploy/setup.sh installs nodejs)"
# playwright-core comes with the console's npm packages.
bash "$e2e_root/console/build.sh" "$build/console-test/e2e-dist" >/dev/null

step "a Samba host with a hostile share name and a legacy SMB2_10 client"
start_lab "$HOST"
lab_dir=$work/$HOST
mkdir -p "$lab_dir/shares/hostile"
chmod 777 "$lab_dir/shares/hostile"
# testparm (what the agent reads) takes the file as it is; smbd is not asked to serve it.
printf '\n[%s]\n    path = %s\n    read only = yes\n' "$HOSTILE" "$lab_dir/shares/hostile" >>"$lab_dir/smb.conf"
lab hold "$lab_dir" legacy finance -m SMB2_10 >/dev/null || fail "SMB2_10 session to finance"

new_database
console_port=$(free_port)
start_collector collector "console: {listen: '127.0.0.1:$console_port'}"
agent_config "$HOST" "$HOST" collector "{enforce: true, allow: $ALLOW}" >"$work/agent.yaml"
start_agent agent "$work/agent.yaml"
poll 30 "a stored report of $HOST" ctl admin host show "$HOST"
start_capture_agent "$WIN" ws2022-nas-client collector
base=https://localhost:$console_port
_ready() {  # GET /readyz answers 200 (node: curl is not among the test packages)
  node -e "require('https').get({host: '127.0.0.1', port: $console_port, path: '/readyz',
    rejectUnauthorized: false}, (r) => process.exit(r.statusCode === 200 ? 0 : 1))
    .on('error', () => process.exit(1))"
}
poll 30 "the console on $base (/readyz)" _ready
# metric SERIES: the value of one series (name and labels exactly as exported) on GET /metrics.
metric() {
  node -e "require('https').get({host: '127.0.0.1', port: $console_port, path: '/metrics',
    rejectUnauthorized: false}, (r) => { let b = ''; r.on('data', (d) => b += d);
    r.on('end', () => { if (r.statusCode !== 200) process.exit(1); process.stdout.write(b); }); })
    .on('error', () => process.exit(1))" | awk -v s="$1" '$1 == s { print $2; found = 1 } END { exit !found }'
}

step "tokens for the people who use the console"
token() {  # token NAME ROLES: an API token for NAME
  ctl admin tokens create "$1" --roles "$2" --expires 1d | grep '^sft_' || fail "tokens create $1"
}
viewer_token=$(token viewer viewer)
# The proposer also holds the approver role (and a registered approver key): four-eyes, not the
# role, must stop them approving their own change.
proposer_token=$(token proposer proposer,approver)
approver_a_token=$(token approver-a approver)
approver_b_token=$(token approver-b approver)

ctl admin compliance --format=json >"$work/compliance.json" || fail "compliance --format=json"
ctl admin findings --host "$HOST" --format=json >"$work/findings.json" || fail "findings"
jq -e '[.findings[]? | select(.ruleId == "classified-shares-encrypted")] | length >= 1' \
  "$work/findings.json" >/dev/null || fail "no classified-shares-encrypted finding: $(cat "$work/findings.json")"

jq -n --arg base "$base" --arg host "$HOST" --arg win "$WIN" --arg hostile "$HOSTILE" \
  --arg viewer "$viewer_token" --arg proposer "$proposer_token" \
  --arg approver_a "$approver_a_token" --arg approver_b "$approver_b_token" \
  --arg key_a "$work/keys/approver-a.key" --arg key_b "$work/keys/approver-b.key" \
  --arg key_proposer "$work/keys/proposer-approver.key" \
  --arg cert "$work/pki/operator-admin.pem" --arg cert_key "$work/pki/operator-admin.key" \
  --slurpfile compliance "$work/compliance.json" \
  '{base: $base, host: $host, clientHost: $win, hostile: $hostile,
    tokens: {viewer: $viewer, proposer: $proposer, "approver-a": $approver_a, "approver-b": $approver_b},
    keys: {"approver-a": $key_a, "approver-b": $key_b, proposer: $key_proposer},
    certificate: {name: "admin", cert: $cert, key: $cert_key},
    compliance: $compliance[0]}' >"$work/console.json"
chmod 600 "$work/console.json"

step "GET /metrics before the change"
[[ $(metric smbfleet_agents_connected) == 2 ]] || fail "smbfleet_agents_connected is not 2"
(($(metric 'smbfleet_reports_total{result="stored"}') >= 1)) || fail "no stored report counted"
[[ $(metric 'smbfleet_change_orders_total{result="APPLIED"}') == 0 ]] ||
  fail "an APPLIED order counted before any change"

step "the browser"
export SMBFLEET_ARTIFACTS=$build/test-artifacts/console
if ! node "$here/console_e2e.mjs" "$work/console.json" "$work/change.id" 2>&1 | sed 's/^/   | /'; then
  fail "the browser scenarios failed (screenshots in $SMBFLEET_ARTIFACTS)"
fi

step "the Samba host has what the approved change set"
id=$(<"$work/change.id")
[[ $(host_state "$id" "$HOST") == HOST_CHANGE_STATE_APPLIED ]] || fail "change $id is not applied on $HOST"
[[ $(lab param "$lab_dir" finance 'smb encrypt') == required ]] ||
  fail "finance is not 'smb encrypt = required' after the change"
[[ $(change_get "$id" '.approvals | map(.approver) | sort | join(",")') == approver-a,approver-b ]] ||
  fail "the approvals are not approver-a's and approver-b's: $(change_get "$id" '.approvals')"

step "GET /metrics after the change: its order and ack counted"
[[ $(metric 'smbfleet_change_orders_total{result="APPLIED"}') == 1 ]] ||
  fail "smbfleet_change_orders_total{result=\"APPLIED\"} is not 1"
[[ $(metric smbfleet_order_ack_latency_seconds_count) == 1 ]] ||
  fail "smbfleet_order_ack_latency_seconds_count is not 1"
echo "PASS"

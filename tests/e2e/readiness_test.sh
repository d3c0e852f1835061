#!/usr/bin/env bash
# `smbfleetctl readiness` against a live Samba host: before min-dialect-3-1-1 is enforced, the
# readiness of the rule lists the lab's SMB 2.1 client (a held smbclient -m SMB2_10 session) with
# the host it talks to, the reason and when it was seen; --format=json is GetReadinessResponse.
# A client-side rule answers with servers, not clients: a second agent replays the
# ws2022-nas-client capture, whose own client talks to an old NAS without signing.
#   readiness_test.sh COLLECTOR AGENT SMBFLEETCTL      (needs SMBFLEET_TEST_PG_DSN)
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

readonly HOST=fs-ready WIN=fs-win
e2e_init "$@" "$HOST" "$WIN"

step "a Samba host with a held SMB 2.1 client session"
start_lab "$HOST"
lab hold "$work/$HOST" legacy finance -m SMB2_10 >/dev/null || fail "SMB2_10 session to finance"
new_database
start_collector collector
agent_config "$HOST" "$HOST" collector >"$work/agent.yaml"
start_agent agent "$work/agent.yaml"
poll 30 "a stored report of $HOST" ctl admin host show "$HOST"
start_capture_agent "$WIN" ws2022-nas-client collector
_fails_min_dialect() {
  ctl viewer findings --rule min-dialect-3-1-1 --format=json |
    jq -e --arg h "$HOST" '[.findings[]? | select(.host == $h)] | length == 1' >/dev/null
}
poll 30 "$HOST failing min-dialect-3-1-1" _fails_min_dialect

step "readiness --rule min-dialect-3-1-1 (text): the SMB 2.1 client"
ctl viewer readiness --rule min-dialect-3-1-1 >"$work/ready.txt" || fail "readiness: $(cat "$work/ready.txt")"
sed 's/^/   | /' "$work/ready.txt"
grep -q '^rule min-dialect-3-1-1: server.minDialect = SMB_3_1_1$' "$work/ready.txt" ||
  fail "no requirement line"
head -3 "$work/ready.txt" | grep -q '^CLIENT  *ADDRESS  *USER  *FIRST SEEN  *LAST SEEN  *HOSTS  *REASONS' ||
  fail "no client table header"
row=$(grep -F 'dialect SMB_2_1 below SMB_3_1_1' "$work/ready.txt") || fail "the SMB 2.1 client is not listed"
grep -qF "$HOST" <<<"$row" || fail "the row does not name $HOST: $row"
grep -qF '127.0.0.1' <<<"$row" || fail "the row does not name the client's address: $row"
grep -qE '[0-9]{4}-[0-9]{2}-[0-9]{2}' <<<"$row" || fail "the row has no first/last seen: $row"

step "readiness --rule min-dialect-3-1-1 --format=json"
ctl viewer readiness --rule min-dialect-3-1-1 --format=json >"$work/ready.json"
jq -e --arg h "$HOST" '.side == "server" and (.servers // []) == [] and
    ([.clients[] | select((.reasons | index("dialect SMB_2_1 below SMB_3_1_1")) and
                          .hosts == [$h] and (.clientAddress | contains("127.0.0.1")) and
                          .firstSeen != null and .lastSeen != null and
                          (.evidence[0].observed == "DIALECT_SMB_2_1"))] | length) == 1' \
  "$work/ready.json" >/dev/null || fail "JSON: $(cat "$work/ready.json")"

step "readiness --rule client-signing-required: the server $WIN's client would be cut off from"
ctl viewer readiness --rule client-signing-required >"$work/client.txt" || fail "readiness: $(cat "$work/client.txt")"
sed 's/^/   | /' "$work/client.txt"
grep -q '^SERVER  *ADDRESS  *FIRST SEEN  *LAST SEEN  *CLIENT HOSTS  *REASONS' "$work/client.txt" ||
  fail "no server table"
row=$(grep -E '^oldnas ' "$work/client.txt") || fail "oldnas is not listed"
grep -qF "$WIN" <<<"$row" || fail "the row does not name $WIN: $row"
ctl viewer readiness --rule client-signing-required --format=json >"$work/client.json"
jq -e --arg w "$WIN" '.side == "client" and (.clients // []) == [] and
    ([.servers[] | .serverName] == ["oldnas"]) and .servers[0].hosts == [$w] and
    (.servers[0].evidence[0].note | contains("\\\\oldnas\\scans dialect 2.1 signed=false"))' \
  "$work/client.json" >/dev/null || fail "client-signing-required: $(cat "$work/client.json")"

step "readiness --change: a proposed change to $WIN's client signing names the same NAS"
id=$(propose proposer --host "$WIN" --reason "client signing")
ctl viewer readiness --change "$id" --format=json >"$work/change.json"
jq -e --arg w "$WIN" --arg id "$id" '.side == "client" and
    (.requirement | startswith("change " + $id + ": client.requireSigning = true")) and
    ([.servers[] | .serverName] == ["oldnas"]) and .servers[0].hosts == [$w]' \
  "$work/change.json" >/dev/null || fail "readiness --change: $(cat "$work/change.json")"

step "bad requests are refused before any call"
expect_exit 2 "neither --rule nor --change" viewer readiness
expect_exit 2 "both --rule and --change" viewer readiness --rule a --change CHG-1
echo "PASS"

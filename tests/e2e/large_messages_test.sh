#!/usr/bin/env bash
# Large messages through the collector's TLS, end to end with the real binaries: an agent
# reports a posture of several MB (a Windows capture with 20,000 open files) and an operator
# reads it back (GetHost's answer, as large). The collector's TLS buffers are smaller than
# such a message and are released while a connection is idle (docs/scaling.md, "Where an idle
# connection's memory goes"): every byte must still arrive, both ways.
#
#   large_messages_test.sh COLLECTOR AGENT SMBFLEETCTL      (needs SMBFLEET_TEST_PG_DSN)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
host=big-fs
e2e_init "$1" "$2" "$3" "$host"
kOpenFiles=20000

step "a Windows capture with $kOpenFiles open files"
capture=$work/capture-big
cp -r "$e2e_root/tests/fixtures/windows/ws2022" "$capture"
jq -c --argjson n "$kOpenFiles" '.[0] as $f | [range($n) as $i | $f + {
    FileId: (1000 + $i),
    Path: "F:\\HR\\department-\($i % 97)\\quarterly-report-\($i).xlsx",
    ShareRelativePath: "department-\($i % 97)\\quarterly-report-\($i).xlsx"}]' \
  "$e2e_root/tests/fixtures/windows/ws2022/Get-SmbOpenFile.json" >"$capture/Get-SmbOpenFile.json"

step "database and collector"
new_database
start_collector collector

step "the agent reports it"
agent_config "$host" "windows-capture:$capture" collector >"$work/agent-$host.yaml"
start_agent "agent-$host" "$work/agent-$host.yaml"
poll 60 "a stored report of $host" ctl admin host show "$host"

step "an operator reads it back"
ctl viewer host show "$host" --format=json >"$work/host.json" || fail "host show $host"
bytes=$(wc -c <"$work/host.json")
paths=$(jq '[.. | objects | select(has("shareRelativePath")) | .shareRelativePath] | unique | length' "$work/host.json")
echo "    GetHost answer: $bytes bytes of JSON, $paths distinct open files"
((bytes > 2000000)) || fail "the answer is $bytes bytes: not the large posture"
[[ $paths == "$kOpenFiles" ]] || fail "$paths open files read back, $kOpenFiles reported"
last=$(jq -r '[.. | objects | select(has("shareRelativePath")) | .shareRelativePath] | map(select(endswith("-19999.xlsx"))) | length' "$work/host.json")
[[ $last == 1 ]] || fail "the last open file did not come back"
step "ok"

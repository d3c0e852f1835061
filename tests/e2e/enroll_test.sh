#!/usr/bin/env bash
# End to end: enrollment with a token. An admin makes a one-use token with `smbfleetctl
# enroll-tokens create`; a real smbfleet-agent with no certificate enrolls with it (its key made
# locally, 0600), reports with the certificate it got, and shows the token's labels as trusted and
# its own as reported. A second agent with the same token is refused, and the token's text never
# reaches a log line or an error.
#
#   enroll_test.sh COLLECTOR AGENT SMBFLEETCTL      (needs SMBFLEET_TEST_PG_DSN)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
e2e_init "$1" "$2" "$3"
host=e2e-fs07

step "Samba lab, database and a collector that issues agent certificates"
start_lab samba
new_database
start_collector collector "enrollment: {ca_cert: pki/agents-ca.pem, ca_key: pki/agents-ca.key, certificate_lifetime: 1h}"

step "an admin makes a one-use token"
ctl admin enroll-tokens create --uses 1 --expires 1h --label site=paris --comment e2e \
  >"$work/token.out" || fail "enroll-tokens create failed"
cat "$work/token.out"
token=$(grep -E '^set_[0-9a-f]{16}_[0-9a-f]{64}$' "$work/token.out") || fail "no token printed"
secret=${token##*_}
(umask 077; echo "$token" >"$work/token")

enrolling_config() {  # enrolling_config HOST: an agent config with enroll: and no certificate yet
  local h=$1
  agent_config "$h" samba collector \
    | sed -e "s|^tls: .*|tls: {cert: agent-$h/tls/agent.pem, key: agent-$h/tls/agent.key, ca: pki/ca.pem}|"
  echo "enroll: {token_file: token, host: $h}"
}

step "the agent enrolls by itself and reports"
enrolling_config "$host" >"$work/agent.yaml"
"$agent_bin" run --config "$work/agent.yaml" --once >"$work/agent-once.log" 2>&1 \
  || { cat "$work/agent-once.log"; fail "agent run --once failed"; }
grep -q "enrolled as $host" "$work/agent-once.log" || fail "the agent did not say it enrolled"
grep -q "OUTCOME_STORED" "$work/agent-once.log" || fail "first report not stored"
[[ "$(stat -c %a "$work/agent-$host/tls/agent.key")" == 600 ]] || fail "the key is not 0600"
openssl x509 -in "$work/agent-$host/tls/agent.pem" -noout -subject | grep -q "CN *= *$host" \
  || fail "the certificate does not name $host"

ctl admin host show "$host" --format=json >"$work/host.json" || fail "host show failed"
jq -e '.summary.labels.site == "paris"' "$work/host.json" >/dev/null \
  || fail "the token's label is not the host's trusted label"
jq -e '.summary.reportedLabels.site == "lab"' "$work/host.json" >/dev/null \
  || fail "what the agent reported is not shown as reported"
ctl admin certs list --host "$host" | grep -q "token " || fail "certs list does not show it"

step "the token is spent: a second agent is refused"
enrolling_config e2e-fs08 >"$work/agent2.yaml"
got=0
"$agent_bin" enroll --config "$work/agent2.yaml" >"$work/agent2.log" 2>&1 || got=$?
cat "$work/agent2.log"
((got != 0)) || fail "a second enrollment with a one-use token succeeded"
grep -q "used up" "$work/agent2.log" || fail "the refusal does not say the token is used up"
[[ ! -e "$work/agent-e2e-fs08/tls/agent.pem" ]] || fail "a certificate was written anyway"

step "an admin sets the trusted labels"
ctl admin hosts label "$host" site=lyon tier=gold --reason "moved" || fail "hosts label failed"
ctl admin host show "$host" --format=json | jq -e '.summary.labels.tier == "gold"' >/dev/null \
  || fail "hosts label did not change the trusted labels"
ctl viewer hosts label "$host" site=x --reason r >/dev/null 2>&1 && fail "a viewer set labels"

step "the token's text is in no log"
if grep -rl -- "$secret" "$work"/*.log; then fail "the token's secret reached a log"; fi
echo "PASS"

#!/usr/bin/env bash
# Identity end to end with the real binaries: `smbfleetctl whoami` by certificate; an admin makes
# a bearer token, the person uses it from SMBFLEET_TOKEN and from token_file: (never a flag) and
# gets their role and no more; a revoked token and a revoked certificate are refused; a host is
# revoked by name alone.
#
#   identity_test.sh COLLECTOR AGENT SMBFLEETCTL      (needs SMBFLEET_TEST_PG_DSN)
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
e2e_init "$1" "$2" "$3"

step "database and collector"
new_database
start_collector collector

step "whoami by certificate"
ctl admin whoami > "$work/me.txt" || fail "whoami failed"
cat "$work/me.txt"
grep -q "^admin (operator)  roles admin  by certificate" "$work/me.txt" || fail "whoami by certificate"

step "a token for tina (viewer)"
ctl admin tokens create tina --roles viewer --expires 1d > "$work/token.txt" || fail "tokens create"
token=$(grep '^sft_' "$work/token.txt") || fail "no token printed"
id=$(awk 'NR==1 {print $1}' "$work/token.txt")
tok() { "$ctl_bin" --collector "127.0.0.1:$ctl_port" --ca "$work/pki/ca.pem" "$@"; }
SMBFLEET_TOKEN=$token tok whoami > "$work/tina.txt" || fail "whoami by token"
cat "$work/tina.txt"
grep -q "^tina (operator)  roles viewer  by token $id" "$work/tina.txt" || fail "whoami by token"
SMBFLEET_TOKEN=$token tok hosts >/dev/null || fail "a viewer token cannot list hosts"
got=0
SMBFLEET_TOKEN=$token tok tokens list > "$work/denied.txt" 2>&1 || got=$?
cat "$work/denied.txt"
((got != 0)) || fail "a viewer token listed tokens"
grep -q "PERMISSION_DENIED\|needs role 'admin'" "$work/denied.txt" || fail "no clear refusal"

step "the token from token_file:"
printf '%s\n' "$token" > "$work/tina.token"
chmod 600 "$work/tina.token"
printf 'collector: 127.0.0.1:%s\nserver_name: localhost\ntls: {ca: pki/ca.pem}\ntoken_file: tina.token\n' \
  "$ctl_port" > "$work/tina.yaml"
"$ctl_bin" --config "$work/tina.yaml" whoami | grep -q "^tina " || fail "token_file not used"

step "revoked token"
ctl admin tokens revoke "$id" --reason "left" >/dev/null || fail "tokens revoke"
got=0
SMBFLEET_TOKEN=$token tok whoami > "$work/revoked.txt" 2>&1 || got=$?
cat "$work/revoked.txt"
((got != 0)) || fail "revoked token accepted"
grep -q "revoked" "$work/revoked.txt" || fail "no clear refusal of a revoked token"
if grep -q "${token:22}" "$work/revoked.txt" "$work/collector.log" 2>/dev/null; then
  fail "token secret printed"
fi

step "revoked certificate"
serial=$(openssl x509 -noout -serial -in "$work/pki/operator-viewer.pem")
ctl viewer hosts >/dev/null || fail "viewer could not list hosts before revocation"
ctl admin certs revoke --serial "$serial" --reason "laptop lost" || fail "certs revoke"
got=0
ctl viewer hosts > "$work/viewer.txt" 2>&1 || got=$?
cat "$work/viewer.txt"
((got != 0)) || fail "revoked certificate accepted"
grep -qi "revoked" "$work/viewer.txt" || fail "no clear refusal of a revoked certificate"
ctl admin certs revocations | grep -q "laptop lost" || fail "revocation not listed"

step "revoked host"
ctl admin certs revoke --host FS-GONE --reason "decommissioned" > "$work/host.txt" || fail "certs revoke --host"
cat "$work/host.txt"
grep -q "host fs-gone (every certificate, and re-enrollment)" "$work/host.txt" || fail "host revocation not shown"
ctl admin certs revocations | grep -q "host fs-gone (every certificate" || fail "host revocation not listed"
echo PASS

#!/usr/bin/env bash
# The collector binary refuses bad starts clearly: a configuration with mistakes lists them all,
# an unreachable PostgreSQL is named (without its password), and both exit non-zero.
#   collector_cli_test.sh COLLECTOR
set -euo pipefail
collector_bin=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/smbfleet-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
bash "$root/deploy/ca.sh" dev "$work/pki" >/dev/null

cat > "$work/bad.yaml" <<'YAML'
listen: everywhere
tls: {cert: pki/collector.pem, key: pki/nope.key}
database: {pool_size: 1000}
colour: blue
YAML
if "$collector_bin" --config "$work/bad.yaml" >"$work/out" 2>&1; then fail "bad config accepted"; fi
for want in "bad.yaml:1: listen" "tls.key: file not found" "tls.client_ca: required" \
            "database.dsn: required" "database.pool_size" "colour: unknown setting"; do
  grep -qF -- "$want" "$work/out" || { cat "$work/out"; fail "missing '$want'"; }
done

cat > "$work/deaddb.yaml" <<'YAML'
listen: 127.0.0.1:0
tls: {cert: pki/collector.pem, key: pki/collector.key, client_ca: pki/ca.pem}
database: {dsn: 'postgresql://smbfleet:hunter2@127.0.0.1:1/smbfleet', startup_timeout: 2s}
YAML
# It retries for database.startup_timeout, then exits naming the database and the reason.
if timeout 60 "$collector_bin" --config "$work/deaddb.yaml" >"$work/out" 2>&1; then fail "started without a database"; fi
grep -q "not reachable after" "$work/out" || { cat "$work/out"; fail "no clear database error"; }
grep -q "host=127.0.0.1" "$work/out" || { cat "$work/out"; fail "database address not named"; }
if grep -q hunter2 "$work/out"; then fail "password printed"; fi

cat > "$work/badkey.yaml" <<'YAML'
listen: 127.0.0.1:0
tls: {cert: pki/collector.pem, key: pki/operator-admin.key, client_ca: pki/ca.pem}
database: {dsn: 'postgresql://127.0.0.1:1/x'}
YAML
if "$collector_bin" --config "$work/badkey.yaml" >"$work/out" 2>&1; then fail "mismatched key accepted"; fi
grep -q "does not match the certificate" "$work/out" || { cat "$work/out"; fail "no key mismatch error"; }
echo PASS

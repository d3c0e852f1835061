#!/usr/bin/env bash
# smbfleetctl (and the agent: both use common/tls MutualTlsChannelCredentials) will not talk to
# a server that offers only TLS 1.1, and does with one that offers TLS 1.2. The server is
# openssl s_server; its log says whether a handshake completed.
#   client_tls_test.sh SMBFLEETCTL
set -euo pipefail
ctl_bin=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../deploy/lib.sh
source "$root/deploy/lib.sh"
work=$(mktemp -d /tmp/smbfleet-tlsver.XXXXXX)
server_pid=
cleanup() {
  [[ -z "$server_pid" ]] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
bash "$root/deploy/ca.sh" dev "$work/pki" >/dev/null
# s_server stops at the end of its standard input: give it one that never ends.
mkfifo "$work/stdin"
exec 4<>"$work/stdin"

# serve VERSION_FLAG: an s_server that offers only that version (SECLEVEL=0 so that OpenSSL 3
# itself still allows TLS 1.1); its log is $work/server.log. A free port can be taken by a test
# running beside this one before s_server binds it: then another port.
serve() {
  local attempt
  for attempt in 1 2 3 4 5; do
    [[ -z "$server_pid" ]] || { kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }
    port=$(free_port)
    : >"$work/server.log"
    openssl s_server -accept "127.0.0.1:$port" -cert "$work/pki/collector.pem" \
      -key "$work/pki/collector.key" "$1" -cipher 'DEFAULT:@SECLEVEL=0' <"$work/stdin" \
      >>"$work/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 50); do
      kill -0 "$server_pid" 2>/dev/null || break  # exited: the port was taken
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
      sleep 0.1
    done
    grep -q "Address already in use" "$work/server.log" || break
  done
  fail "s_server $1 did not start: $(cat "$work/server.log")"
}

call() {
  timeout 20 "$ctl_bin" --collector "127.0.0.1:$port" --cert "$work/pki/operator-admin.pem" \
    --key "$work/pki/operator-admin.key" --ca "$work/pki/ca.pem" hosts >"$work/ctl.out" 2>&1 || true
}

echo "-- control: openssl s_client completes a TLS 1.1 handshake with the 1.1-only server"
serve -tls1_1
timeout 3 openssl s_client -connect "127.0.0.1:$port" -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' \
  -CAfile "$work/pki/ca.pem" < <(sleep 1) >"$work/client.out" 2>&1 || true
grep -q "Protocol *: TLSv1.1" "$work/client.out" ||
  fail "the control handshake did not negotiate TLS 1.1: $(cat "$work/client.out")"
sleep 0.5
grep -q "CIPHER is" "$work/server.log" || fail "s_server did not log the control handshake"

echo "-- smbfleetctl refuses the TLS 1.1-only server"
serve -tls1_1
call
sleep 0.5
if grep -q "CIPHER is" "$work/server.log"; then
  fail "smbfleetctl completed a handshake with a TLS 1.1-only server: $(cat "$work/server.log")"
fi
grep -Eqi "wrong version number|unsupported protocol|protocol version" "$work/server.log" ||
  fail "s_server did not see a refused handshake: $(cat "$work/server.log"; cat "$work/ctl.out")"

echo "-- control: smbfleetctl completes a TLS 1.2 handshake"
serve -tls1_2
call
sleep 0.5
grep -q "CIPHER is" "$work/server.log" ||
  fail "smbfleetctl did not complete a TLS 1.2 handshake: $(cat "$work/server.log"; cat "$work/ctl.out")"
echo PASS

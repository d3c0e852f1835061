# shellcheck shell=bash
# A delayed network path between two network namespaces, with a private smbd at one end
# (sourced by delay_link_test.sh, throughput.sh and tests/bench/cost_model_validate_link.sh;
# docs/netpath.md).
#
#   source tests/netpath/lib.sh
#   netpath_check || exit 77             # root, ip, network namespaces; prints why not
#   netpath_up LINK_BIN ONE_WAY_MS [RATE_MBIT] [QUEUE_PACKETS] [MTU]
#                                        namespaces "server" and "client", the link between
#                                        them (MTU 1500 unless given), smbd on
#                                        $netpath_server_ip:445 in "server"
#   netpath_hold NAME                    a real smbclient session from "client" to share demo
#   netpath_get NAME FILE                `get FILE /dev/null` in that session; prints KiB/s
#   netpath_min_rtts                     min_rtt (ms) of each smbd-side TCP connection, one a line
#   netpath_down                         stops everything netpath_up started (also on EXIT);
#                                        sets $netpath_link_stats to the link's JSON counters
#
# Names carry the PID of the shell, so two runs side by side do not meet. Everything started is
# stopped by PID and the namespaces are deleted on exit, also when a step fails.
set -euo pipefail

netpath_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
netpath_lab="$netpath_root/deploy/samba-lab.sh"
netpath_server_ns="smbfleet-np-server-$$"
netpath_client_ns="smbfleet-np-client-$$"
netpath_server_dev=npserver0
netpath_client_dev=npclient0
netpath_server_ip=10.77.0.1
netpath_client_ip=10.77.0.2
netpath_work=
netpath_link_pid=
netpath_up_done=0
netpath_link_stats=

netpath_log() { echo "netpath: $*" >&2; }

# netpath_check: 0 when this shell can build the path; else prints why and returns 1.
netpath_check() {
  if ((EUID != 0)); then
    echo "netpath: needs root (network namespaces, TAP devices, smbd)"
    return 1
  fi
  local tool
  for tool in ip ss smbd smbclient; do
    if ! command -v "$tool" >/dev/null 2>&1 && ! PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1; then
      echo "netpath: missing $tool (Debian packages iproute2, samba, smbclient)"
      return 1
    fi
  done
  if [[ ! -c /dev/net/tun ]]; then
    echo "netpath: no /dev/net/tun (TAP devices unavailable)"
    return 1
  fi
  local probe="smbfleet-np-probe-$$" out
  if ! out=$(ip netns add "$probe" 2>&1); then
    echo "netpath: 'ip netns add' is not permitted here: $out"
    return 1
  fi
  if ! out=$(ip -n "$probe" tuntap add dev npprobe0 mode tap 2>&1); then
    ip netns del "$probe"
    echo "netpath: TAP devices cannot be created here: $out"
    return 1
  fi
  ip netns del "$probe"
}

# netpath_up LINK_BIN ONE_WAY_MS [RATE_MBIT] [QUEUE_PACKETS] [MTU]
netpath_up() {
  local link_bin=$1 one_way_ms=$2 rate_mbit=${3:-0} queue_packets=${4:-8192} mtu=${5:-1500}
  [[ -x "$link_bin" ]] || { netpath_log "link program '$link_bin' is not executable"; return 1; }
  ((netpath_up_done == 0)) || { netpath_log "the path is already up"; return 1; }
  netpath_up_done=1
  trap netpath_down EXIT
  netpath_work=$(mktemp -d /tmp/smbfleet-netpath.XXXXXX)
  chmod 755 "$netpath_work"
  ip netns add "$netpath_server_ns"
  ip netns add "$netpath_client_ns"
  ip -n "$netpath_server_ns" link set lo up
  ip -n "$netpath_client_ns" link set lo up

  # The link outlives no test: it stops by itself after 15 minutes at the latest.
  setsid "$link_bin" --dev_a="$netpath_server_dev" --netns_a="$netpath_server_ns" \
    --dev_b="$netpath_client_dev" --netns_b="$netpath_client_ns" \
    --delay_ms_ab="$one_way_ms" --delay_ms_ba="$one_way_ms" --rate_mbit="$rate_mbit" \
    --queue_packets="$queue_packets" --max_seconds=900 --stats="$netpath_work/link-stats.json" \
    </dev/null >"$netpath_work/link.out" 2>&1 &
  netpath_link_pid=$!
  local i
  for ((i = 0; i < 200; i++)); do
    grep -qx ready "$netpath_work/link.out" 2>/dev/null && break
    if ! kill -0 "$netpath_link_pid" 2>/dev/null; then
      netpath_log "the link program stopped: $(cat "$netpath_work/link.out")"
      return 1
    fi
    sleep 0.05
  done
  grep -qx ready "$netpath_work/link.out" || { netpath_log "the link program did not get ready in 10 s"; return 1; }
  ip -n "$netpath_server_ns" addr add "$netpath_server_ip/24" dev "$netpath_server_dev"
  ip -n "$netpath_server_ns" link set "$netpath_server_dev" mtu "$mtu" up
  ip -n "$netpath_client_ns" addr add "$netpath_client_ip/24" dev "$netpath_client_dev"
  ip -n "$netpath_client_ns" link set "$netpath_client_dev" mtu "$mtu" up

  # smbd in the server namespace, bound to its end of the link.
  SAMBA_LAB_ADDRESS=$netpath_server_ip ip netns exec "$netpath_server_ns" \
    bash "$netpath_lab" start "$netpath_work/lab" 445 >/dev/null
}

# netpath_hold NAME: a real smbclient session from the client namespace, held until netpath_down.
netpath_hold() {
  SAMBA_LAB_ADDRESS=$netpath_server_ip ip netns exec "$netpath_client_ns" \
    bash "$netpath_lab" hold "$netpath_work/lab" "$1" demo
}

# netpath_file NAME MIB: a file of MIB MiB of random bytes in share demo.
netpath_file() {
  head -c "$(($2 << 20))" /dev/urandom >"$netpath_work/lab/shares/demo/$1"
}

# netpath_get NAME FILE: copies FILE from share demo to /dev/null in held session NAME and prints
# the rate smbclient reports, in KiB/s.
netpath_get() {
  local name=$1 file=$2 out="$netpath_work/lab/holds/$1.out" before i rate
  before=$(grep -c '^getting file' "$out" || true)
  SAMBA_LAB_ADDRESS=$netpath_server_ip SAMBA_LAB_SEND_SECONDS=120 \
    bash "$netpath_lab" send "$netpath_work/lab" "$name" "get $file /dev/null"
  for ((i = 0; i < 100; i++)); do
    (($(grep -c '^getting file' "$out" || true) > before)) && break
    sleep 0.05
  done
  rate=$(grep '^getting file' "$out" | tail -n +$((before + 1)) | head -1 |
    sed -n 's/.* as \/dev\/null (\([0-9.]*\) KiloBytes\/sec).*/\1/p')
  if [[ -z "$rate" ]]; then
    netpath_log "get $file in session $name did not complete:"
    tail -5 "$out" >&2
    return 1
  fi
  echo "$rate"
}

# netpath_min_rtts: the kernel's min_rtt (ms) of every smbd-side TCP connection on port 445.
netpath_min_rtts() {
  ip netns exec "$netpath_server_ns" ss -tinH state established '( sport = :445 )' |
    grep -o 'minrtt:[0-9.]*' | cut -d: -f2
}

netpath_down() {
  local rc=$?
  set +e
  if [[ -n "$netpath_work" && -d "$netpath_work/lab" ]]; then
    bash "$netpath_lab" stop "$netpath_work/lab" >/dev/null 2>&1
  fi
  if [[ -n "$netpath_link_pid" ]]; then
    kill -TERM "$netpath_link_pid" 2>/dev/null
    local i
    for ((i = 0; i < 100; i++)); do
      kill -0 "$netpath_link_pid" 2>/dev/null || break
      sleep 0.05
    done
    kill -KILL "$netpath_link_pid" 2>/dev/null
    wait "$netpath_link_pid" 2>/dev/null
    netpath_link_pid=
  fi
  ip netns del "$netpath_server_ns" 2>/dev/null
  ip netns del "$netpath_client_ns" 2>/dev/null
  if [[ -n "$netpath_work" ]]; then
    # shellcheck disable=SC2034  # read by the scripts that source this file
    netpath_link_stats=$(cat "$netpath_work/link-stats.json" 2>/dev/null)
    rm -rf "$netpath_work"
  fi
  netpath_work=
  netpath_up_done=0
  return "$rc"
}

# The median of the numbers on standard input, one per line.
netpath_median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

#!/usr/bin/env bash
# A real SMB session through smbfleet-delay-link has the round trip the link was given.
#
#   delay_link_test.sh LINK_BIN
#
# For one-way delays of 0.25 ms and 30 ms: smbd in one network namespace, a held smbclient
# session from the other, a 32 MiB `get` through the link; then the kernel's min_rtt of smbd's
# socket of that session must lie in [2 x delay, 2 x delay + max(2 ms, 10% of 2 x delay)]:
# never below the configured round trip (the link delays every frame at least that long), and
# above it by no more than the forwarding, scheduling and TCP stack time of the fastest of the
# session's round trips. Prints the throughput of each get (not asserted: docs/netpath.md).
# Then, with MTU 9000 at both ends, a 32 MiB get must cross in frames larger than MTU 1500's,
# none dropped as oversize.
# Exits 77 (skipped) when the machine cannot build the path (no root or no network namespaces).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
# shellcheck source=lib.sh
source "$here/lib.sh"

(($# == 1)) || { echo "usage: delay_link_test.sh LINK_BIN" >&2; exit 2; }
link_bin=$1

# Bad input is refused before anything is created, with the flag and the value named.
for bad in "--delay_ms_ab=x" "--rate_mbit=-1" "--dev_b=bad/name"; do
  rc=0
  err=$("$link_bin" --dev_a=npa --dev_b=npb "$bad" 2>&1 >/dev/null) || rc=$?
  flag=${bad%%=*}
  value=${bad#*=}
  if ((rc != 2)) || [[ "$err" != *"$flag: '$value'"* ]]; then
    echo "FAIL: '$bad': want exit 2 and an error naming $flag '$value', got exit $rc: $err"
    exit 1
  fi
done

if ! why=$(netpath_check); then
  echo "SKIP: $why"
  exit 77
fi

failures=0
for one_way in 0.25 30; do
  netpath_up "$link_bin" "$one_way"
  netpath_file big.bin 32
  netpath_hold s1
  kib_per_second=$(netpath_get s1 big.bin)
  mapfile -t rtts < <(netpath_min_rtts)
  netpath_down
  mb_per_second=$(awk -v k="$kib_per_second" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')
  echo "one-way ${one_way} ms: get 32 MiB at ${mb_per_second} MB/s; smbd-side min_rtt (ms): ${rtts[*]:-none}"
  echo "  link counters: $netpath_link_stats"
  if ((${#rtts[@]} != 1)); then
    echo "FAIL: one-way ${one_way} ms: want exactly one established smbd connection, got ${#rtts[@]}"
    failures=$((failures + 1))
    continue
  fi
  if ! verdict=$(awk -v d="$one_way" -v r="${rtts[0]}" 'BEGIN {
      low = 2 * d; slack = 0.1 * low; if (slack < 2) slack = 2; high = low + slack
      printf "min_rtt %.3f ms, want [%.3f, %.3f]", r, low, high
      exit !(r >= low && r <= high) }'); then
    echo "FAIL: one-way ${one_way} ms: $verdict"
    failures=$((failures + 1))
  else
    echo "  ok: $verdict"
  fi
done

# Jumbo frames: with MTU 9000 at both ends, the get goes in frames larger than any of MTU 1500
# (1514 bytes with the Ethernet header), and the link drops none of them as oversize.
netpath_up "$link_bin" 0.25 0 8192 9000
netpath_file big.bin 32
netpath_hold jumbo
kib_per_second=$(netpath_get jumbo big.bin)
netpath_down
ab=$(grep -o '"direction": "ab"[^}]*' <<<"$netpath_link_stats")
counter() { grep -o "\"$1\": [0-9]*" <<<"$ab" | grep -o '[0-9]*$'; }
frames_out=$(counter framesOut)
bytes_out=$(counter bytesOut)
oversize=$(counter droppedOversize)
echo "MTU 9000: get 32 MiB at $kib_per_second KiB/s; server->client frames $frames_out, bytes $bytes_out, dropped oversize $oversize"
if [[ -z "$frames_out" ]] || ((frames_out == 0 || oversize != 0 || bytes_out / frames_out <= 1514)); then
  echo "FAIL: MTU 9000: want frames of more than 1514 bytes on average and none dropped oversize"
  failures=$((failures + 1))
else
  echo "  ok: $((bytes_out / frames_out)) bytes per frame on average"
fi
((failures == 0)) || exit 1
echo "PASS"

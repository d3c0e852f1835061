#!/usr/bin/env bash
# The cost model predicts the slowdown a real SMB transfer suffers from a longer round trip.
#
#   slowdown_test.sh LINK_BIN PREDICT_BIN
#
# Through smbfleet-delay-link at 1000 Mbit/s (queue 1000 frames), one-way 0.25 ms and 30 ms:
# smbd in one network namespace, a held smbclient session from the other, 3 gets of a 128 MiB
# file to /dev/null; the median is the point's figure. netpath_predict --client=smbclient gives
# the model's figure for the configured round trip. Asserted, each as measured / predicted:
#   - the 0.5 ms point (link-bound) and the 60 ms point (latency-bound, smbclient's window),
#     each within [0.75, 1.25];
#   - the slowdown, median at 60 ms / median at 0.5 ms, within [0.75, 1.25] of the model's.
# Why 25%: the link-bound point runs above the model by up to 9% (the model's link efficiency
# is the anchor's 86.4% payload share, Ethernet framing alone leaves 94.1%) and below it when
# the 2-core machine is busy (the link forwards each frame in user space: 0.79 seen under a
# load average of 10). The latency-bound point runs below the model's steady state by the part
# of each get spent in slow start and in its 4 request round trips (open, query, close, first
# read): about 10% of a 3 s get at 60 ms. The slowdown carries both. Under those margins the
# anchor's Windows window (0.93 MB) would predict a third of what smbclient carries at 60 ms:
# the test tells the two clients apart.
# Exits 77 (skipped) when the machine cannot build the path (no root or no network namespaces),
# when net.ipv4.tcp_wmem's max is not Linux's default 4 MiB (the window assumes it), and in a
# sanitizer build (NETPATH_INSTRUMENTED=1), after checking the predictor's input.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
# shellcheck source=lib.sh
source "$here/lib.sh"

(($# == 2)) || { echo "usage: slowdown_test.sh LINK_BIN PREDICT_BIN" >&2; exit 2; }
link_bin=$1
predict_bin=$2
rate_mbit=1000
queue=1000
mib=128
runs=3
low=0.75
high=1.25

# Bad input to the predictor is refused with the flag and the value named.
rc=0
err=$("$predict_bin" --link_mbit=1000 --rtt_ms=1 --client=macos 2>&1 >/dev/null) || rc=$?
if ((rc != 2)) || [[ "$err" != *"--client: 'macos'"* ]]; then
  echo "FAIL: --client=macos: want exit 2 and an error naming --client 'macos', got exit $rc: $err"
  exit 1
fi

if [[ "${NETPATH_INSTRUMENTED:-}" == 1 ]]; then
  echo "SKIP: a sanitizer build; the link program's throughput would be the sanitizer's"
  exit 77
fi
if ! why=$(netpath_check); then
  echo "SKIP: $why"
  exit 77
fi
# The model's smbclient window is 2/3 of Linux's default send buffer limit: another limit is
# another window, which the model does not read.
wmem_max=$(awk '{ print $3 }' /proc/sys/net/ipv4/tcp_wmem)
if [[ "$wmem_max" != 4194304 ]]; then
  echo "SKIP: net.ipv4.tcp_wmem max is $wmem_max, the model's smbclient window assumes 4194304"
  exit 77
fi
echo "TCP: $(cat /proc/sys/net/ipv4/tcp_congestion_control), tcp_wmem $(cat /proc/sys/net/ipv4/tcp_wmem)"

# predict RTT_MS CLIENT: the model's MB/s.
predict() {
  "$predict_bin" --link_mbit="$rate_mbit" --rtt_ms="$1" --client="$2" |
    sed -n 's/.*"predictedBytesPerSecond":\([0-9.eE+-]*\).*/\1/p' |
    awk '{ printf "%.3f", $1 / 1e6 }'
}
# within NAME MEASURED PREDICTED: prints the verdict; fails when measured / predicted is out.
within() {
  awk -v n="$1" -v m="$2" -v p="$3" -v lo="$low" -v hi="$high" 'BEGIN {
    r = m / p
    printf "%s: measured %.3f, predicted %.3f, measured / predicted %.3f, want [%s, %s]\n", n, m, p, r, lo, hi
    exit !(r >= lo && r <= hi) }'
}

declare -A measured predicted
for one_way in 0.25 30; do
  netpath_up "$link_bin" "$one_way" "$rate_mbit" "$queue"
  netpath_file big.bin "$mib"
  netpath_hold s1
  figures=()
  for ((run = 1; run <= runs; run++)); do
    kib=$(netpath_get s1 big.bin)
    figures+=("$(awk -v k="$kib" 'BEGIN { printf "%.2f", k * 1024 / 1e6 }')")
  done
  mapfile -t rtts < <(netpath_min_rtts)
  netpath_down
  rtt=$(awk -v d="$one_way" 'BEGIN { printf "%g", 2 * d }')
  measured[$one_way]=$(printf '%s\n' "${figures[@]}" | netpath_median)
  predicted[$one_way]=$(predict "$rtt" smbclient)
  echo "one-way $one_way ms (RTT $rtt ms, min_rtt ${rtts[*]:-none} ms): ${figures[*]} MB/s," \
    "median ${measured[$one_way]}; model: smbclient ${predicted[$one_way]}, windows $(predict "$rtt" windows)"
  echo "  link counters: $netpath_link_stats"
done

failures=0
within "0.5 ms point (MB/s)" "${measured[0.25]}" "${predicted[0.25]}" || failures=$((failures + 1))
within "60 ms point (MB/s)" "${measured[30]}" "${predicted[30]}" || failures=$((failures + 1))
within "slowdown 0.5 -> 60 ms" \
  "$(awk -v a="${measured[30]}" -v b="${measured[0.25]}" 'BEGIN { print a / b }')" \
  "$(awk -v a="${predicted[30]}" -v b="${predicted[0.25]}" 'BEGIN { print a / b }')" ||
  failures=$((failures + 1))
((failures == 0)) || { echo "FAIL: $failures of 3 outside the tolerance"; exit 1; }
echo "PASS"

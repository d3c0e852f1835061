#!/usr/bin/env bash
# Benchmark: SMB throughput through smbfleet-delay-link at each rate cap and one-way delay,
# beside the cost model's prediction for that link and round trip. Prints one JSON document.
# Not part of ctest (docs/netpath.md has a run and how to read it).
#
#   throughput.sh --link LINK_BIN --predict PREDICT_BIN [--runs N] [--mib M]
#                 [--rates "1000 100"] [--one-way "0.25 30"] [--queue PACKETS]
#                 [--tolerance FRACTION] [--client smbclient|windows]
#
# For each (rate, one-way delay): smbd in one namespace, one held smbclient session from the
# other, N gets of an M MiB file to /dev/null (the median is the figure), the smbd-side min_rtt
# of the session, and netpath_predict's figure for the configured round trip (2 x one-way) with
# the window of --client (default smbclient, the client measured here; windows is the anchor's,
# reported beside it as predictedWindowsMBps).
# The slowdown from the smallest to the largest delay at each rate is set beside the model's.
# A point or slowdown is within tolerance when measured / predicted lies in 1 +- FRACTION
# (default 0.15; docs/netpath.md says why); it is reported, not asserted.
# Needs root. Bounded: with the defaults (3 runs, 64 MiB) about two minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
# shellcheck source=lib.sh
source "$here/lib.sh"

link_bin=""
predict_bin=""
runs=3
mib=64
rates="1000 100"
one_ways="0.25 30"
queue=1000
tolerance=0.15
client=smbclient

die() {
  echo "netpath throughput: $*" >&2
  exit 1
}

while (($#)); do
  case "$1" in
    --link) link_bin=$2; shift 2 ;;
    --predict) predict_bin=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --mib) mib=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --one-way) one_ways=$2; shift 2 ;;
    --queue) queue=$2; shift 2 ;;
    --tolerance) tolerance=$2; shift 2 ;;
    --client) client=$2; shift 2 ;;
    *) die "unknown argument '$1' (see the header of $0)" ;;
  esac
done
[[ -x "$link_bin" ]] || die "--link must name the built smbfleet-delay-link"
[[ -x "$predict_bin" ]] || die "--predict must name the built netpath_predict"
[[ "$runs" =~ ^[0-9]+$ ]] && ((runs >= 1 && runs <= 9)) || die "--runs: want 1..9, got '$runs'"
[[ "$mib" =~ ^[0-9]+$ ]] && ((mib >= 1 && mib <= 1024)) || die "--mib: want 1..1024, got '$mib'"
[[ "$queue" =~ ^[0-9]+$ ]] && ((queue >= 1)) || die "--queue: want a positive count, got '$queue'"
[[ "$tolerance" =~ ^0?\.[0-9]+$ ]] || die "--tolerance: want a fraction like 0.15, got '$tolerance'"
[[ "$client" == smbclient || "$client" == windows ]] || die "--client: want smbclient or windows, got '$client'"
for r in $rates; do
  [[ "$r" =~ ^[0-9]+$ ]] && ((r >= 1)) || die "--rates: '$r' is not a positive number of Mbit/s"
done
for d in $one_ways; do
  [[ "$d" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--one-way: '$d' is not a number of milliseconds"
done
why=$(netpath_check) || die "$why"


results=()
for rate in $rates; do
  for one_way in $one_ways; do
    netpath_up "$link_bin" "$one_way" "$rate" "$queue"
    netpath_file big.bin "$mib"
    netpath_hold s1
    rates_mb=()
    for ((run = 1; run <= runs; run++)); do
      kib=$(netpath_get s1 big.bin)
      rates_mb+=("$(awk -v k="$kib" 'BEGIN { printf "%.2f", k * 1024 / 1e6 }')")
    done
    min_rtt=$(netpath_min_rtts | head -1)
    netpath_down
    med=$(printf '%s\n' "${rates_mb[@]}" | netpath_median)
    rtt=$(awk -v d="$one_way" 'BEGIN { printf "%g", 2 * d }')
    predicted=$("$predict_bin" --link_mbit="$rate" --rtt_ms="$rtt" --client="$client")
    windows=$("$predict_bin" --link_mbit="$rate" --rtt_ms="$rtt" --client=windows)
    drops=$(jq '[.directions[] | .droppedQueueFull] | add' <<<"$netpath_link_stats")
    results+=("$(jq -cn --argjson rate "$rate" --argjson one_way "$one_way" --argjson rtt "$rtt" \
      --argjson min_rtt "${min_rtt:-null}" --argjson med "$med" --argjson drops "$drops" \
      --argjson predicted "$predicted" --argjson windows "$windows" --argjson runs "[$(IFS=,; echo "${rates_mb[*]}")]" '{
        rateMbit: $rate, oneWayMs: $one_way, rttMs: $rtt, measuredMinRttMs: $min_rtt,
        runsMBps: $runs, medianMBps: $med,
        predictedMBps: (($predicted.predictedBytesPerSecond / 1e6) * 100 | round / 100),
        predictedLimit: $predicted.limit, modelWindowBytes: ($predicted.windowBytes | round),
        predictedWindowsMBps: (($windows.predictedBytesPerSecond / 1e6) * 100 | round / 100),
        measuredOverPredicted: (($med / ($predicted.predictedBytesPerSecond / 1e6)) * 1000 | round / 1000),
        bytesInFlight: (($med * 1e6 * $rtt / 1000) | round),
        linkDrops: $drops}')")
  done
done

printf '%s\n' "${results[@]}" | jq -s --argjson mib "$mib" --argjson runs "$runs" \
  --argjson queue "$queue" --argjson tol "$tolerance" --arg client "$client" \
  --arg cc "$(sysctl -n net.ipv4.tcp_congestion_control)" \
  --arg rmem "$(sysctl -n net.ipv4.tcp_rmem)" --arg wmem "$(sysctl -n net.ipv4.tcp_wmem)" \
  --arg samba "$(smbd --version 2>/dev/null || /usr/sbin/smbd --version)" '
  def within: (. - 1) as $d | (if $d < 0 then -$d else $d end) <= $tol;
  {
    benchmark: "netpath_throughput", client: $client, fileMiB: $mib, runsPerPoint: $runs, queuePackets: $queue,
    samba: $samba, tcpCongestionControl: $cc, tcpRmem: $rmem, tcpWmem: $wmem, tolerance: $tol,
    points: [.[] | .withinTolerance = (.measuredOverPredicted | within)],
    slowdowns: [group_by(.rateMbit)[] | sort_by(.oneWayMs) | select(length > 1) | {
      rateMbit: .[0].rateMbit, fromRttMs: .[0].rttMs, toRttMs: .[-1].rttMs,
      measured: ((.[-1].medianMBps / .[0].medianMBps) * 1000 | round / 1000),
      predicted: ((.[-1].predictedMBps / .[0].predictedMBps) * 1000 | round / 1000)}
      | .withinTolerance = ((.measured / .predicted) | within)]}'

#!/usr/bin/env bash
# Checks the cost model across a link that sets the pace, as a real server's does: for each
# (rate cap, one-way delay) of smbfleet-delay-link, smbd in one network namespace and smbclient
# in another (tests/netpath/lib.sh), a large-file get under each posture (no protection;
# signing HMAC-SHA256, AES-128-CMAC, AES-128-GMAC; encryption AES-128-CCM, AES-128-GCM,
# AES-256-GCM, AES-256-CCM), measuring throughput and smbd's CPU seconds per byte; then
# cost_model_report predicts each posture for that link rate, that round trip (2 x one-way) and
# the smbclient window, and judges measured against predicted (docs/cost-model.md, "Validation
# across a link").
#
#   cost_model_validate_link.sh --link LINK_BIN --report REPORT_BIN [--rates "1000 100"]
#                               [--one-way "0.25 30"] [--runs N] [--mib M] [--queue PACKETS]
#                               [--nice N] [--statistic median|best] [--out DIR] [--markdown]
#                               [--mtu BYTES] [--postures "none enc-aes-128-ccm ..."]
#
# LINK_BIN is the built smbfleet-delay-link, REPORT_BIN the built cost_model_report. Postures are
# interleaved run by run, in a new random order each run, so that other work on the machine falls
# on all of them alike; each posture is judged on the median of its N runs (default 3), and the
# spread (min-max) is printed beside it. Each measurement is a new held session (the posture is
# negotiated at session setup) that first gets a warm-up file (16 MiB, or M if smaller), so that
# the measured get runs at TCP's steady state, as the model assumes (a fresh session at 60 ms
# spends a good part of 64 MiB in slow start), and its CPU leaves out the session setup. The
# throughput is smbclient's rate for the measured get; the CPU is smbd's during that get, read
# from a cpuacct cgroup holding smbd and its connection children (nanoseconds) where cgroup v1
# cpuacct is writable, else from /proc (utime + stime, clock ticks). smbd, smbclient and the
# link program run at nice N (default -10); nothing is pinned: the link's user-space forwarding
# needs a core too. Each measured line also carries the CPU seconds of the client (smbclient)
# and of the link program during the get, the host's idle CPU seconds and the load average; the
# JSON gives their medians per GB per point. --mtu sets the path's MTU (default 1500, what the
# model's link efficiency assumes; 9000 halves the link program's CPU). --postures measures a
# subset (diagnosis). Prints one JSON document (and, with --markdown, a table per point before
# it).
# Needs root, network namespaces, the Debian packages samba, smbclient, libnss-wrapper, iproute2,
# jq. Bounded: with the defaults (4 points, 8 postures, 3 runs of 16 + 64 MiB) about nine
# minutes, most of it at 100 Mbit. Not part of ctest.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
link_bin=""
report=""
rates="1000 100"
one_ways="0.25 30"
runs=3
mib=64
queue=1000
nice_level=-10
statistic=median
out=""
markdown=0
mtu=1500
only_postures=""

die() {
  echo "cost_model_validate_link: $*" >&2
  exit 1
}

while (($#)); do
  case "$1" in
    --link | --report | --rates | --one-way | --runs | --mib | --queue | --nice | --statistic | --out | --mtu | --postures)
      (($# >= 2)) || die "$1 wants a value"
      case "$1" in
        --link) link_bin=$2 ;;
        --report) report=$2 ;;
        --rates) rates=$2 ;;
        --one-way) one_ways=$2 ;;
        --runs) runs=$2 ;;
        --mib) mib=$2 ;;
        --queue) queue=$2 ;;
        --nice) nice_level=$2 ;;
        --statistic) statistic=$2 ;;
        --out) out=$2 ;;
        --mtu) mtu=$2 ;;
        --postures) only_postures=$2 ;;
      esac
      shift 2
      ;;
    --markdown) markdown=1; shift ;;
    *) die "unknown argument '$1' (see the header of $0)" ;;
  esac
done
[[ -x "$link_bin" ]] || die "--link must name the built smbfleet-delay-link, got '$link_bin'"
[[ -x "$report" ]] || die "--report must name the built cost_model_report, got '$report'"
[[ "$runs" =~ ^[0-9]+$ ]] && ((runs >= 1 && runs <= 15)) || die "--runs: want 1..15, got '$runs'"
[[ "$mib" =~ ^[0-9]+$ ]] && ((mib >= 8 && mib <= 1024)) || die "--mib: want 8..1024, got '$mib'"
[[ "$queue" =~ ^[0-9]+$ ]] && ((queue >= 1)) || die "--queue: want a positive count, got '$queue'"
[[ "$nice_level" =~ ^-?[0-9]+$ ]] && ((nice_level >= -20 && nice_level <= 19)) ||
  die "--nice: want -20..19, got '$nice_level'"
[[ "$statistic" == median || "$statistic" == best ]] || die "--statistic: want median or best, got '$statistic'"
[[ "$mtu" =~ ^[0-9]+$ ]] && ((mtu >= 576 && mtu <= 65000)) || die "--mtu: want 576..65000, got '$mtu'"
[[ -n "$rates" ]] || die "--rates: want at least one rate"
[[ -n "$one_ways" ]] || die "--one-way: want at least one delay"
for r in $rates; do
  [[ "$r" =~ ^[0-9]+$ ]] && ((r >= 1 && r <= 100000)) || die "--rates: '$r' is not a number of Mbit/s in 1..100000"
done
for d in $one_ways; do
  [[ "$d" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v d="$d" 'BEGIN { exit !(d > 0 && d <= 5000) }' ||
    die "--one-way: '$d' is not a number of milliseconds in (0, 5000]"
done
command -v jq >/dev/null || die "needs jq"
warm_mib=$((mib < 16 ? mib : 16))

# shellcheck source=postures.sh
source "$here/postures.sh"
if [[ -n "$only_postures" ]]; then
  for p in $only_postures; do
    [[ " ${postures[*]} " == *" $p "* ]] || die "--postures: '$p' is not one of: ${postures[*]}"
  done
  read -r -a postures <<<"$only_postures"
fi

# shellcheck source=../netpath/lib.sh
source "$here/../netpath/lib.sh"
why=$(netpath_check) || die "$why"

work=$(mktemp -d /tmp/smbfleet-costlink.XXXXXX)
[[ -n "$out" ]] || out="$work/out"
mkdir -p "$out"
cgroup=""
# The cgroup empties once smbd's processes have exited.
remove_cgroup() {
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -z "$cgroup" ]] && return 0
    rmdir "$cgroup" 2>/dev/null && cgroup="" && return 0
    sleep 0.05
  done
  echo "cost_model_validate_link: could not remove cgroup $cgroup" >&2
}
cleanup() {
  netpath_down
  remove_cgroup
  rm -f -- "$work/client.out"
  rmdir -- "$work" 2>/dev/null || true  # kept when --out is inside it
}


lab="$netpath_root/deploy/samba-lab.sh"
apply_posture() {
  local dir=$netpath_work/lab
  posture_conf "$1" >"$dir/conf.d/posture.conf"
  env "${labenv[@]}" testparm -s "$conf" >/dev/null 2>&1 || die "testparm rejects posture $1"
  env "${labenv[@]}" smbcontrol -s "$conf" smbd reload-config || die "reload-config failed"
}

# The CPU seconds (utime + stime) of one live process so far, from /proc.
proc_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.4f", ($12 + $13) / hz }' "/proc/$1/stat"
}

# The minor page faults of one live process so far (field 10 of /proc/PID/stat); empty when it
# is gone.
proc_faults() {
  awk '{ sub(/^.*\) /, ""); print $8 }' "/proc/$1/stat" 2>/dev/null
}

# The pid of the smbd process serving the one held session (its comm is plain "smbd", the
# helpers' smbd-notifyd and smbd-cleanupd); empty unless there is exactly one.
server_connection_pid() {
  local pids
  pids=$(ps -o pid=,comm= --ppid "$smbd_pid" | awk '$2 == "smbd" { print $1 }')
  [[ $(wc -w <<<"$pids") -eq 1 ]] && echo "$pids"
  return 0
}

# FAULTS_BEFORE FAULTS_AFTER: the difference as JSON, null when either is unknown.
faults_json() {
  if [[ -n "$1" && -n "$2" ]]; then echo $(($2 - $1)); else echo null; fi
}

# The host's idle CPU seconds so far, all cores together (idle + iowait of /proc/stat).
host_idle() {
  awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.4f", ($5 + $6) / hz; exit }' /proc/stat
}

# smbd's CPU seconds so far: the cgroup's usage, else from /proc: its reaped children's and
# those of its live children (the connection of a held session).
server_cpu() {
  if [[ -n "$cgroup" ]]; then
    awk '{ printf "%.6f", $1 / 1e9 }' "$cgroup/cpuacct.usage"
  else
    local pid files=("/proc/$smbd_pid/stat")
    for pid in $(ps -o pid= --ppid "$smbd_pid"); do files+=("/proc/$pid/stat"); done
    awk -v hz="$(getconf CLK_TCK)" -v parent="/proc/$smbd_pid/stat" \
      '{ t += (FILENAME == parent) ? $16 + $17 : $14 + $15 } END { printf "%.4f", t / hz }' \
      "${files[@]}" 2>/dev/null
  fi
}
wait_reaped() {
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -z "$(ps -o comm= --ppid "$smbd_pid" | grep -v -e notifyd -e cleanupd)" ]] && return 0
    sleep 0.05
  done
  die "smbd connection child did not exit"
}

# measure POSTURE RUN: a held session from the client namespace gets warm.bin, then large.bin;
# appends a measured line with large.bin's rate and smbd's CPU during that get alone.
measure() {
  local posture=$1 run=$2 before after kbps name="m-$1-$2" client_pid
  local client_before client_after link_before link_after idle_before idle_after
  local server_pid server_faults_before server_faults_after client_faults_before client_faults_after
  wait_reaped
  netpath_hold "$name" >/dev/null
  read -r client_pid _ <"$netpath_work/lab/holds/$name.pids"
  # The client (the held smbclient) at the same nice level as smbd and the link.
  renice -n "$nice_level" -p $(ip netns pids "$netpath_client_ns") >/dev/null
  netpath_get "$name" warm.bin >/dev/null || die "warm-up get failed under $posture"
  client_before=$(proc_cpu "$client_pid")
  server_pid=$(server_connection_pid)
  server_faults_before=$([[ -n "$server_pid" ]] && proc_faults "$server_pid")
  client_faults_before=$(proc_faults "$client_pid")
  link_before=$(proc_cpu "$netpath_link_pid")
  idle_before=$(host_idle)
  before=$(server_cpu)
  kbps=$(netpath_get "$name" large.bin) || die "get failed under $posture"
  after=$(server_cpu)
  idle_after=$(host_idle)
  link_after=$(proc_cpu "$netpath_link_pid")
  client_after=$(proc_cpu "$client_pid")
  server_faults_after=$([[ -n "$server_pid" ]] && proc_faults "$server_pid")
  client_faults_after=$(proc_faults "$client_pid")
  bash "$lab" release "$netpath_work/lab" "$name" >/dev/null
  jq -cn --arg p "$posture" --argjson r "$run" --argjson b "$((mib << 20))" --argjson k "$kbps" \
    --argjson c "$(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.6f", b - a }')" \
    --argjson cc "$(awk -v a="$client_before" -v b="$client_after" 'BEGIN { printf "%.4f", b - a }')" \
    --argjson lc "$(awk -v a="$link_before" -v b="$link_after" 'BEGIN { printf "%.4f", b - a }')" \
    --argjson ic "$(awk -v a="$idle_before" -v b="$idle_after" 'BEGIN { printf "%.4f", b - a }')" \
    --argjson sf "$(faults_json "$server_faults_before" "$server_faults_after")" \
    --argjson cf "$(faults_json "$client_faults_before" "$client_faults_after")" \
    --arg load "$(cut -d' ' -f1 /proc/loadavg)" \
    '{posture: $p, workload: "large", run: $r, bytes: $b, files: 0, seconds: ($b / ($k * 1024)),
      serverCpu: $c, clientCpu: $cc, linkCpu: $lc, hostIdleCpu: $ic, loadAverage: ($load | tonumber),
      serverFaults: $sf, clientFaults: $cf}' >>"$point_out/measured.jsonl"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
points=()
for rate in $rates; do
  for one_way in $one_ways; do
    point_out="$out/rate-$rate-oneway-$one_way"
    mkdir -p "$point_out/smbstatus"
    : >"$point_out/measured.jsonl"
    netpath_up "$link_bin" "$one_way" "$rate" "$queue" "$mtu"
    trap cleanup EXIT  # netpath_up set its own; this one also removes the cgroup
    conf=$(bash "$lab" conf "$netpath_work/lab")
    mapfile -t labenv < <(bash "$lab" env "$netpath_work/lab")
    netpath_file warm.bin "$warm_mib"
    netpath_file large.bin "$mib"
    chmod -R a+rX "$netpath_work/lab/shares/demo"
    smbd_pid=$(tr -dc '0-9' <"$netpath_work/lab/pid/smbd.pid")
    # Connection children fork from the parent: they inherit its nice value and its cgroup.
    renice -n "$nice_level" -p "$smbd_pid" $(ps -o pid= --ppid "$smbd_pid") "$netpath_link_pid" >/dev/null
    cgroup=""
    if [[ -d /sys/fs/cgroup/cpuacct && -w /sys/fs/cgroup/cpuacct ]] &&
      mkdir "/sys/fs/cgroup/cpuacct/smbfleet-costlink-$$-$rate-$one_way" 2>/dev/null; then
      cgroup="/sys/fs/cgroup/cpuacct/smbfleet-costlink-$$-$rate-$one_way"
      for pid in "$smbd_pid" $(ps -o pid= --ppid "$smbd_pid"); do
        echo "$pid" >"$cgroup/cgroup.procs"
      done
    fi
    # What the server really negotiates under each posture: smbstatus on a held session.
    for posture in "${postures[@]}"; do
      apply_posture "$posture"
      netpath_hold "check-$posture" >/dev/null
      env "${labenv[@]}" smbstatus -s "$conf" --json >"$point_out/smbstatus/$posture.json" 2>/dev/null || true
      bash "$lab" release "$netpath_work/lab" "check-$posture" >/dev/null
    done
    for ((run = 1; run <= runs; run++)); do
      # A new order every run, so that a burst of other work does not always hit the same posture.
      for posture in $(printf '%s\n' "${postures[@]}" | shuf); do
        apply_posture "$posture"
        measure "$posture" "$run"
      done
    done
    netpath_down
    set -e  # netpath_down turns it off
    remove_cgroup
    rtt=$(awk -v d="$one_way" 'BEGIN { printf "%g", 2 * d }')
    args=(--measured="$point_out/measured.jsonl" --status_dir="$point_out/smbstatus"
      --link_mbit="$rate" --rtt_ms="$rtt" --client=smbclient --statistic="$statistic")
    ((markdown)) && args+=(--markdown)
    "$report" "${args[@]}" >"$point_out/report.out"
    # The report prints its table (with --markdown) and then the JSON document, which starts
    # at the first line that is "{".
    if ((markdown)); then
      echo "### $rate Mbit/s, one-way $one_way ms (RTT $rtt ms)"
      echo
      awk '$0 == "{" { exit } { print }' "$point_out/report.out"
    fi
    # Beside the report: the CPU of the client (smbclient) and of the link program per get, in
    # seconds per GB (medians over all gets at this point, /proc utime + stime).
    awk 'f || $0 == "{" { f = 1; print }' "$point_out/report.out" |
      jq --slurpfile m "$point_out/measured.jsonl" '
        def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
        def per_gb(f): [$m[] | f / .bytes * 1e9] | median | . * 1000 | round / 1000;
        . + {clientCpuSecondsPerGB: per_gb(.clientCpu), linkCpuSecondsPerGB: per_gb(.linkCpu),
             mtu: '"$mtu"',
             clientCpuSecondsPerGBByPosture: ([$m[] | .posture] | unique | map({key: ., value: (. as $p | [$m[] | select(.posture == $p) | .clientCpu / .bytes * 1e9] | median | . * 1000 | round / 1000)}) | from_entries)}' \
        >"$point_out/report.json"
    points+=("$point_out/report.json")
  done
done
echo "measured $runs runs of ${#postures[@]} postures at each of $((${#points[@]})) points in $(($(date +%s) - start)) s; load average before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg)" >&2

jq -s --arg date "$(date -u +%Y-%m-%dT%H:%MZ)" --arg lb "$load_before" \
  --arg la "$(cut -d' ' -f1-3 /proc/loadavg)" --argjson runs "$runs" --argjson mib "$mib" \
  --argjson queue "$queue" --argjson nice "$nice_level" --arg statistic "$statistic" \
  --argjson warm "$warm_mib" --arg cc "$(sysctl -n net.ipv4.tcp_congestion_control)" \
  --arg rmem "$(sysctl -n net.ipv4.tcp_rmem)" --arg wmem "$(sysctl -n net.ipv4.tcp_wmem)" \
  --arg cpu "$([[ -d /sys/fs/cgroup/cpuacct && -w /sys/fs/cgroup/cpuacct ]] && echo cgroup-cpuacct || echo proc-stat)" \
  --arg samba "$(smbd --version 2>/dev/null || /usr/sbin/smbd --version)" '{
    benchmark: "cost_model_validate_link", date: $date, loadAverageBefore: $lb,
    loadAverageAfter: $la, logicalCores: .[0].logicalCores, samba: $samba, runsPerPosture: $runs,
    fileMiB: $mib, warmUpMiB: $warm, queuePackets: $queue, nice: $nice, statistic: $statistic,
    serverCpuFrom: $cpu, tcpCongestionControl: $cc, tcpRmem: $rmem, tcpWmem: $wmem,
    mtu: .[0].mtu, linkCpuSecondsPerGB: [.[] | {linkMbit, rttMs, linkCpuSecondsPerGB}],
    predictions: ([.[].comparedPredictions] | add),
    withinTwentyFivePercent: ([.[].withinTwentyFivePercent] | add),
    orderingDiscordantByThroughput: [.[] | (.linkMbit | tostring) + " Mbit " + (.rttMs | tostring) + " ms: " + .orderingByThroughput.discordant[]],
    orderingDiscordantByServerCpu: [.[] | (.linkMbit | tostring) + " Mbit " + (.rttMs | tostring) + " ms: " + .orderingByServerCpu.discordant[]],
    points: .}' "${points[@]}"
echo "measurements: $out" >&2

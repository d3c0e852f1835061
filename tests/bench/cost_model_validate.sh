#!/usr/bin/env bash
# Checks the cost model against real transfers: starts a private smbd on 127.0.0.1 (via
# deploy/samba-lab.sh), moves a large file and a set of small files with smbclient under each
# posture (no protection; signing HMAC-SHA256, AES-128-CMAC, AES-128-GMAC; encryption
# AES-128-CCM, AES-128-GCM, AES-256-GCM, AES-256-CCM), measuring throughput and server/client
# CPU seconds, then prints predicted vs measured (cost_model_report).
#
#   cost_model_validate.sh --report BIN [--runs N] [--port P] [--large-mib M] [--small-files K]
#                          [--out DIR] [--nice N] [--no-pin] [--statistic median|best]
#                          [--calibrate] [--markdown]
#
# BIN is the built tests/bench/cost_model_report. Postures are interleaved run by run, in a new
# random order each run, so that the load of other work on the machine falls on all of them
# alike; the report judges each posture by the median of its runs (or, with --statistic best,
# by its least disturbed run; see docs/cost-model.md) and prints the per-run spread. smbd and
# smbclient run at nice N (default -10) for the few minutes of the run, so that other work on
# a shared machine takes less of their CPU; --nice 0 measures without that. With two or more CPUs, smbd runs on CPU 1 and smbclient on CPU 0 (taskset), so
# that the server has a core of its own, as it would with the client on another machine, and
# the two do not migrate between cores from run to run; --no-pin leaves them to the scheduler.
# Needs root (smbd), the Debian packages samba, smbclient, libnss-wrapper and util-linux.
# Bounded: with the defaults (5 runs, 1 GiB, 1500 files) about three minutes on an idle
# machine, more under load. Not part of ctest.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
lab="$here/../../deploy/samba-lab.sh"
report=""
runs=5
port=44710
large_mib=1024
small_files=1500
out=""
nice_level=-10
pin=auto
extra=()

die() {
  echo "cost_model_validate: $*" >&2
  exit 1
}

while (($#)); do
  case "$1" in
    --report) report=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --large-mib) large_mib=$2; shift 2 ;;
    --small-files) small_files=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --nice) nice_level=$2; shift 2 ;;
    --no-pin) pin=no; shift ;;
    --statistic) extra+=("--statistic=$2"); shift 2 ;;
    --calibrate) extra+=(--calibrate); shift ;;
    --markdown) extra+=(--markdown); shift ;;
    *) die "unknown argument '$1' (see the header of $0)" ;;
  esac
done
[[ -x "$report" ]] || die "--report must name the built cost_model_report binary"
[[ "$runs" =~ ^[0-9]+$ ]] && ((runs >= 1 && runs <= 15)) || die "--runs: want 1..15"
[[ "$large_mib" =~ ^[0-9]+$ ]] && ((large_mib >= 16 && large_mib <= 2048)) || die "--large-mib: want 16..2048"
[[ "$small_files" =~ ^[0-9]+$ ]] && ((small_files >= 10 && small_files <= 5000)) || die "--small-files: want 10..5000"
[[ "$nice_level" =~ ^-?[0-9]+$ ]] && ((nice_level >= -20 && nice_level <= 19)) || die "--nice: want -20..19"
[[ -x /usr/bin/time ]] || die "needs /usr/bin/time (Debian package 'time')"
if [[ "$pin" == auto ]]; then
  pin=no
  (($(nproc) >= 2)) && command -v taskset >/dev/null && pin=yes
fi

# tmpfs when there is one: the disk is not what is being measured.
base=${TMPDIR:-/tmp}
[[ -d /dev/shm && -w /dev/shm ]] && base=/dev/shm
dir=$(mktemp -d "$base/smbfleet-costlab.XXXXXX")
chmod 755 "$dir"  # the share user must reach the shares below it
[[ -n "$out" ]] || out="$dir/out"
mkdir -p "$out"
cleanup() {
  bash "$lab" stop "$dir/lab" >/dev/null 2>&1 || true
  rm -rf -- "$dir/lab" "$dir/dl" "$dir/time.out" "$dir/client.out"
  rmdir -- "$dir" 2>/dev/null || true  # kept when --out is inside it
}
trap cleanup EXIT

bash "$lab" start "$dir/lab" "$port" >/dev/null
conf=$(bash "$lab" conf "$dir/lab")
mapfile -t labenv < <(bash "$lab" env "$dir/lab")
share="$dir/lab/shares/demo"
head -c $((large_mib << 20)) /dev/urandom >"$share/large.bin"
mkdir -p "$share/small" "$dir/dl"
for ((i = 0; i < small_files; i++)); do
  head -c 16384 /dev/urandom >"$share/small/f$i.bin"
done
chmod -R a+rX "$share"

smbd_pid=$(tr -dc '0-9' <"$dir/lab/pid/smbd.pid")
# Connection children fork from the parent and inherit its nice value and CPU affinity.
renice -n "$nice_level" -p "$smbd_pid" $(ps -o pid= --ppid "$smbd_pid") >/dev/null
client_cpu=()
if [[ "$pin" == yes ]]; then
  for pid in "$smbd_pid" $(ps -o pid= --ppid "$smbd_pid"); do
    taskset -apc 1 "$pid" >/dev/null
  done
  client_cpu=(taskset -c 0)
fi
# CPU seconds of smbd's reaped children (one child per client connection), from /proc.
server_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.4f", ($16 + $17) / hz }' "/proc/$smbd_pid/stat"
}
# Wait until the connection child of the last session has exited and been reaped.
wait_reaped() {
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -z "$(ps -o comm= --ppid "$smbd_pid" | grep -v -e notifyd -e cleanupd)" ]] && return 0
    sleep 0.05
  done
  die "smbd connection child did not exit"
}

# shellcheck source=postures.sh
source "$here/postures.sh"
apply_posture() {
  posture_conf "$1" >"$dir/lab/conf.d/posture.conf"
  env "${labenv[@]}" testparm -s "$conf" >/dev/null 2>&1 || die "testparm rejects posture $1"
  env "${labenv[@]}" smbcontrol -s "$conf" smbd reload-config || die "reload-config failed"
}

client=("${client_cpu[@]}" nice -n "$nice_level" smbclient -s "$dir/lab/client.conf" -p "$port" //127.0.0.1/demo -A "$dir/lab/smbfleet.auth")
# measure POSTURE WORKLOAD RUN BYTES FILES COMMANDS
measure() {
  local posture=$1 workload=$2 run=$3 bytes=$4 files=$5 cmds=$6 before after t0 t1 times
  wait_reaped
  before=$(server_cpu)
  t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$dir/time.out" "${client[@]}" -c "$cmds" >"$dir/client.out" 2>&1 ||
    die "smbclient failed under $posture: $(cat "$dir/client.out")"
  t1=$(date +%s.%N)
  wait_reaped
  after=$(server_cpu)
  times=$(tail -1 "$dir/time.out")
  local seconds
  if [[ "$workload" == large ]]; then
    # smbclient's own rate covers the transfer only, not the session setup.
    local kbps
    kbps=$(grep -o '([0-9.]* KiloBytes/sec)' "$dir/client.out" | head -1 | tr -dc '0-9.')
    [[ -n "$kbps" ]] || die "no transfer rate in smbclient output under $posture: $(cat "$dir/client.out")"
    seconds=$(awk -v b="$bytes" -v k="$kbps" 'BEGIN { printf "%.6f", b / (k * 1024) }')
  else
    seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
  fi
  awk -v p="$posture" -v w="$workload" -v r="$run" -v b="$bytes" -v f="$files" -v s="$seconds" \
    -v sc="$(awk -v a="$before" -v b="$after" 'BEGIN { print b - a }')" -v t="$times" \
    'BEGIN { split(t, u, " "); printf "{\"posture\":\"%s\",\"workload\":\"%s\",\"run\":%d,\"bytes\":%d,\"files\":%d,\"seconds\":%s,\"serverCpu\":%s,\"clientCpu\":%s}\n", p, w, r, b, f, s, sc, u[1] + u[2] }' \
    >>"$out/measured.jsonl"
}

: >"$out/measured.jsonl"
mkdir -p "$out/smbstatus"
# Check that each posture is what the server really negotiates: smbstatus on a held session.
for posture in "${postures[@]}"; do
  apply_posture "$posture"
  bash "$lab" hold "$dir/lab" check demo >/dev/null
  env "${labenv[@]}" smbstatus -s "$conf" --json >"$out/smbstatus/$posture.json" 2>/dev/null || true
  bash "$lab" release "$dir/lab" check
done

start=$(date +%s)
for ((run = 1; run <= runs; run++)); do
  # A new order every run, so that a burst of other work does not always hit the same posture.
  for posture in $(printf '%s\n' "${postures[@]}" | shuf); do
    apply_posture "$posture"
    measure "$posture" large "$run" $((large_mib << 20)) 0 'get large.bin /dev/null'
    measure "$posture" connect "$run" 0 0 'cd small'
    measure "$posture" small "$run" $((small_files * 16384)) "$small_files" \
      "prompt OFF; cd small; lcd $dir/dl; mget *"
  done
done
echo "measured $((runs * ${#postures[@]})) runs per workload in $(($(date +%s) - start)) s at nice $nice_level, pinned: $pin; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$report" --measured="$out/measured.jsonl" --status_dir="$out/smbstatus" "${extra[@]}"
echo "measurements: $out/measured.jsonl" >&2

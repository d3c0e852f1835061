#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang-14 (libFuzzer, ASan, UBSan) in their own
# tree and runs each for a set time. New inputs and crash artefacts go to a scratch directory,
# never into the committed corpora; a crash becomes a committed corpus file and a fix by hand
# (docs/fuzzing.md). Prints one JSON object per target as it finishes:
#   {"target":..,"seconds":..,"ran_seconds":..,"executions":..,"exec_per_sec":..,"corpus_start":..,
#    "corpus_end":..,"new_units":..,"cov_start":..,"cov_end":..,"crash_count":..,"crashes":[paths],
#    "log":path}
# Exits non-zero when a target crashed or left an artefact (or did not build).
#
#   deploy/fuzz.sh [--minutes N] [--parallel N] [--scratch DIR] [--keep-going] [--build-only]
#                  [TARGET...]
#
# --minutes: per target (default 10; a fraction is fine). --parallel: targets at once (default 1;
# the fuzzers run under nice). --scratch: where corpora grow and artefacts land (default a new
# /tmp/smbfleet-fuzz.XXXXXX, kept). --keep-going: libFuzzer's fork mode, which goes on after a
# crash (to look past a known finding; every crash still lands in the artefacts). TARGETs: names
# of tests/fuzz folders (default all).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

minutes=10
parallel=1
scratch=
build_only=0
keep_going=()
targets=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --keep-going) keep_going=(-fork=1 -ignore_crashes=1); shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
  # The order to fuzz them in when time is short: wire input first, then host-supplied text.
  targets=(report_request ps_json windows_cmdlets windows_event_xml samba_smbstatus
           samba_testparm policy_file agent_config collector_config)
fi
for t in "${targets[@]}"; do
  [[ -f "$root/tests/fuzz/$t/$t.cc" ]] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
done
seconds=$(awk -v m="$minutes" 'BEGIN { s = int(m * 60); if (s < 1) s = 1; print s }')

for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool missing (deploy/setup.sh --tests)" >&2; exit 2; }
done

build=${SMBFLEET_FUZZ_BUILD_DIR:-$root/build-fuzz}
echo "== build ($build)" >&2
# No -Werror here: the GCC build gates warnings; clang's own would only stop the fuzzing.
CC=clang-14 CXX=clang++-14 configure_tree "$root" "$build" -DSMBFLEET_FUZZ=ON \
  -DSMBFLEET_WERROR=OFF -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only"
cmake --build "$build" -j2 --target "${targets[@]/#/fuzz_}" >&2
[[ $build_only -eq 0 ]] || exit 0

if [[ -z "$scratch" ]]; then scratch=$(mktemp -d /tmp/smbfleet-fuzz.XXXXXX); fi
mkdir -p "$scratch"
echo "== fuzzing ${#targets[@]} target(s), ${seconds}s each, $parallel at once; scratch $scratch" >&2

export ASAN_OPTIONS=detect_leaks=1
export LSAN_OPTIONS=suppressions=$root/deploy/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# run_target NAME: fuzzes one target and prints its JSON line.
run_target() {
  local t=$1 dir=$scratch/$1 dict=() rc=0
  mkdir -p "$dir/corpus" "$dir/artifacts"
  [[ -f "$root/tests/fuzz/$t/$t.dict" ]] && dict=("-dict=$root/tests/fuzz/$t/$t.dict")
  # The scratch corpus comes first: libFuzzer writes new inputs only to the first directory.
  nice -n 10 "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=30 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${dict[@]}" \
    "${keep_going[@]}" \
    "$dir/corpus" "$root/tests/fuzz/$t/corpus" >"$dir/fuzz.log" 2>&1 || rc=$?
  python3 - "$t" "$seconds" "$dir" "$rc" <<'PY'
import json, os, re, sys
target, seconds, d, rc = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
log = open(os.path.join(d, "fuzz.log"), errors="replace").read()
def stat(name):
    m = re.search(r"stat::%s:\s+(\d+)" % name, log)
    return int(m.group(1)) if m else None
def status_line(kind):  # "#123 INITED cov: 456 ft: 789 corp: 12/3456b ..."
    lines = [l for l in log.splitlines() if re.match(r"#\d+\s+%s" % kind, l)]
    return lines[-1] if lines else ""
def field(line, name):
    m = re.search(r"%s: (\d+)" % name, line)
    return int(m.group(1)) if m else None
inited = status_line("INITED")
last = [l for l in log.splitlines() if re.match(r"#\d+\s+(NEW|REDUCE|pulse|DONE|INITED|RELOAD)", l)]
last = last[-1] if last else ""
artifacts = os.path.join(d, "artifacts")
crashes = sorted(os.path.join(artifacts, f) for f in os.listdir(artifacts))
m = re.search(r"Done \d+ runs in (\d+) second", log)
ran = int(m.group(1)) if m else None
if ran is None and stat("average_exec_per_sec"):  # a crash ends the run early, without "Done"
    ran = round(stat("number_of_executed_units") / stat("average_exec_per_sec"))
executions, exec_per_sec = stat("number_of_executed_units"), stat("average_exec_per_sec")
# Fork mode (--keep-going) prints no stat:: lines: "#N: cov: C ft: F corp: K exec/s: E ... time: Ts".
forked = re.findall(r"^#(\d+): cov: (\d+) .*?corp: (\d+) exec/s:? (\d+).*?time: (\d+)s", log, re.M)
if executions is None and forked:
    executions, ran = int(forked[-1][0]), int(forked[-1][4])
    exec_per_sec = executions // ran if ran else None  # its own exec/s column stays 0
    last = "cov: %s corp: %s" % (forked[-1][1], forked[-1][2])
print(json.dumps({
    "target": target, "seconds": seconds, "ran_seconds": ran,
    "executions": executions, "exec_per_sec": exec_per_sec,
    "corpus_start": field(inited, "corp"), "corpus_end": field(last, "corp"),
    "new_units": stat("new_units_added"),
    "cov_start": field(inited, "cov"), "cov_end": field(last, "cov"),
    "peak_rss_mb": stat("peak_rss_mb"),
    # Fork mode can keep many artefacts of one finding: the first 20 are listed.
    "exit_code": rc, "crash_count": len(crashes), "crashes": crashes[:20],
    "log": os.path.join(d, "fuzz.log"),
}), flush=True)
PY
  [[ $rc -eq 0 && -z "$(ls -A "$dir/artifacts")" ]]
}

status=0
pids=()
for t in "${targets[@]}"; do
  run_target "$t" &
  pids+=($!)
  if [[ ${#pids[@]} -ge $parallel ]]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status

#!/usr/bin/env bash
# The Windows agent under Wine, end to end: smbfleet-agent.exe runs as Windows code (process
# launch of powershell.exe, TLS with its certificate, the spool on a Windows path, the report and
# the ack) against the real Linux collector and PostgreSQL.
#
#   SMBFLEET_BUILD_DIR=BUILD tests/windows/wine/run.sh AGENT_EXE
#
# BUILD is a Linux build tree (collector, smbfleetctl, the Linux agent, loadgen); AGENT_EXE is
# the cross-built smbfleet-agent.exe. powershell.exe is a stand-in
# (agent/platform/windows/testing/powershell_standin.cc, compiled here with mingw-w64) that
# replays a capture folder of tests/fixtures/windows/. What it checks:
#   - `run --once` with a configuration in a folder whose name has a space: the host's shares
#     and sessions reach `smbfleetctl host show`, and the spool is empty after the ack;
#   - `collect --once --source=windows-capture:DIR --format=json` on every fixture gives the Linux
#     build's JSON (objects' keys sorted, which also keeps the check to content should map order
#     ever vary again; collectedAt is the time of the run where the folder has no capture.json);
#   - bad input: a missing capture folder, no powershell.exe, a cmdlet that times out, a share
#     name and a capture folder name outside ASCII; the Event Log API as Wine provides it.
# The last line of stdout is the figures as JSON. KEEP_E2E=1 keeps the work folder.
# Environment: WINE64, WINESERVER, MINGW_CXX override the tools' paths.
set -euo pipefail
wine_here=$(cd "$(dirname "$0")" && pwd)
[[ $# -eq 1 ]] || { echo "usage: SMBFLEET_BUILD_DIR=BUILD $0 AGENT_EXE" >&2; exit 2; }
exe=$(realpath "$1")
[[ -f "$exe" ]] || { echo "FAIL: $1 does not exist" >&2; exit 1; }
wine=${WINE64:-/usr/lib/wine/wine64}
wineserver=${WINESERVER:-/usr/lib/wine/wineserver}
cxx=${MINGW_CXX:-x86_64-w64-mingw32-g++-posix}
for tool in "$wine" "$wineserver" "$cxx" python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing" >&2; exit 1; }
done
test_t0=$(date +%s%3N)

# shellcheck source-path=SCRIPTDIR source=../../fault/lib.sh
source "$wine_here/../../fault/lib.sh"
win_host=fs2022  # the agent certificate's name; the live run replays tests/fixtures/windows/ws2022
# shellcheck disable=SC2317 # fault_cleanup calls it
before_cleanup() {  # fault_cleanup runs it first: Wine's server for this prefix only
  [[ -n "${WINEPREFIX:-}" && -d "$WINEPREFIX" ]] && "$wineserver" -k 2>/dev/null
  return 0
}
fault_init wine --short "$win_host"
repo=$(cd "$wine_here/../../.." && pwd)
fixtures=$repo/tests/fixtures/windows
linux_agent=$SMBFLEET_BUILD_DIR/agent/smbfleet-agent

# win_path PATH: the Windows name of an absolute Linux path (Wine maps Z: to /).
win_path() { local p=${1//\//\\}; echo "Z:$p"; }

# canon FILE [DIR]: the JSON with every object's keys sorted; numbers keep their text. With the
# capture folder DIR: without a capture.json there, collectedAt is the time of the run, so it is
# left out.
canon() {
  local now=0
  [[ -n "${2:-}" && ! -f "$2/capture.json" ]] && now=1
  python3 -c '
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"),
                parse_int=lambda s: "\0num:" + s, parse_float=lambda s: "\0num:" + s)
if sys.argv[2] == "1":
    doc.pop("collectedAt", None)
print(json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=1))' "$1" "$now"
}

# agent_exe NAME ARGS...: the .exe under Wine, bounded; stdout in $work/NAME.out, stderr in
# $work/NAME.err; sets $rc and $elapsed_ms.
agent_exe() {
  local name=$1 t0
  shift
  t0=$(epoch_ms)
  rc=0
  timeout 300 "$wine" "$exe" "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  elapsed_ms=$(($(epoch_ms) - t0))
  ((rc != 124)) || fail "$name: the agent under Wine did not finish in 300 s"
}

# --- Wine prefix and the stand-in ------------------------------------------------------------
export WINEPREFIX=$work/wineprefix WINEDEBUG=-all
# Wine turns argv and Unix file names into UTF-16 through the locale's character set: under the C
# locale a non-ASCII path arrives mangled.
export LC_ALL=C.UTF-8
# No Mono or Gecko installer dialogs: the agent needs neither.
export WINEDLLOVERRIDES='mscoree,mshtml='
step "wineboot (a fresh prefix)"
mkdir -p "$WINEPREFIX"
# A server that stays until cleanup (wineserver -k), so each run does not start one again.
"$wineserver" -p || fail "wineserver did not start"
t0=$(epoch_ms)
timeout 300 "$wine" wineboot -i >"$work/wineboot.log" 2>&1 || fail "wineboot failed"
wineboot_ms=$(($(epoch_ms) - t0))
echo "   ${wineboot_ms} ms"

step "stand-in powershell.exe (mingw-w64)"
mkdir -p "$work/standin"
"$cxx" -std=c++17 -O2 -static -municode -Wall -Wextra -Werror -I "$repo" \
  "$repo/agent/platform/windows/testing/powershell_standin.cc" \
  "$repo/agent/platform/windows/shim/process_win.cc" \
  -o "$work/standin/powershell.exe" 2>"$work/standin-build.log" ||
  fail "the stand-in does not build: $(cat "$work/standin-build.log")"
ps_dir=$WINEPREFIX/drive_c/windows/system32/WindowsPowerShell/v1.0
standin_log=$work/standin-calls.log
# install_standin CAPTURE_DIR [CFG LINE...]: the stand-in where the agent looks for
# powershell.exe, replaying CAPTURE_DIR (a Linux path).
install_standin() {
  local capture=$1 line
  shift
  mkdir -p "$ps_dir"
  cp "$work/standin/powershell.exe" "$ps_dir/powershell.exe"
  {
    echo "capture $(win_path "$capture")"
    echo "log $(win_path "$standin_log")"
    for line in "$@"; do echo "$line"; done
  } >"$ps_dir/standin.cfg"
  : >"$standin_log"
}

# --- the collector and `run --once` ------------------------------------------------------------
step "collector with mutual TLS on loopback"
new_database
start_collector collector

step "run --once under Wine, configuration in a folder with a space in its name"
install_standin "$fixtures/ws2022"
conf_dir="$work/agent config"
mkdir -p "$conf_dir"
spool_win='C:\ProgramData\smbfleet\spool'
{
  echo "collector: {address: '127.0.0.1:$(<"$work/collector.port")', server_name: localhost, max_backoff: 1s}"
  echo "tls: {cert: '$(win_path "$work/pki/agent-$win_host.pem")', key: '$(win_path "$work/pki/agent-$win_host.key")', ca: '$(win_path "$work/pki/ca.pem")'}"
  echo "source: windows"
  echo "labels: {site: wine}"
  echo "schedule: {interval: 1h, splay: 0s, benchmark_interval: 24h, min_nudge_interval: 0s}"
  echo "spool: {dir: '$spool_win'}"
  echo "trust: $(trust_yaml)"
} >"$conf_dir/agent.yaml"
agent_exe agent-run run --once --config "$(win_path "$conf_dir/agent.yaml")"
run_ms=$elapsed_ms
((rc == 0)) || fail "run --once exited $rc: $(tail -20 "$work/agent-run.err")"
ctl admin host show "$win_host" --format=json >"$work/host-show.json" ||
  fail "host show $win_host: $(cat "$work/host-show.json")"
(cd "$fixtures" && "$linux_agent" collect --once --source=windows-capture:ws2022 --format=json) \
  >"$work/ws2022.linux.json"
# The collector's view of the host against what the same fixture gives on Linux.
python3 - "$work/host-show.json" "$work/ws2022.linux.json" <<'PY' || fail "host show differs from the fixture"
import json, sys
shown = json.load(open(sys.argv[1], encoding="utf-8"))
want = json.load(open(sys.argv[2], encoding="utf-8"))
got = shown.get("posture")
assert got, "no posture in: " + json.dumps(shown)[:500]
shares = lambda p: sorted(s["name"] for s in p.get("shares", []))
sessions = lambda p: sorted((s["sessionId"], s.get("clientAddress", ""), s.get("user", ""))
                             for s in p.get("sessions", []))
assert shares(got) == shares(want) and shares(want), (shares(got), shares(want))
assert sessions(got) == sessions(want) and sessions(want), (sessions(got), sessions(want))
print("   shares:", ", ".join(shares(got)))
print("   sessions:", len(sessions(got)))
PY
for probe in host Get-SmbShare Get-SmbSession; do
  grep -qx "$probe" "$standin_log" || fail "the agent did not run powershell.exe for $probe"
done
spool_dir=$WINEPREFIX/drive_c/ProgramData/smbfleet/spool
[[ -d "$spool_dir" ]] || fail "no spool at $spool_win"
leftover=$(find "$spool_dir" -maxdepth 1 -name '*.report' | wc -l)
((leftover == 0)) || fail "$leftover report(s) still spooled after the ack"

# --- every fixture, byte for byte --------------------------------------------------------------
step "collect --source=windows-capture: Wine against Linux, every fixture"
compared=0
for dir in "$fixtures"/*/; do
  name=$(basename "$dir")
  # Both run in the fixtures' folder with a relative path: a probe error naming the folder
  # reads the same on both sides.
  (cd "$fixtures" && "$linux_agent" collect --once --source="windows-capture:$name" --format=json) \
    >"$work/$name.linux.json" || fail "$name: the Linux agent failed"
  (cd "$fixtures" && "$linux_agent" collect --once --source="windows-capture:$name" --format=json) \
    >"$work/$name.linux2.json"
  # The normalisation hides only what differs between two runs of one binary.
  cmp -s <(canon "$work/$name.linux.json" "$dir") <(canon "$work/$name.linux2.json" "$dir") ||
    fail "$name: two Linux runs differ beyond key order"
  rc=0
  (cd "$fixtures" && timeout 300 "$wine" "$exe" collect --once --source="windows-capture:$name" \
    --format=json) >"$work/$name.wine.json" 2>"$work/$name.wine.err" || rc=$?
  ((rc == 0)) || fail "$name: the agent under Wine exited $rc: $(cat "$work/$name.wine.err")"
  if ! cmp -s <(canon "$work/$name.linux.json" "$dir") <(canon "$work/$name.wine.json" "$dir"); then
    diff <(canon "$work/$name.linux.json" "$dir") <(canon "$work/$name.wine.json" "$dir") | head -40 >&2
    fail "$name: Wine and Linux JSON differ"
  fi
  echo "   $name: same"
  compared=$((compared + 1))
done
((compared >= 5)) || fail "only $compared fixture folders compared"

# --- peak working set ---------------------------------------------------------------------------
# The largest fixture by bytes. The peak resident set of the Wine process that runs the .exe:
# the agent's own memory plus the parts of Wine mapped into it (ntdll, kernel32 and the other
# built-in DLLs, the preloader); wineserver is a separate process and not counted. Two readings:
# ru_maxrss at exit (GNU time's %M) and VmHWM from /proc, sampled every 20 ms while it runs.
largest=$(du -sb "$fixtures"/*/ | sort -n | tail -1 | cut -f2)
largest=$(basename "$largest")
step "peak working set, collect of $largest"
(cd "$fixtures" && exec /usr/bin/time -f %M -o "$work/hwm.maxrss" "$wine" "$exe" collect --once \
  --source="windows-capture:$largest" --format=json) >"$work/hwm.out" 2>"$work/hwm.err" &
time_pid=$!
hwm_kib=0
hwm_deadline=$(($(epoch_ms) + 300000))
while kill -0 "$time_pid" 2>/dev/null; do
  # wine64 becomes the Windows process (the same PID): time's only child.
  wine_pid=$(cat "/proc/$time_pid/task/$time_pid/children" 2>/dev/null || true)
  wine_pid=${wine_pid%% *}
  if [[ -n "$wine_pid" ]]; then
    v=$(awk '/^VmHWM:/ {print $2}' "/proc/$wine_pid/status" 2>/dev/null || true)
    if [[ -n "$v" ]] && ((v > hwm_kib)); then hwm_kib=$v; fi
  fi
  (($(epoch_ms) < hwm_deadline)) || { kill "$time_pid"; fail "collect of $largest: over 300 s"; }
  sleep 0.02
done
wait "$time_pid" || fail "collect of $largest under Wine failed: $(cat "$work/hwm.err")"
maxrss_kib=$(tail -1 "$work/hwm.maxrss")
linux_rss_kib=$(cd "$fixtures" && /usr/bin/time -f %M "$linux_agent" collect --once \
  --source="windows-capture:$largest" --format=json 2>&1 >/dev/null | tail -1)
echo "   ${maxrss_kib} KiB under Wine (VmHWM sampled: ${hwm_kib} KiB; Linux build: ${linux_rss_kib} KiB)"

# --- bad input ---------------------------------------------------------------------------------
step "a missing capture folder"
agent_exe missing collect --once --source="windows-capture:$(win_path "$work/no such folder")" --format=json
((rc == 1)) || fail "missing folder: exit $rc, expected 1"
grep -qF "no such folder" "$work/missing.err" || fail "missing folder not named: $(cat "$work/missing.err")"
grep -qF "does not exist" "$work/missing.err" || fail "missing folder: $(cat "$work/missing.err")"

# probe_errors FILE: "probe code message" lines of a collect's JSON.
probe_errors() { jq -r '.probeErrors[]? | "\(.probe) \(.code) \(.message)"' "$1"; }

step "a non-ASCII share name, from a capture folder with a non-ASCII name"
uni_dir="$work/captures/Ünïcødé capture"
mkdir -p "$uni_dir"
cp "$fixtures/ws2022/"* "$uni_dir/"
uni_name='Ünïcødé 共有'
# The first ordinary share gets the name; the file's other bytes stay as captured.
python3 - "$uni_dir/Get-SmbShare.json" "$uni_name" <<'PY'
import json, sys
path, new = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
old = next(s["Name"] for s in json.loads(text) if not s.get("Special"))
text = text.replace('"Name":' + json.dumps(old), '"Name":' + json.dumps(new, ensure_ascii=False), 1)
assert new in text
open(path, "w", encoding="utf-8").write(text)
PY
(cd "$work/captures" && "$linux_agent" collect --once --source="windows-capture:Ünïcødé capture" \
  --format=json) >"$work/uni.linux.json"
agent_exe uni-capture collect --once --source="windows-capture:$(win_path "$uni_dir")" --format=json
((rc == 0)) || fail "non-ASCII capture folder: exit $rc: $(cat "$work/uni-capture.err")"
jq -e --arg n "$uni_name" '[.shares[].name] | index($n)' "$work/uni-capture.out" >/dev/null ||
  fail "the share $uni_name is not in the JSON: $(jq -c '[.shares[].name]' "$work/uni-capture.out")"
cmp -s <(canon "$work/uni.linux.json" "$uni_dir") <(canon "$work/uni-capture.out" "$uni_dir") ||
  fail "non-ASCII capture: Wine and Linux JSON differ"
# The same through the live source: the stand-in's stdout, the pipe, the agent's UTF-8 handling.
install_standin "$uni_dir"
agent_exe uni-live collect --once --source=windows --format=json
((rc == 0)) || fail "live collect: exit $rc: $(cat "$work/uni-live.err")"
jq -e --arg n "$uni_name" '[.shares[].name] | index($n)' "$work/uni-live.out" >/dev/null ||
  fail "live: the share $uni_name is not in the JSON: $(jq -c '[.shares[]?.name]' "$work/uni-live.out")"
echo "   $uni_name: same bytes through the capture source and through powershell.exe"

step "events under Wine (the Event Log API)"
# The live source reads events through wevtapi, not PowerShell. What Wine's API gives is recorded
# in the figures; what is asserted is the product's behaviour: the collect above exited 0 with
# its posture, and whatever the API did shows up under probe events only.
events_error=$(jq -r '[.probeErrors[]? | select(.probe == "events") | "\(.code): \(.message)"] | join("; ")' "$work/uni-live.out")
events_count=$(jq '[.events[]?] | length' "$work/uni-live.out")
echo "   events: $events_count, probe error: ${events_error:-none}"
other_errors=$(probe_errors "$work/uni-live.out" | grep -v '^events ' || true)
[[ -z "$other_errors" ]] || fail "live collect: unexpected probe errors: $other_errors"
# Round-trip times come from the TCP table (no connection on port 445 under Wine): none made up.
jq -e '[.sessions[]? | select(has("rttUs") or has("minRttUs") or has("retransmits"))] | length == 0' \
  "$work/uni-live.out" >/dev/null || fail "live collect: round-trip times without a connection"

step "a cmdlet that times out (Get-SmbSession hangs; the agent's limit is 60 s)"
install_standin "$fixtures/ws2022" "sleep Get-SmbSession 600"
agent_exe timeout collect --once --source=windows --format=json
timeout_ms=$elapsed_ms
((rc == 0)) || fail "timed-out cmdlet: exit $rc: $(cat "$work/timeout.err")"
probe_errors "$work/timeout.out" | sed 's/^/   | /'
probe_errors "$work/timeout.out" | grep -q '^Get-SmbSession TIMEOUT ' ||
  fail "no TIMEOUT probe error for Get-SmbSession"
jq -e '(.sessions // []) | length == 0' "$work/timeout.out" >/dev/null ||
  fail "sessions reported from a hung cmdlet"
jq -e '.shares | length > 0' "$work/timeout.out" >/dev/null || fail "the other probes were not collected"
((timeout_ms < 150000)) || fail "the hung cmdlet held the collect for ${timeout_ms} ms"

step "no powershell.exe"
rm -f "$ps_dir/powershell.exe"
agent_exe nops collect --once --source=windows --format=json
((rc == 0)) || fail "no powershell.exe: exit $rc: $(cat "$work/nops.err")"
probe_errors "$work/nops.out" | head -3 | sed 's/^/   | /'
missing_named=$(probe_errors "$work/nops.out" | grep -v '^events ' | grep -c ' NOT_FOUND .*powershell\.exe' || true)
probes_failed=$(probe_errors "$work/nops.out" | grep -vc '^events ' || true)
((probes_failed > 0 && missing_named == probes_failed)) ||
  fail "no powershell.exe: $missing_named of $probes_failed probe errors name powershell.exe"

# --- figures -----------------------------------------------------------------------------------
# shellcheck disable=SC2034 # fault_finish prints it
figures=$(jq -nc --argjson exe "$(stat -c %s "$exe")" --argjson boot "$wineboot_ms" \
  --argjson run "$run_ms" --arg largest "$largest" --argjson hwm "$hwm_kib" --argjson maxrss "$maxrss_kib" \
  --argjson lrss "$linux_rss_kib" --argjson tmo "$timeout_ms" --argjson n "$compared" \
  --arg ev "${events_error:-none}" --argjson evn "$events_count" \
  --argjson total "$(($(epoch_ms) - test_t0))" '{
    exe_bytes: $exe, wineboot_ms: $boot, run_once_ms: $run, fixtures_compared: $n,
    peak_working_set: {fixture: $largest, wine_maxrss_kib: $maxrss, wine_vmhwm_sampled_kib: $hwm,
      linux_maxrss_kib: $lrss,
      includes: "the Wine process: agent + Wine built-in DLLs + preloader; not wineserver"},
    timed_out_cmdlet_collect_ms: $tmo, events_under_wine: {events: $evn, probe_error: $ev},
    test_ms: $total }')
fault_finish

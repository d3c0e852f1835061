#!/usr/bin/env bash
# What a byte served costs smbd in page faults on this host (docs/cost-model.md "What run 3's CPU
# per byte was"): a private smbd on loopback (deploy/samba-lab.sh), a held smbclient session per
# posture and run, one `get` of a --mib file to /dev/null, and smbd's connection process's minor
# faults and CPU (/proc/PID/stat) around it. Beside it, what one page fault costs the host: fresh
# anonymous 8 MiB mappings written once and unmapped (the kernel zero-fills each page on first
# touch), against the same bytes written into a buffer already mapped.
# Prints ONE JSON document.
#
#   tests/bench/smbd_faults.sh [--mib 256] [--runs 3] [--protections "none sign encrypt"] [--check]
#
# --check (CI's short run) exits 1 when a posture's session was not measured: the process whose
# faults were counted is not an smbd that read the whole file (`rchar` of /proc/PID/io).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mib=256 runs=3 protections="none sign encrypt" check=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --mib) mib=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --protections) protections=$2; shift 2 ;;
    --check) check=1; shift ;;
    *) echo "smbd_faults.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for v in "$mib" "$runs"; do
  [[ $v =~ ^[0-9]+$ && $v -gt 0 ]] || { echo "smbd_faults.sh: '$v' is not a positive count" >&2; exit 2; }
done
for p in $protections; do
  [[ $p == none || $p == sign || $p == encrypt ]] ||
    { echo "smbd_faults.sh: unknown protection '$p' (none, sign, encrypt)" >&2; exit 2; }
done

lab=$(mktemp -d "${TMPDIR:-/tmp}/smbfleet-faults.XXXXXX")
port=$((20000 + RANDOM % 20000))
cleanup() { bash "$root/deploy/samba-lab.sh" stop "$lab" >/dev/null 2>&1 || true; rm -rf "$lab"; }
trap cleanup EXIT
bash "$root/deploy/samba-lab.sh" start "$lab" "$port" >&2
head -c $((mib * 1024 * 1024)) /dev/urandom >"$lab/shares/demo/big.bin"
export SAMBA_LAB_SEND_SECONDS=300
main_smbd=$(tr -dc '0-9' <"$lab/pid/smbd.pid")

# stat_of PID: "minflt utime stime rchar" (fields 10, 14, 15 of /proc/PID/stat, whose comm has no
# spaces here, and the bytes the process read)
stat_of() {
  local rchar
  rchar=$(awk '$1 == "rchar:" {print $2}' "/proc/$1/io")
  echo "$(cut -d' ' -f10,14,15 "/proc/$1/stat") $rchar"
}

lines=()
for ((run = 1; run <= runs; run++)); do
  for p in $protections; do
    options=()  # none: smbclient's defaults, which the lab server does not make sign or encrypt
    [[ $p == none ]] || options=(--client-protection="$p")
    bash "$root/deploy/samba-lab.sh" hold "$lab" f demo "${options[@]}" >&2
    # The newest child of this lab's smbd: the held session's connection process (not the newest
    # smbd on the machine, which may be another test's).
    pid=$(pgrep -n -x -P "$main_smbd" smbd)
    before=$(stat_of "$pid")
    bash "$root/deploy/samba-lab.sh" send "$lab" f 'get big.bin /dev/null' >&2
    after=$(stat_of "$pid")
    bash "$root/deploy/samba-lab.sh" release "$lab" f >&2
    lines+=("$p $before $after")
  done
done

printf '%s\n' "${lines[@]}" | python3 -c '
import json, mmap, statistics, sys, time, os

mib = int(sys.argv[1])
hz = os.sysconf("SC_CLK_TCK")
page = os.sysconf("SC_PAGE_SIZE")
served = mib * 1024 * 1024
by = {}
for line in sys.stdin:
    p, *f = line.split()
    a, b = [int(x) for x in f[:4]], [int(x) for x in f[4:]]
    by.setdefault(p, []).append({
        "read_whole_file": b[3] - a[3] >= served,
        "faults_per_page": (b[0] - a[0]) / (served / page),
        "cpu_s_per_gb": (b[1] + b[2] - a[1] - a[2]) / hz / (served / 1e9),
    })

def fault_cost(rounds=64, size=8 << 20):
    data = b"\x01" * size
    t = time.process_time()
    for _ in range(rounds):
        m = mmap.mmap(-1, size)
        m.write(data)
        m.close()
    fresh = time.process_time() - t
    m = mmap.mmap(-1, size)
    t = time.process_time()
    for _ in range(rounds):
        m.seek(0)
        m.write(data)
    reused = time.process_time() - t
    m.close()
    pages = rounds * size / page
    return {"fresh_s_per_gb": fresh / (rounds * size / 1e9),
            "reused_s_per_gb": reused / (rounds * size / 1e9),
            "us_per_fault": (fresh - reused) / pages * 1e6}

cost = fault_cost()
out = {"benchmark": "smbd_faults", "mib": mib, "page_bytes": page, "host_page_fault": cost,
       "load_average": os.getloadavg()[0], "postures": {}}
for p, runs in by.items():
    fpp = statistics.median(r["faults_per_page"] for r in runs)
    cpu = statistics.median(r["cpu_s_per_gb"] for r in runs)
    out["postures"][p] = {
        "runs": runs,
        "faults_per_page_median": fpp,
        "cpu_s_per_gb_median": cpu,
        # what the faults alone cost at the host fault cost measured above
        "fault_cpu_s_per_gb": fpp * cost["us_per_fault"] * 1e-6 * (1e9 / page),
    }
print(json.dumps(out, indent=2))
if sys.argv[2] == "1":
    unmeasured = [p for p, runs in by.items() if not all(r["read_whole_file"] for r in runs)]
    if unmeasured or cost["us_per_fault"] <= 0:
        sys.exit("smbd_faults.sh: nothing measured for " + (", ".join(unmeasured) or "the host"))
' "$mib" "$check"

#!/usr/bin/env bash
# The test command: installs what is missing, builds, starts a private PostgreSQL and runs every
# test (unit, PostgreSQL, real Samba, end to end), then the gates: format check and clang-tidy
# (deploy/lint.sh), the unit and PostgreSQL tests again under ASan+UBSan, the Windows shim's cross
# build, and the Windows agent: smbfleet-agent.exe cross-built against dependencies built from
# Debian's sources (cached; the first run builds them in the background) and run under Wine against
# the real collector. Exits non-zero on any failure and leaves nothing running; the last lines
# are a summary of the stages.
#
#   deploy/test.sh              everything (what CI runs)
#   deploy/test.sh -L unit      only the tests with that CTest label (unit, postgres, samba, e2e);
#                               no gates
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

bash "$here/setup.sh" --tests

work=$(mktemp -d /tmp/smbfleet-test.XXXXXX)
chmod 755 "$work"
# Every test's temporary files go here (::testing::TempDir() and mktemp read TMPDIR) and go
# with it at the end; sticky and open to all, as /tmp is, for the lab's unprivileged users.
export TMPDIR=$work/t
mkdir -m 1777 "$TMPDIR"
# Free space where the trees go: a full disk fails tests in ways that name other things.
disk_free() { df -h --output=avail "$root" | tail -n1 | tr -d ' '; }
disk_at_start=$(disk_free)
deps_pid=
cleanup() {
  if [[ -n "$deps_pid" ]]; then
    # The whole build (its own session); cut short, it resumes from its last finished package.
    kill -TERM -- "-$deps_pid" 2>/dev/null || true
  fi
  bash "$here/pg.sh" stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# The Windows agent's dependencies, cross-built from Debian's sources (deploy/windows/): cached
# after the first run on a machine, where they take about an hour. That first build runs in the
# background at the lowest priority while the Linux stages run, using what they leave idle; the
# Windows stage at the end waits for it.
windows=0
if [[ $# -eq 0 && -f "$root/deploy/windows/build-agent-mingw.sh" ]]; then
  windows=1
  setsid bash "$root/deploy/windows/build-deps-mingw.sh" >"$work/mingw-deps.log" 2>&1 &
  deps_pid=$!
fi

build=${SMBFLEET_BUILD_DIR:-$root/build}
echo "== build ($build)"
build_tree "$root" "$build"

echo "== private PostgreSQL"
pg_port=$(free_port)
export SMBFLEET_TEST_PG_DSN
SMBFLEET_TEST_PG_DSN=$(bash "$here/pg.sh" start "$work/pg" "$pg_port")

# One line per stage for the summary at the end: CI shows only the tail of this output.
summary=()
details=()
# The names of the tests that failed in the last ctest run of a tree.
failed_tests() {
  local log=$1/Testing/Temporary/LastTestsFailed.log
  [[ -f "$log" ]] && cut -d: -f2- "$log" | paste -sd' ' -
}
# What each failed test of a tree's last ctest run said went wrong: its assertion failures, crash
# and timeout lines (a few lines each, at most 40 per test), or the last lines of a test that has
# none (a script), and how long it ran (a test stopped at its timeout says nothing of it), so that
# a failure seen only in the tail of CI's output can still be read.
failure_details() {
  local failed=$1/Testing/Temporary/LastTestsFailed.log log=$1/Testing/Temporary/LastTest.log
  [[ -f "$failed" && -f "$log" ]] || return 0
  local name
  while IFS= read -r name; do
    echo "-- $name"
    local output said
    output=$(awk -v name="$name" '
      $0 ~ /^[0-9]+\/[0-9]+ Test: / { test = (substr($0, index($0, "Test: ") + 6) == name) }
      test && /^Output:$/ { getline; inside = 1; next }
      inside && /^<end of output>/ { inside = 0; next }
      test && /^Test time = / { test = 0; print; next }
      inside' "$log")
    said=$(grep -E -A6 ': Failure$|^\[  FAILED  \]|Segmentation|Aborted|ERROR: AddressSanitizer|runtime error|Timeout|timed out' <<<"$output" || true)
    # A script's test (no GoogleTest lines) says why it stopped in its last lines.
    [[ -n $said ]] || said=$(grep -v '^Test time = ' <<<"$output" | tail -n 15)
    cut -c1-300 <<<"$said" | head -n 40
    grep '^Test time = ' <<<"$output" || true
  done < <(cut -d: -f2- "$failed")
  return 0
}

echo "== tests"
status=0
ctest --test-dir "$build" --output-on-failure --timeout 300 -j2 "$@" || status=$?
if [[ $status -eq 0 ]]; then
  summary+=("tests: ok")
else
  summary+=("tests: FAILED (ctest exit $status): $(failed_tests "$build")")
  details+=("$(failure_details "$build")")
fi

if [[ $# -gt 0 ]]; then
  exit $status
fi

if bash "$here/lint.sh" "$build"; then
  summary+=("lint: ok")
else
  status=1
  summary+=("lint: FAILED (format or clang-tidy, above)")
fi

# The sanitizer pass: its own tree, only the executables of the unit, postgres and samba labels
# (the unit label replays every fuzz corpus, tests/fuzz), the same private PostgreSQL. Leaks are
# on; deploy/sanitizers/lsan.supp lists the third-party exceptions.
asan=${SMBFLEET_ASAN_BUILD_DIR:-$root/build-asan}
echo "== ASan+UBSan build ($asan)"
# The Samba suites run the agent itself under the lab's nss_wrapper (LD_PRELOAD): ASan then
# does not come first in the library list (the check is off), and nss_wrapper must load libc
# without RTLD_DEEPBIND, which the sanitizer runtime cannot work with.
export ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0
export NSS_WRAPPER_DISABLE_DEEPBIND=1
export LSAN_OPTIONS=suppressions=$root/deploy/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# -O1 and line tables only, as ASan recommends: quicker to build than -O2 with full debug info.
configure_tree "$root" "$asan" -DSMBFLEET_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1"
if cmake --build "$asan" -j2 --target tests_unit tests_postgres tests_samba; then
  echo "== ASan+UBSan tests (unit, postgres, samba)"
  if ctest --test-dir "$asan" --output-on-failure --timeout 300 -j2 -L 'unit|postgres|samba'; then
    summary+=("asan+ubsan tests: ok")
  else
    status=1
    summary+=("asan+ubsan tests: FAILED: $(failed_tests "$asan")")
    details+=("$(failure_details "$asan")")
  fi
else
  echo "ASan+UBSan build: FAILED"
  status=1
  summary+=("asan+ubsan build: FAILED")
fi

if [[ -f "$root/deploy/windows/build-mingw.sh" ]]; then
  echo "== Windows cross build (mingw-w64)"
  if bash "$root/deploy/windows/build-mingw.sh" "$build/mingw"; then
    echo "windows cross build: ok"
    summary+=("windows cross build: ok")
  else
    echo "windows cross build: FAILED"
    status=1
    summary+=("windows cross build: FAILED")
  fi
fi
if [[ $windows -eq 1 ]]; then
  echo "== Windows agent: dependencies (deploy/windows/build-deps-mingw.sh)"
  deps_t0=$(date +%s)
  if wait "$deps_pid"; then
    deps_pid=
    echo "mingw dependencies: $(tail -n1 "$work/mingw-deps.log") (waited $(($(date +%s) - deps_t0)) s)"
    echo "== Windows agent: smbfleet-agent.exe (deploy/windows/build-agent-mingw.sh)"
    if bash "$root/deploy/windows/build-agent-mingw.sh" "$build/windows-agent"; then
      echo "== Windows agent under Wine (tests/windows/wine/run.sh)"
      if SMBFLEET_BUILD_DIR=$build bash "$root/tests/windows/wine/run.sh" \
        "$build/windows-agent/smbfleet-agent.exe"; then
        summary+=("windows agent under wine: ok")
      else
        status=1
        summary+=("windows agent under wine: FAILED")
      fi
    else
      status=1
      summary+=("windows agent build: FAILED")
    fi
  else
    deps_pid=
    cat "$work/mingw-deps.log"
    status=1
    summary+=("windows agent dependencies: FAILED (log above)")
  fi
fi

if ((${#details[@]} > 0)); then
  echo "== what the failed tests said"
  printf '%s\n' "${details[@]}"
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
echo "disk: $disk_at_start free at the start, $(disk_free) at the end"
exit $status

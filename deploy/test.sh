#!/usr/bin/env bash
# The test command: installs what is missing, builds, starts a private PostgreSQL and runs every
# test (unit, PostgreSQL, real Samba, end to end), then the Windows cross build. Exits non-zero on
# any failure and leaves nothing running.
#
#   deploy/test.sh              everything
#   deploy/test.sh -L unit      only the tests with that CTest label (unit, postgres, samba, e2e)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

bash "$here/setup.sh" --tests

build=${SMBFLEET_BUILD_DIR:-$root/build}
echo "== build ($build)"
build_tree "$root" "$build"

work=$(mktemp -d /tmp/smbfleet-test.XXXXXX)
chmod 755 "$work"
cleanup() {
  bash "$here/pg.sh" stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== private PostgreSQL"
pg_port=$(free_port)
export SMBFLEET_TEST_PG_DSN
SMBFLEET_TEST_PG_DSN=$(bash "$here/pg.sh" start "$work/pg" "$pg_port")

echo "== tests"
status=0
ctest --test-dir "$build" --output-on-failure --timeout 300 -j2 "$@" || status=$?

if [[ $# -eq 0 && -x "$root/deploy/windows/build-mingw.sh" || $# -eq 0 && -f "$root/deploy/windows/build-mingw.sh" ]]; then
  echo "== Windows cross build (mingw-w64)"
  if bash "$root/deploy/windows/build-mingw.sh" "$build/mingw"; then
    echo "windows cross build: ok"
  else
    echo "windows cross build: FAILED"
    status=1
  fi
fi
exit $status

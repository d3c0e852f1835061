#!/bin/sh
# Cross-compiles the Windows shim (process launch, event log, service entry point) with
# mingw-w64 and exits non-zero on any failure. Needs: apt-get install -y g++-mingw-w64-x86-64
#   deploy/windows/build-mingw.sh [BUILD_DIR]      (default: build-mingw in the repo root)
# Set SMBFLEET_RUN_WINE=1 to also run the quoting check under wine when wine64 is installed.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-"$repo/build-mingw"}
if ! command -v x86_64-w64-mingw32-g++-posix >/dev/null 2>&1; then
  echo "build-mingw.sh: x86_64-w64-mingw32-g++-posix not found (apt-get install -y g++-mingw-w64-x86-64)" >&2
  exit 1
fi
generator=""
if command -v ninja >/dev/null 2>&1; then generator="-G Ninja"; fi
# shellcheck disable=SC2086
cmake -S "$repo/agent/platform/windows/shim" -B "$build" $generator \
  -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/mingw-w64.cmake" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "${SMBFLEET_JOBS:-2}"
for exe in smbfleet-shim-selftest.exe shim_cmdline_check.exe; do
  if [ ! -f "$build/$exe" ]; then
    echo "build-mingw.sh: $exe was not produced" >&2
    exit 1
  fi
done
if [ "${SMBFLEET_RUN_WINE:-0}" = 1 ] && [ -x /usr/lib/wine/wine64 ]; then
  WINEDEBUG=-all /usr/lib/wine/wine64 "$build/shim_cmdline_check.exe"
fi
echo "build-mingw.sh: built $build/smbfleet-shim-selftest.exe"

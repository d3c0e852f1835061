#!/usr/bin/env bash
# Cross-builds the dependency checks against a prefix made by deploy/windows/build-deps-mingw.sh,
# prints the size of each .exe (as linked and stripped) and runs it under wine64 when installed.
#   deploy/windows/deps-check/run.sh PREFIX [BUILD_DIR]     non-zero when a check fails
# deps_check.exe is built only when gRPC is in the prefix. Compiles run under nice -n 19.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ $# -ge 1 && -d "$1/lib" ]] || {
  echo "run.sh: usage: run.sh PREFIX [BUILD_DIR] (PREFIX: the last line of build-deps-mingw.sh)" >&2
  exit 2
}
prefix=$(cd "$1" && pwd)
build=${2:-${TMPDIR:-/tmp}/smbfleet-deps-check}
export SMBFLEET_MINGW_DEPS_PREFIX=$prefix
nice -n 19 cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$here/../mingw-deps.cmake" >"$build.configure.log" 2>&1 || {
  cat "$build.configure.log" >&2
  exit 1
}
nice -n 19 cmake --build "$build" -j "${SMBFLEET_JOBS:-2}"
wine=/usr/lib/wine/wine64
status=0
for exe in foundation_check deps_check; do
  if [[ ! -f "$build/$exe.exe" ]]; then
    echo "$exe.exe: not built (no gRPC in $prefix)"
    continue
  fi
  x86_64-w64-mingw32-strip -o "$build/$exe.stripped.exe" "$build/$exe.exe"
  echo "$exe.exe: $(stat -c %s "$build/$exe.exe") bytes, stripped $(stat -c %s "$build/$exe.stripped.exe")"
  echo "$exe.exe imports: $(x86_64-w64-mingw32-objdump -p "$build/$exe.exe" | sed -n 's/.*DLL Name: //p' | tr '\n' ' ')"
  if [[ -x "$wine" ]]; then
    if ! WINEPREFIX=${WINEPREFIX:-$build/wine} WINEDEBUG=-all timeout 300 "$wine" "$build/$exe.exe"; then
      echo "$exe.exe: FAILED under wine" >&2
      status=1
    fi
  else
    echo "$exe.exe: wine64 not installed (apt-get install -y --no-install-recommends wine64): not run"
  fi
done
exit $status

#!/usr/bin/env bash
# Cross-builds smbfleet-agent.exe for Windows x64 with mingw-w64 against the dependency prefix of
# build-deps-mingw.sh (built once per machine and cached; a cached prefix takes under a second),
# strips a copy, and fails if the .exe imports any DLL that is not part of Windows.
#   deploy/windows/build-agent-mingw.sh [BUILD_DIR]   (default: build-agent-mingw in the repo root)
# Prints the linked and stripped sizes and the imported DLLs. SMBFLEET_JOBS sets the parallelism.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-"$repo/build-agent-mingw"}
for tool in x86_64-w64-mingw32-g++-posix x86_64-w64-mingw32-objdump x86_64-w64-mingw32-strip \
  protoc grpc_cpp_plugin cmake; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "build-agent-mingw.sh: $tool not found (deploy/setup.sh installs it)" >&2
    exit 1
  fi
done

# The prefix is the last line build-deps-mingw.sh prints.
prefix=$(bash "$repo/deploy/windows/build-deps-mingw.sh" | tail -n 1)
if [[ ! -d "$prefix" ]]; then
  echo "build-agent-mingw.sh: build-deps-mingw.sh gave no prefix directory ('$prefix')" >&2
  exit 1
fi
# In the environment: the toolchain file reads it in every try_compile too.
export SMBFLEET_MINGW_DEPS_PREFIX=$prefix

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
export CCACHE_BASEDIR=$repo CCACHE_NOHASHDIR=1
mkdir -p "$build"
cmake -S "$repo" -B "$build" "${generator[@]}" \
  -DCMAKE_TOOLCHAIN_FILE="$repo/deploy/windows/mingw-deps.cmake" -DCMAKE_BUILD_TYPE=Release \
  >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
cmake --build "$build" --target smbfleet-agent -j "${SMBFLEET_JOBS:-2}"

exe=$build/smbfleet-agent.exe
if [[ ! -f "$exe" ]]; then
  echo "build-agent-mingw.sh: $exe was not produced" >&2
  exit 1
fi
stripped=$build/smbfleet-agent-stripped.exe
x86_64-w64-mingw32-strip -o "$stripped" "$exe"
echo "build-agent-mingw.sh: $exe: $(stat -c %s "$exe") bytes linked," \
  "$(stat -c %s "$stripped") bytes stripped ($stripped)"

# Windows' own DLLs only: the .exe must run on a bare Windows Server with nothing installed.
allowed='^(kernel32|advapi32|pdh|user32|gdi32|ws2_32|crypt32|bcrypt|cabinet|wevtapi|shell32|ole32|oleaut32|rpcrt4|secur32|iphlpapi|dbghelp|ntdll|userenv|msvcrt|ucrtbase|api-ms-win-[a-z0-9-]+)\.dll$'
mapfile -t dlls < <(x86_64-w64-mingw32-objdump -p "$exe" | sed -n 's/^[[:space:]]*DLL Name: //p' |
  tr '[:upper:]' '[:lower:]' | sort -u)
echo "build-agent-mingw.sh: imports ${dlls[*]}"
bad=0
for dll in "${dlls[@]}"; do
  if [[ ! $dll =~ $allowed ]]; then
    echo "build-agent-mingw.sh: $exe imports $dll, which is not a Windows system DLL" >&2
    bad=1
  fi
done
exit "$bad"

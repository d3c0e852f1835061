#!/usr/bin/env bash
# Cross-builds the Windows agent's dependencies as static x86_64-w64-mingw32 libraries from Debian's
# own source packages, at the versions the Linux build uses (the installed -dev packages):
# zlib, OpenSSL, c-ares, Abseil, protobuf, RE2, gRPC, yaml-cpp, fmt, spdlog. No libpqxx.
#   deploy/windows/build-deps-mingw.sh [PREFIX]
# The result is cached in ${XDG_CACHE_HOME:-$HOME/.cache}/smbfleet/mingw-deps-KEY, KEY being a hash of
# the package versions, this script, its toolchain file and the patches in deploy/windows/patches/, so
# a second run does nothing. With PREFIX the cached tree is also copied there. The last line of
# stdout is the prefix. Per-package build logs and timings are in PREFIX/logs/.
# Host tools (protoc, grpc_cpp_plugin) are the Linux packages'; nothing is built for them.
# Needs: g++-mingw-w64-x86-64, cmake, ninja-build, dpkg-dev, perl, make, python3, python3-six,
# unicode-data (RE2's tables are generated, as in Debian's build); root the first time when
# the deb-src entries are missing (they are added to /etc/apt/sources.list.d/).
# SMBFLEET_JOBS (default 2) sets the build parallelism. Everything runs under nice -n 19/ionice -c3.
set -euo pipefail

if [[ -z "${SMBFLEET_DEPS_NICED:-}" ]]; then
  export SMBFLEET_DEPS_NICED=1
  if command -v ionice >/dev/null 2>&1; then
    exec nice -n 19 ionice -c3 "$0" "$@"
  fi
  exec nice -n 19 "$0" "$@"
fi

me="build-deps-mingw.sh"
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
patches=$here/patches
toolchain=$here/mingw-deps.cmake
jobs=${SMBFLEET_JOBS:-2}
target=x86_64-w64-mingw32
# PE/COFF objects hold at most 32767 sections; the large generated and templated files of protobuf and
# gRPC need more ("file too big" from the assembler) unless built as big objects.
cxxflags="-Wa,-mbig-obj"

die() {
  echo "$me: $*" >&2
  exit 1
}
say() { echo "$me: $*" >&2; }

# Build order: the foundation first, then what needs it.
packages=(zlib openssl c-ares abseil protobuf re2 grpc yaml-cpp fmtlib spdlog)
dev_package() {
  case $1 in
    zlib) echo zlib1g-dev ;;
    openssl) echo libssl-dev ;;
    c-ares) echo libc-ares-dev ;;
    abseil) echo libabsl-dev ;;
    protobuf) echo libprotobuf-dev ;;
    re2) echo libre2-dev ;;
    grpc) echo libgrpc++-dev ;;
    yaml-cpp) echo libyaml-cpp-dev ;;
    fmtlib) echo libfmt-dev ;;
    spdlog) echo libspdlog-dev ;;
    *) die "no -dev package known for source package $1" ;;
  esac
}

for tool in "$target-gcc-posix" "$target-g++-posix" "$target-ar" "$target-ranlib" "$target-windres" \
  cmake ninja make perl python3 dpkg-source dpkg-query apt-get sha256sum flock patch; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "$tool not found (apt-get install -y g++-mingw-w64-x86-64 cmake ninja-build make perl python3 dpkg-dev patch)"
done
# RE2's tables are generated from these (Debian's build does the same).
if [[ ! -f /usr/share/unicode/UnicodeData.txt ]] || ! python3 -c 'import six' 2>/dev/null; then
  die "re2 needs the Unicode data and python3-six: apt-get install -y --no-install-recommends unicode-data python3-six"
fi

# The source version of each installed -dev package: what the Linux build compiles against.
declare -A version
for pkg in "${packages[@]}"; do
  dev=$(dev_package "$pkg")
  status=$(dpkg-query -W -f='${Status}' "$dev" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || die "$pkg: $dev is not installed (run deploy/setup.sh)"
  version[$pkg]=$(dpkg-query -W -f='${source:Version}' "$dev")
done

key=$({
  for p in "${packages[@]}"; do echo "$p=${version[$p]}"; done
  "$target-g++-posix" --version | head -n1
  cat "$0" "$toolchain" "$repo/cmake/mingw-w64.cmake"
  if [[ -d "$patches" ]]; then
    find "$patches" -type f -name '*.patch' | LC_ALL=C sort | while read -r f; do
      echo "${f#"$patches"/}"
      cat "$f"
    done
  fi
} | sha256sum | cut -c1-16)
# Only for working on this script: keep building into one tree while the script changes.
key=${SMBFLEET_MINGW_DEPS_KEY:-$key}

cache=${XDG_CACHE_HOME:-$HOME/.cache}/smbfleet
prefix=$cache/mingw-deps-$key
work=$cache/mingw-deps-$key.work
mkdir -p "$cache"

# Copies the finished cache tree to the caller's PREFIX (replacing only a tree this script made).
export_prefix() {
  local dest=${1:-}
  if [[ -n "$dest" && "$(realpath -m "$dest")" != "$(realpath -m "$prefix")" ]]; then
    if [[ -e "$dest" && ! -f "$dest/.smbfleet-mingw-deps" ]]; then
      die "$dest exists and was not made by $me: not replacing it"
    fi
    if [[ "$(cat "$dest/.smbfleet-mingw-deps" 2>/dev/null)" != "$key" ]]; then
      rm -rf "$dest.tmp"
      cp -a "$prefix" "$dest.tmp"
      # CMake configs are relocatable; pkg-config files name the prefix.
      find "$dest.tmp/lib/pkgconfig" -name '*.pc' -exec sed -i "s|$prefix|$dest|g" {} +
      rm -rf "$dest"
      mv "$dest.tmp" "$dest"
    fi
    echo "$dest"
  else
    echo "$prefix"
  fi
}

if [[ -f "$prefix/.smbfleet-mingw-deps" ]]; then
  say "cached: $prefix"
  export_prefix "${1:-}"
  exit 0
fi

exec 9>"$prefix.lock"
if ! flock -n 9; then
  say "another run is building $prefix; waiting for it"
  flock 9
fi
if [[ -f "$prefix/.smbfleet-mingw-deps" ]]; then
  say "cached (built by the other run): $prefix"
  export_prefix "${1:-}"
  exit 0
fi

mkdir -p "$prefix/logs" "$prefix/.stamps" "$work"
export SMBFLEET_MINGW_DEPS_PREFIX=$prefix
timings=$prefix/logs/timings.txt

# Adds deb-src entries for the suites of the deb entries when apt knows no source packages.
ensure_deb_src() {
  if [[ -n "$(apt-cache showsrc zlib 2>/dev/null | head -n1)" ]]; then
    return 0
  fi
  local list=/etc/apt/sources.list.d/smbfleet-deb-src.sources
  [[ "$(id -u)" == 0 ]] || die "apt has no deb-src entries; run once as root to add $list"
  local deb=/etc/apt/sources.list.d/debian.sources
  [[ -f "$deb" ]] || die "apt has no deb-src entries and $deb is missing: add deb-src lines by hand"
  say "adding $list (deb-src for the suites of $deb)"
  {
    echo "# Added by deploy/windows/build-deps-mingw.sh: Debian's sources for the mingw-w64 build."
    sed -e 's/^Types:.*/Types: deb-src/' "$deb"
  } >"$list.tmp"
  mv "$list.tmp" "$list"
  apt-get update -q >/dev/null || die "apt-get update failed after adding $list"
}

# Fetches and unpacks (with Debian's patches) the source package; prints the version used.
# When the installed version is no longer in the archive (a superseded security update), the newest
# available version of the same upstream series (e.g. OpenSSL 3.0.x) is taken, with a warning.
fetch_source() {
  local pkg=$1 want=$2 log=$3
  local dir=$work/src/$pkg
  local upstream series v candidates=()
  rm -rf "$dir"
  mkdir -p "$dir/dl"
  chmod 755 "$dir" "$dir/dl"
  upstream=${want#*:}
  upstream=${upstream%-*}
  series=$(echo "$upstream" | cut -d. -f1-2)
  candidates=("$want")
  while read -r v; do
    [[ "$v" == "$want" ]] && continue
    local u=${v#*:}
    u=${u%-*}
    [[ "$u" == "$series".* || "$u" == "$series" ]] && candidates+=("$v")
  done < <(apt-cache showsrc "$pkg" | sed -n 's/^Version: //p' | sort -u | sort -rV)
  for v in "${candidates[@]}"; do
    if (cd "$dir/dl" && apt-get source --download-only -q "$pkg=$v") >>"$log" 2>&1; then
      [[ "$v" == "$want" ]] || say "WARNING: $pkg $want is no longer in the archive; using $v"
      dpkg-source -x "$dir/dl/"*.dsc "$dir/tree" >>"$log" 2>&1 || return 1
      echo "$v"
      return 0
    fi
    rm -f "$dir/dl/"*
  done
  return 1
}

apply_patches() {
  local pkg=$1 tree=$2 log=$3 p
  [[ -d "$patches/$pkg" ]] || return 0
  for p in "$patches/$pkg"/*.patch; do
    [[ -f "$p" ]] || continue
    echo "== applying ${p#"$repo"/}" >>"$log"
    patch -p1 --forward -d "$tree" <"$p" >>"$log" 2>&1 || return 1
  done
}

cmake_build() {  # cmake_build SRC BUILD [cmake args...]: configure, build, install
  local src=$1 build=$2
  shift 2
  cmake -S "$src" -B "$build" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_INSTALL_LIBDIR=lib \
    -DCMAKE_CXX_STANDARD=17 \
    -DCMAKE_CXX_FLAGS="$cxxflags" \
    -DBUILD_SHARED_LIBS=OFF \
    -DBUILD_TESTING=OFF \
    "$@" &&
    cmake --build "$build" -j "$jobs" &&
    cmake --install "$build"
}

build_zlib() {
  local t=$1 b=$2
  # Debian's dfsg tarball has no win32/Makefile.gcc: CMake, static library only, installed as libz.a
  # (the name FindZLIB looks for first).
  cmake -S "$t" -B "$b" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" &&
    cmake --build "$b" -j "$jobs" --target zlibstatic &&
    install -D -m644 "$b/libzlibstatic.a" "$prefix/lib/libz.a" &&
    install -D -m644 "$t/zlib.h" "$prefix/include/zlib.h" &&
    install -D -m644 "$b/zconf.h" "$prefix/include/zconf.h"
}

build_openssl() {
  local t=$1 win="C:/Program Files/smbfleet"
  # In the source tree: OpenSSL's Configure builds there. Libraries and headers only. The folders
  # compiled into libcrypto (openssl.cnf, engines, provider modules) are folders of the Windows host
  # that only Administrators can write, never a path of the build machine. They are make variables:
  # Configure running on Linux would take "C:/..." for a relative path and prepend the prefix.
  local dirs=(OPENSSLDIR="$win/ssl" ENGINESDIR="$win/engines-3" MODULESDIR="$win/ossl-modules")
  (cd "$t" &&
    ./Configure mingw64 no-shared no-module no-tests --prefix="$prefix" --libdir=lib \
      CC="$target-gcc-posix" CXX="$target-g++-posix" AR="$target-ar" \
      RANLIB="$target-ranlib" RC="$target-windres" &&
    make -j "$jobs" build_libs "${dirs[@]}" &&
    make install_dev "${dirs[@]}")
}

build_c-ares() {
  cmake_build "$1" "$2" -DCARES_STATIC=ON -DCARES_SHARED=OFF -DCARES_BUILD_TOOLS=OFF \
    -DCARES_BUILD_TESTS=OFF -DCARES_STATIC_PIC=OFF
}

build_abseil() {
  cmake_build "$1" "$2" -DABSL_PROPAGATE_CXX_STD=ON -DABSL_BUILD_TESTING=OFF -DABSL_ENABLE_INSTALL=ON
}

build_protobuf() {
  # The library only; protoc is the Linux package's.
  cmake_build "$1" "$2" -Dprotobuf_BUILD_TESTS=OFF -Dprotobuf_BUILD_PROTOC_BINARIES=OFF \
    -Dprotobuf_BUILD_LIBPROTOC=OFF -Dprotobuf_WITH_ZLIB=ON -Dprotobuf_BUILD_SHARED_LIBS=OFF \
    -Dprotobuf_INSTALL=ON
}

build_re2() {
  local t=$1
  # Debian's dfsg tarball drops the generated Unicode and Perl tables; generate them as Debian's
  # build does (from the unicode-data package).
  (cd "$t" &&
    perl re2/make_perl_groups.pl >re2/perl_groups.cc &&
    python3 re2/make_unicode_casefold.py >re2/unicode_casefold.cc &&
    python3 re2/make_unicode_groups.py >re2/unicode_groups.cc) &&
    cmake_build "$1" "$2" -DRE2_BUILD_TESTING=OFF
}

build_grpc() {
  # Against the libraries above (package providers), no code generator plugins, tests or examples,
  # and without the *_unsecure libraries (patches/grpc/0001).
  cmake_build "$1" "$2" -DgRPC_INSTALL=ON -DgRPC_BUILD_TESTS=OFF -DgRPC_BUILD_CODEGEN=OFF \
    -DgRPC_BUILD_UNSECURE=OFF \
    -DgRPC_BUILD_CSHARP_EXT=OFF -DgRPC_BUILD_GRPC_CPP_PLUGIN=OFF -DgRPC_BUILD_GRPC_CSHARP_PLUGIN=OFF \
    -DgRPC_BUILD_GRPC_NODE_PLUGIN=OFF -DgRPC_BUILD_GRPC_OBJECTIVE_C_PLUGIN=OFF \
    -DgRPC_BUILD_GRPC_PHP_PLUGIN=OFF -DgRPC_BUILD_GRPC_PYTHON_PLUGIN=OFF \
    -DgRPC_BUILD_GRPC_RUBY_PLUGIN=OFF \
    -DgRPC_ZLIB_PROVIDER=package -DgRPC_CARES_PROVIDER=package -DgRPC_RE2_PROVIDER=package \
    -DgRPC_SSL_PROVIDER=package -DgRPC_PROTOBUF_PROVIDER=package -DgRPC_ABSL_PROVIDER=package \
    -DgRPC_BENCHMARK_PROVIDER=none -DgRPC_PROTOBUF_PACKAGE_TYPE=CONFIG \
    -DOPENSSL_ROOT_DIR="$prefix" -DOPENSSL_USE_STATIC_LIBS=ON \
    -D_gRPC_PROTOBUF_PROTOC_EXECUTABLE="$(command -v protoc)"
}

build_yaml-cpp() {
  cmake_build "$1" "$2" -DYAML_BUILD_SHARED_LIBS=OFF -DYAML_CPP_BUILD_TESTS=OFF \
    -DYAML_CPP_BUILD_TOOLS=OFF -DYAML_CPP_BUILD_CONTRIB=OFF -DYAML_CPP_INSTALL=ON
}

build_fmtlib() {
  cmake_build "$1" "$2" -DFMT_TEST=OFF -DFMT_DOC=OFF -DFMT_INSTALL=ON
}

build_spdlog() {
  # With the fmt above, as Debian's spdlog is built.
  cmake_build "$1" "$2" -DSPDLOG_FMT_EXTERNAL=ON -DSPDLOG_BUILD_EXAMPLE=OFF \
    -DSPDLOG_BUILD_TESTS=OFF -DSPDLOG_BUILD_BENCH=OFF -DSPDLOG_INSTALL=ON
}

total_start=$(date +%s)
ensure_deb_src
for pkg in "${packages[@]}"; do
  stamp=$prefix/.stamps/$pkg
  if [[ -f "$stamp" ]]; then
    say "$pkg: already built ($(cat "$stamp"))"
    continue
  fi
  log=$prefix/logs/$pkg.log
  start=$(date +%s)
  tree=$work/src/$pkg/tree
  ready=$work/src/$pkg/ready
  resumed=""
  if [[ -f "$ready" ]]; then
    # An interrupted or failed build of the same tree: continue it (gRPC takes the longest).
    used=$(cat "$ready")
    resumed=" (resumed: this attempt only)"
    echo "== resumed $(date -u +%FT%TZ)" >>"$log"
    say "$pkg $used: resuming the build (log: $log)"
  else
    : >"$log"
    say "$pkg ${version[$pkg]}: fetching"
    used=$(fetch_source "$pkg" "${version[$pkg]}" "$log") ||
      die "$pkg ${version[$pkg]}: fetching or unpacking the Debian source failed; see $log"
    apply_patches "$pkg" "$tree" "$log" ||
      die "$pkg $used: a patch from deploy/windows/patches/$pkg did not apply; see $log"
    echo "$used" >"$ready"
    rm -rf "$work/build/$pkg"
    say "$pkg $used: building (log: $log)"
  fi
  mkdir -p "$work/build/$pkg"
  if ! "build_$pkg" "$tree" "$work/build/$pkg" >>"$log" 2>&1; then
    tail -n 25 "$log" >&2
    die "$pkg $used: the build failed; see $log (a new run resumes it)"
  fi
  seconds=$(($(date +%s) - start))
  echo "$pkg $used ${seconds}s$resumed" | tee -a "$timings" >&2
  echo "$used ${seconds}s" >"$stamp"
  rm -rf "$work/src/$pkg" "$work/build/$pkg"
done
sum=0
: >"$prefix/VERSIONS"
for pkg in "${packages[@]}"; do
  read -r used seconds <"$prefix/.stamps/$pkg"
  echo "$pkg $used" >>"$prefix/VERSIONS"
  sum=$((sum + ${seconds%s}))
done
echo "total: ${sum}s for all packages, $(($(date +%s) - total_start))s in this run" | tee -a "$timings" >&2
rm -rf "$work"
echo "$key" >"$prefix/.smbfleet-mingw-deps"
say "built $prefix"
export_prefix "${1:-}"

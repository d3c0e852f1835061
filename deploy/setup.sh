#!/usr/bin/env bash
# Installs what smbfleet needs on Debian 12 that is not there yet (apt), and nothing else.
#   setup.sh           build + demo packages
#   setup.sh --tests   also what the tests need (cross compiler and Wine for the Windows agent,
#                      the tools that cross-build its dependencies from Debian's sources, the
#                      clang-format and clang-tidy gates, jq for the end-to-end scripts)
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config git
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libpqxx-dev libpq-dev nlohmann-json3-dev libyaml-cpp-dev
  libcli11-dev libcpp-httplib-dev prometheus-cpp-dev libwim-dev liblz4-dev libzstd-dev
  libssl-dev openssl libgtest-dev libgmock-dev libbenchmark-dev libre2-dev libc-ares-dev
  postgresql postgresql-client samba smbclient libnss-wrapper procps iproute2
)
# The console's front end is bundled at build time (console/build.sh); Debian 12's Node.js and
# npm unless an npm is already on PATH.
if ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi
if [[ "${1:-}" == "--tests" ]]; then
  packages+=(g++-mingw-w64-x86-64 clang-format clang-tidy python3 jq)
  # The console's browser test (tests/console/) drives Debian's chromium with playwright-core.
  packages+=(chromium)
fi
# Installed without their recommends: Wine's pull in desktop fonts and libraries the agent's
# console run under Wine does not need.
lean=()
if [[ "${1:-}" == "--tests" ]]; then
  # deploy/windows/build-deps-mingw.sh (RE2's tables come from the Unicode data) and the Wine
  # test (GNU time for its peak working set).
  lean+=(dpkg-dev patch make perl python3-six unicode-data wine64 time)
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
missing_lean=()
for p in "${lean[@]}"; do
  installed "$p" || missing_lean+=("$p")
done
if ((${#missing[@]} + ${#missing_lean[@]} == 0)); then
  exit 0
fi
echo "setup: installing ${missing[*]} ${missing_lean[*]}"
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
# Package scripts must not start system services (smbd on 445, the Debian PostgreSQL cluster):
# smbfleet runs its own private instances.
policy_rc=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy_rc ]]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee $policy_rc >/dev/null
  $SUDO chmod +x $policy_rc
  created_policy=1
fi
trap '[[ $created_policy -eq 1 ]] && $SUDO rm -f $policy_rc' EXIT
$SUDO apt-get update -qq
if ((${#missing[@]} > 0)); then
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ((${#missing_lean[@]} > 0)); then
  $SUDO apt-get install -y -qq --no-install-recommends "${missing_lean[@]}" >/dev/null
fi
echo "setup: done"

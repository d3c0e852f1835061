#!/usr/bin/env bash
# Link launcher of the agent binary (SMBFLEET_AGENT_STATIC, docs/scaling.md "The agent"): runs
# the link command it is given with the system's C++ libraries that have an archive beside them
# (gRPC, protobuf, Abseil, OpenSSL, re2, c-ares, zlib, yaml-cpp) taken from that archive instead
# of the shared library, and unused sections dropped. The C library, libstdc++ (spdlog and fmt
# ship only as shared libraries and need it) and the other libraries (lz4, spdlog) stay shared,
# so that getaddrinfo and NSS keep working as in any dynamically linked program.
#
#   static_link.sh COMPILER ARGS...   (as CMake's RULE_LAUNCH_LINK)
set -euo pipefail

static_names='^(grpc\+\+|grpc|gpr|upb|address_sorting|cares|re2|absl_[a-z0-9_]+|protobuf|ssl|crypto|z|yaml-cpp)$'
args=()
archives=()
for arg in "$@"; do
  name=
  dir=
  if [[ $arg =~ ^(/.+)/lib([^/]+)\.so(\.[0-9.]+)?$ ]]; then
    dir=${BASH_REMATCH[1]} name=${BASH_REMATCH[2]}
  elif [[ $arg =~ ^-l(.+)$ ]]; then
    name=${BASH_REMATCH[1]}
    # The same folder as the other libraries of the system (-L of the command).
    for a in "$@"; do
      [[ $a == -L* && -f ${a#-L}/lib$name.a ]] && dir=${a#-L}
    done
  fi
  if [[ -n $name && -n $dir && $name =~ $static_names && -f $dir/lib$name.a ]]; then
    args+=("$dir/lib$name.a")
    archives+=("$dir/lib$name.a")
  else
    args+=("$arg")
  fi
done
# The archives once more as a group: a static library's undefined symbols are resolved only from
# those after it, and CMake orders the shared ones it was given without that constraint.
if ((${#archives[@]})); then
  args+=("-Wl,--start-group" "${archives[@]}" "-Wl,--end-group")
fi
exec "${args[@]}" -Wl,--gc-sections

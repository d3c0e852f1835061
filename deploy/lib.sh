# Shared helpers for the quick start and test scripts (sourced, not run).

# A TCP port on 127.0.0.1 that nothing listens on.
free_port() {
  # Below the kernel's ephemeral range, so that no outgoing connection of a test running
  # alongside holds the port between this check and the server's bind.
  local port low=32768
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  ((low > 11000)) || low=32768
  for _ in $(seq 1 200); do
    port=$((10000 + RANDOM % (low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
}

# Waits until a file exists and is not empty (e.g. a port file), up to $2 seconds.
wait_for_file() {
  local file=$1 seconds=${2:-30}
  for _ in $(seq 1 $((seconds * 10))); do
    [[ -s "$file" ]] && return 0
    sleep 0.1
  done
  return 1
}

configure_tree() {  # configure_tree SOURCE_DIR BUILD_DIR [extra cmake args...]
  local src=$1 build=$2; shift 2
  # ccache keys on paths relative to the checkout, so every clone (CI's among them) shares hits.
  export CCACHE_BASEDIR=$src CCACHE_NOHASHDIR=1
  cmake -S "$src" -B "$build" -G Ninja "$@" >/dev/null
}

build_tree() {  # build_tree SOURCE_DIR BUILD_DIR [extra cmake args...]
  configure_tree "$@"
  cmake --build "$2" -j2
}

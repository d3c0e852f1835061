#!/usr/bin/env bash
# A private PostgreSQL server for the demo and the tests: its own data directory, socket
# directory and port on 127.0.0.1. PostgreSQL refuses to run as root, so the server runs as the
# postgres user. Nothing is left running after `stop`.
#
#   pg.sh start DIR PORT [--durable]
#                            initdb (first time) and start; prints the connection string.
#                            Fast by default (fsync, synchronous_commit and full_page_writes
#                            off: a crash may lose or tear committed data). --durable turns all
#                            three on, as production runs: the fault suite kills and restarts
#                            this server and must not lose a committed row. The mode is kept in
#                            DIR and reused by `restart`.
#   pg.sh restart DIR fast|immediate
#                            stop the server with that shutdown mode (immediate: no checkpoint,
#                            crash recovery on start, as after a power cut) and start it again
#   pg.sh stop DIR           stop the server started in DIR
#   pg.sh dsn DIR            print the connection string
set -euo pipefail

die() { echo "pg.sh: $*" >&2; exit 1; }
find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do [[ -x "$d/pg_ctl" ]] && { echo "$d"; return; }; done
  die "PostgreSQL server binaries not found (apt-get install postgresql)"
}
as_pg() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# The server's settings: fast (default) or durable (`--durable`, or the mode DIR was started in).
server_options() {
  local dir=$1 port=$2 durability=off
  [[ "$(cat "$dir/mode" 2>/dev/null)" == durable ]] && durability=on
  echo "-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=$durability -c synchronous_commit=$durability -c full_page_writes=$durability -c max_connections=200"
}

start() {
  local dir=$1 port=$2 mode=${3:-fast} bin
  bin=$(find_bin)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || die "user postgres is missing (apt-get install postgresql)"
    chown postgres:postgres "$dir"
    # the postgres user must be able to reach the directory
    local p=$dir
    while [[ "$p" != "/" ]]; do p=$(dirname "$p"); chmod o+x "$p" 2>/dev/null || true; done
  fi
  if [[ ! -f "$dir/data/PG_VERSION" ]]; then
    as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  fi
  echo "$port" > "$dir/port"
  echo "$mode" > "$dir/mode"
  [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$dir/port" "$dir/mode"
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "$(server_options "$dir" "$port")" start >/dev/null \
    || { tail -20 "$dir/server.log" >&2; die "PostgreSQL did not start (port $port in use?)"; }
  as_pg psql -h "$dir" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 \
    -c "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'smbfleet') THEN CREATE ROLE smbfleet LOGIN CREATEDB PASSWORD 'smbfleet'; END IF; END\$\$" >/dev/null
  # Grafana's roles, as an administrator creates them (dashboards/README.md): the read-only
  # role the migrations grant the dashboard views to, and a login that is a member of it.
  as_pg psql -h "$dir" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 \
    -c "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'smbfleet_readonly') THEN CREATE ROLE smbfleet_readonly NOLOGIN; END IF; IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'smbfleet_grafana') THEN CREATE ROLE smbfleet_grafana LOGIN PASSWORD 'smbfleet_grafana' IN ROLE smbfleet_readonly; END IF; END\$\$" >/dev/null
  if [[ -z $(as_pg psql -h "$dir" -p "$port" -U postgres -d postgres -qAt -c "SELECT 1 FROM pg_database WHERE datname = 'smbfleet'") ]]; then
    as_pg psql -h "$dir" -p "$port" -U postgres -d postgres -qAt -c "CREATE DATABASE smbfleet OWNER smbfleet" >/dev/null
  fi
  dsn "$dir"
}

stop() {
  local dir=$1 bin
  bin=$(find_bin)
  [[ -f "$dir/data/postmaster.pid" ]] || return 0
  as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
}

restart() {
  local dir=$1 how=$2 bin
  bin=$(find_bin)
  [[ "$how" == fast || "$how" == immediate ]] || die "restart mode '$how' is not fast or immediate"
  [[ -f "$dir/port" ]] || die "$dir has no server (run 'pg.sh start $dir PORT')"
  as_pg "$bin/pg_ctl" -D "$dir/data" -m "$how" -w -t 60 stop >/dev/null
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "$(server_options "$dir" "$(cat "$dir/port")")" start >/dev/null \
    || { tail -20 "$dir/server.log" >&2; die "PostgreSQL did not start again"; }
}

dsn() {
  local dir=$1
  [[ -f "$dir/port" ]] || die "$dir has no server (run 'pg.sh start $dir PORT')"
  echo "postgresql://smbfleet:smbfleet@127.0.0.1:$(cat "$dir/port")/smbfleet"
}

cmd=${1:-}; shift || true
case "$cmd" in
  start)
    [[ $# -eq 2 || ( $# -eq 3 && "$3" == --durable ) ]] || die "usage: pg.sh start DIR PORT [--durable]"
    start "$1" "$2" "$([[ "${3:-}" == --durable ]] && echo durable || echo fast)" ;;
  restart) [[ $# -eq 2 ]] || die "usage: pg.sh restart DIR fast|immediate"; restart "$@" ;;
  stop) [[ $# -eq 1 ]] || die "usage: pg.sh stop DIR"; stop "$@" ;;
  dsn) [[ $# -eq 1 ]] || die "usage: pg.sh dsn DIR"; dsn "$@" ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac

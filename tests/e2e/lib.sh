# shellcheck shell=bash
# Shared helpers of the end-to-end scripts (sourced, not run). A script starts with
#
#   source "$(dirname "$0")/lib.sh"
#   e2e_init COLLECTOR AGENT SMBFLEETCTL
#
# and gets a private work directory ($work), development certificates for every operator role
# ($work/pki), each operator's approver key ($work/keys, made by `smbfleetctl keys init`; the
# first collector started registers approver-a's, approver-b's and the proposer's as an admin
# would, and agent configs pin them under `trust:`), and a cleanup on exit that stops, by PID, everything started through these
# helpers (processes, Samba labs, databases). Every wait is a bounded poll that fails naming
# what it waited for and shows the tails of the logs. KEEP_E2E=1 keeps $work.
set -euo pipefail
e2e_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../deploy/lib.sh
source "$e2e_root/deploy/lib.sh"

declare -gA e2e_pid=()          # name -> PID of a background process (see spawn)
declare -gA collector_port=()   # collector name -> its gRPC port
e2e_labs=()
e2e_dbs=()

e2e_init() {  # e2e_init COLLECTOR AGENT SMBFLEETCTL [HOST...]: certificates for HOSTs' agents
  collector_bin=$1 agent_bin=$2 ctl_bin=$3
  shift 3
  : "${SMBFLEET_TEST_PG_DSN:?set by deploy/test.sh}"
  command -v jq >/dev/null || { echo "FAIL: jq is missing (deploy/setup.sh --tests)" >&2; exit 1; }
  work=$(mktemp -d /tmp/smbfleet-e2e.XXXXXX)
  chmod 755 "$work"  # smbd serves the shares as the lab user
  trap e2e_cleanup EXIT
  bash "$e2e_root/deploy/ca.sh" dev "$work/pki" "$@" >/dev/null
  # Each person's approver key, made on "their machine": the private key stays in $work/keys.
  # proposer-approver (change_test) is the proposer's name with the approver role.
  mkdir -m 700 "$work/keys"
  local who
  for who in admin viewer proposer approver-a approver-b proposer-approver; do
    "$ctl_bin" keys init --key "$work/keys/$who.key" >"$work/keys/$who.pub"
  done
  approvers_registered=
}

# approver_public WHO: the public key text of WHO's approver key.
approver_public() { sed -n 's/^public key: //p' "$work/keys/$1.pub"; }

# The approvers agents trust: `trust:` of an agent configuration.
trust_yaml() {
  echo "{approvers: {approver-a: '$(approver_public approver-a)', approver-b: '$(approver_public approver-b)', proposer: '$(approver_public proposer-approver)'}}"
}

# An admin registers the approvers' public keys (once per database, on the collector `ctl` uses).
register_approvers() {
  [[ -z "${approvers_registered:-}" ]] || return 0
  ctl admin approvers add approver-a --public-key "@$work/keys/approver-a.pub" >/dev/null
  ctl admin approvers add approver-b --public-key "@$work/keys/approver-b.pub" >/dev/null
  ctl admin approvers add proposer --public-key "@$work/keys/proposer-approver.pub" >/dev/null
  approvers_registered=1
}

e2e_cleanup() {
  local rc=$? name lab db
  for name in "${!e2e_pid[@]}"; do kill "${e2e_pid[$name]}" 2>/dev/null || true; done
  for name in "${!e2e_pid[@]}"; do wait "${e2e_pid[$name]}" 2>/dev/null || true; done
  for lab in "${e2e_labs[@]}"; do
    bash "$e2e_root/deploy/samba-lab.sh" stop "$lab" >/dev/null 2>&1 || true
  done
  for db in "${e2e_dbs[@]}"; do
    psql "$SMBFLEET_TEST_PG_DSN" -qAt -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  done
  if [[ "${KEEP_E2E:-}" == 1 || $rc -ne 0 && "${KEEP_E2E:-}" == onfail ]]; then
    echo "kept $work"
  else
    rm -rf "$work"
  fi
}

step() { echo "-- $*"; }

e2e_logs() {  # the last lines of every log, for a failure
  local f
  for f in "$work"/*.log; do
    [[ -f "$f" ]] || continue
    echo "== ${f##*/} (last 25 lines)" >&2
    tail -25 "$f" >&2
  done
}

fail() {
  echo "FAIL: $*" >&2
  e2e_logs
  exit 1
}

# poll SECONDS WHAT COMMAND...: runs COMMAND every 0.2 s until it succeeds; fails naming WHAT
# after SECONDS.
poll() {
  local seconds=$1 what=$2
  shift 2
  local deadline=$(($(date +%s%N) + seconds * 1000000000))
  until "$@" >/dev/null 2>&1; do
    (($(date +%s%N) < deadline)) || fail "waited ${seconds}s for $what"
    sleep 0.2
  done
}

# Milliseconds since the epoch of an RFC 3339 time (protobuf JSON), or of now without one.
epoch_ms() {
  if (($#)); then date -d "$1" +%s%3N; else date +%s%3N; fi
}

# --- processes -------------------------------------------------------------------------------

# spawn NAME COMMAND...: runs COMMAND in the background; output appended to $work/NAME.log.
spawn() {
  local name=$1
  shift
  [[ -z "${e2e_pid[$name]:-}" ]] || fail "$name is already running"
  "$@" >>"$work/$name.log" 2>&1 &
  e2e_pid[$name]=$!
}

# stop_proc NAME [SIGNAL]: signals the process started as NAME (TERM by default) and reaps it.
stop_proc() {
  local name=$1 signal=${2:-TERM} pid
  pid=${e2e_pid[$name]:-}
  [[ -n "$pid" ]] || fail "no process $name to stop"
  kill "-$signal" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset "e2e_pid[$name]"
}

# exited NAME: the process started as NAME has ended (a zombie not yet reaped counts).
exited() {
  local pid=${e2e_pid[$1]:-}
  [[ -n "$pid" ]] || return 0
  [[ ! -d "/proc/$pid" || "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]]
}

# --- Samba lab -------------------------------------------------------------------------------

lab() { bash "$e2e_root/deploy/samba-lab.sh" "$@"; }

# start_lab NAME: a private smbd in $work/NAME (shares demo and finance, the latter classified
# confidential by the baseline policy's share names).
start_lab() {
  local dir=$work/$1 port attempt
  # Another test's server can take the port between the check and smbd's bind: try another.
  for attempt in 1 2 3; do
    port=$(free_port)
    if lab start "$dir" "$port" >/dev/null; then
      e2e_labs+=("$dir")
      return 0
    fi
  done
  fail "Samba lab $1 did not start"
}

# --- PostgreSQL and collectors ----------------------------------------------------------------

# new_database: a fresh database on the test server; sets $dsn. Dropped at exit.
new_database() {
  local db="smbfleet_e2e_$$_$RANDOM"
  psql "$SMBFLEET_TEST_PG_DSN" -qAt -c "CREATE DATABASE $db" >/dev/null
  e2e_dbs+=("$db")
  dsn="${SMBFLEET_TEST_PG_DSN%/*}/$db"
}

# start_collector NAME [YAML LINE...]: a collector on $dsn with the baseline policy (extra
# top-level YAML lines appended); waits for its port, in ${collector_port[NAME]}. The first one
# started is the one `ctl` talks to ($ctl_port).
start_collector() {
  local name=$1
  shift
  {
    echo "listen: ${collector_listen:-127.0.0.1:0}"  # a fixed port for restarts (tests/fault)
    echo "tls: {cert: pki/collector.pem, key: pki/collector.key, client_ca: pki/ca.pem}"
    echo "database: {dsn: '$dsn'}"
    echo "watch: {keepalive_interval: ${collector_keepalive:-5s}}"  # bench: the default 60s
    # The tests nudge a host several times within seconds; docs/roles.md has the limits' tests.
    # $collector_limits: more limits keys (tests/bench/scale.sh measures some).
    echo "limits: {nudge_interval: 0s${collector_limits:+, $collector_limits}}"
    echo "policy: {file: '$e2e_root/policy/policies/baseline.yaml'}"
    echo "log_level: info"
    # The kind of each client certificate from the CA that issued it (agents CA, people CA).
    cat "$work/pki/collector-identity.yaml"
    local line
    for line in "$@"; do echo "$line"; done
  } >"$work/$name.yaml"
  rm -f "$work/$name.port"
  spawn "$name" "$collector_bin" --config "$work/$name.yaml" --port_file "$work/$name.port"
  wait_for_file "$work/$name.port" 30 || fail "collector $name did not start"
  collector_port[$name]=$(<"$work/$name.port")
  : "${ctl_port:=${collector_port[$name]}}"
  register_approvers || fail "registering the approvers' keys"
}

# --- agents ---------------------------------------------------------------------------------

# agent_config HOST LAB COLLECTOR [CHANGES_YAML]: prints an agent configuration for HOST that
# reads the Samba lab LAB and reports to collector COLLECTOR; CHANGES_YAML is the value of the
# `changes:` key (absent: enforcement off, the default). LAB may instead be a Windows capture
# source, `windows-capture:DIR` (reports only; no Samba tools).
agent_config() {
  local host=$1 labdir=$work/$2 collector=$3 changes=${4:-} source
  if [[ $2 == windows-capture:* ]]; then source=$2; else source="samba:$(lab conf "$labdir")"; fi
  echo "collector: {address: '127.0.0.1:${collector_port[$collector]}', server_name: localhost, max_backoff: 1s}"
  echo "tls: {cert: pki/agent-$host.pem, key: pki/agent-$host.key, ca: pki/ca.pem}"
  echo "source: '$source'"
  echo "labels: {site: lab}"
  echo "schedule: {interval: 1h, splay: 0s, benchmark_interval: 24h, min_nudge_interval: 0s}"
  # One folder per agent: the change journal's default place is beside the spool.
  echo "spool: {dir: agent-$host/spool}"
  [[ -z "$changes" ]] || echo "changes: $changes"
  echo "trust: $(trust_yaml)"
  [[ $source == samba:* ]] || return 0
  echo "tool_env:"
  lab env "$labdir" | sed -E "s/^([^=]+)=(.*)$/  \1: '\2'/"
}

# start_agent NAME CONFIG_FILE [ENV=VALUE...]: a running agent (Watch stream, reports, orders).
start_agent() {
  local name=$1 config=$2
  shift 2
  spawn "$name" env "$@" "$agent_bin" run --config "$config"
}

# start_capture_agent HOST CAPTURE COLLECTOR: an agent for HOST replaying the Windows capture
# folder tests/fixtures/windows/CAPTURE (reports only); waits for its first stored report.
start_capture_agent() {
  local host=$1 capture=$e2e_root/tests/fixtures/windows/$2 collector=$3
  agent_config "$host" "windows-capture:$capture" "$collector" >"$work/agent-$host.yaml"
  start_agent "agent-$host" "$work/agent-$host.yaml"
  poll 30 "a stored report of $host" ctl admin host show "$host"
}

# --- smbfleetctl ----------------------------------------------------------------------------

# ctl WHO ARGS...: smbfleetctl with the certificate of operator WHO (admin, viewer, proposer,
# approver-a, approver-b) against the collector on $ctl_port; WHO's approver key signs.
ctl() {
  local who=$1
  shift
  SMBFLEET_APPROVER_KEY="$work/keys/$who.key" "$ctl_bin" --collector "127.0.0.1:$ctl_port" --cert "$work/pki/operator-$who.pem" \
    --key "$work/pki/operator-$who.key" --ca "$work/pki/ca.pem" "$@"
}

# expect_exit CODE WHAT WHO ARGS...: `ctl WHO ARGS...` must exit with CODE; its output is in
# $work/ctl.out (and printed).
expect_exit() {
  local want=$1 what=$2 got=0
  shift 2
  ctl "$@" >"$work/ctl.out" 2>&1 || got=$?
  sed 's/^/   | /' "$work/ctl.out"
  ((got == want)) || fail "$what: smbfleetctl ${*:2} as $1 exited $got, expected $want"
}

# change_json ID: the change as `changes show ID --format=json` prints it (the Change object).
change_json() { ctl admin changes show "$1" --format=json | jq '.change // .'; }

# change_get ID [JQ OPTIONS...] FILTER: one value of the change (jq -r).
change_get() { change_json "$1" | jq -r "${@:2}"; }

change_state() { change_get "$1" '.state // "CHANGE_STATE_UNSPECIFIED"'; }

host_state() {  # host_state ID HOST
  change_json "$1" | jq -r --arg h "$2" \
    '[.hosts[]? | select(.host == $h)][0].state // "HOST_CHANGE_STATE_UNSPECIFIED"'
}

_is_change_state() { [[ "$(change_state "$1")" == "CHANGE_STATE_$2" ]]; }
_is_host_state() { [[ "$(host_state "$1" "$2")" == "HOST_CHANGE_STATE_$3" ]]; }

# wait_change_state SECONDS ID STATE (without the CHANGE_STATE_ prefix).
wait_change_state() {
  local seconds=$1 id=$2 want=$3
  local deadline=$(($(date +%s%N) + seconds * 1000000000))
  until _is_change_state "$id" "$want"; do
    if (($(date +%s%N) >= deadline)); then
      ctl admin changes show "$id" >&2 || true
      fail "waited ${seconds}s for change $id to reach $want; it is $(change_state "$id")"
    fi
    sleep 0.2
  done
}

# wait_host_state SECONDS ID HOST STATE (without the HOST_CHANGE_STATE_ prefix).
wait_host_state() {
  local seconds=$1 id=$2 host=$3 want=$4
  local deadline=$(($(date +%s%N) + seconds * 1000000000))
  until _is_host_state "$id" "$host" "$want"; do
    if (($(date +%s%N) >= deadline)); then
      ctl admin changes show "$id" >&2 || true
      fail "waited ${seconds}s for $host to reach $want in change $id; it is $(host_state "$id" "$host")"
    fi
    sleep 0.2
  done
}

# audit_count ID ACTION [HOST]: how many audit entries of change ID have ACTION (and HOST).
audit_count() {
  ctl admin audit --change "$1" --format=json |
    jq --arg a "$2" --arg h "${3:-}" '[.entries[]? | select(.action == $a and ($h == "" or .host == $h))] | length'
}

# audit_names ID ACTION HOST: how many audit entries of change ID have ACTION and name HOST, as
# their host or in their detail (a wave's dispatch names its hosts there).
audit_names() {
  ctl admin audit --change "$1" --format=json |
    jq --arg a "$2" --arg h "$3" \
      '[.entries[]? | select(.action == $a and (.host == $h or ((.detail // "") | test("\\b" + $h + "\\b"))))] | length'
}

# propose WHO ARGS...: `changes propose ARGS...` as WHO; prints the new change id (line 1).
propose() {
  local who=$1 out id
  shift
  out=$(ctl "$who" changes propose "$@" 2>&1) ||
    { echo "$out" >&2; fail "changes propose $* as $who failed"; }
  id=$(head -1 <<<"$out")
  [[ "$id" =~ ^[A-Za-z0-9._:-]+$ ]] || { echo "$out" >&2; fail "propose did not print an id on line 1"; }
  echo "$id"
}

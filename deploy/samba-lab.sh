#!/usr/bin/env bash
# A private Samba server on 127.0.0.1 (or SAMBA_LAB_ADDRESS) for tests, demos and benchmarks.
#
#   samba-lab.sh start DIR PORT      create DIR (private smb.conf, state, user), start smbd, wait
#   samba-lab.sh stop DIR            stop everything started for DIR, by PID; wait until gone
#   samba-lab.sh env DIR             KEY=VALUE lines that server-side tools (smbstatus) need
#   samba-lab.sh hold DIR NAME SHARE [smbclient options...]
#                                    open a real smbclient session that stays open until released
#   samba-lab.sh send DIR NAME COMMAND
#                                    run one smbclient command (e.g. 'open readme.txt') in a held
#                                    session; returns once smbclient has finished it
#   samba-lab.sh release DIR NAME    end a held session
#   samba-lab.sh try DIR SHARE [smbclient options...]
#                                    one new connection that lists SHARE and quits; exits 0 when
#                                    the listing worked, 1 when the server refused (output shown)
#   samba-lab.sh status DIR [smbstatus options...]
#                                    smbstatus of the lab server (e.g. --json)
#   samba-lab.sh param DIR SECTION PARAMETER
#                                    the value smbd loads (testparm), e.g. param DIR finance 'smb encrypt'
#   samba-lab.sh conf DIR            print the smb.conf path
#
# The server has shares `demo` and `finance` and the user `smbfleet` / `smbfleet-pass` (a private
# passwd file through nss_wrapper; /etc/passwd is not touched). Agent-managed include files are
# DIR/conf.d/posture.conf (global) and DIR/conf.d/share-<name>.conf; `start` keeps them when they
# already exist, so a test can prepare settings before the first start. Only smbd runs (no nmbd,
# no winbindd); samba-dcerpcd is started by smbd on demand and stopped by `stop` as well.
#
# Environment: SAMBA_LAB_ADDRESS (default 127.0.0.1) is the IPv4 address smbd binds and
# clients dial, e.g. an interface of a network namespace (tests/netpath); SAMBA_LAB_SEND_SECONDS
# (default 5) is how long `send` waits for an answer (a large `get` over a slow link takes longer).
set -euo pipefail

readonly LAB_USER=smbfleet
readonly LAB_PASS=smbfleet-pass
readonly LAB_UID=20001
readonly LAB_SHARES=(demo finance)
readonly LAB_ADDRESS=${SAMBA_LAB_ADDRESS:-127.0.0.1}
readonly SEND_SECONDS=${SAMBA_LAB_SEND_SECONDS:-5}

die() {
  echo "samba-lab: $*" >&2
  exit 1
}

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

find_nss_wrapper() {
  local candidate
  for candidate in /usr/lib/x86_64-linux-gnu/libnss_wrapper.so /usr/lib/aarch64-linux-gnu/libnss_wrapper.so \
    /usr/lib64/libnss_wrapper.so /usr/lib/libnss_wrapper.so; do
    if [[ -e "$candidate" ]]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

require_tools() {
  local missing=()
  local tool
  for tool in smbd smbpasswd smbcontrol testparm smbstatus; do
    command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1 ||
      missing+=("$tool")
  done
  if ((${#missing[@]})); then
    die "missing ${missing[*]}: install the Debian package 'samba'"
  fi
  command -v smbclient >/dev/null 2>&1 || die "missing smbclient: install the Debian package 'smbclient'"
  find_nss_wrapper >/dev/null || die "missing libnss_wrapper.so: install the Debian package 'libnss-wrapper'"
}

abs_dir() {
  [[ -n "$1" ]] || die "DIR is empty"
  mkdir -p -- "$1"
  (cd -- "$1" && pwd -P)
}

existing_dir() {
  [[ -n "$1" && -d "$1" ]] || die "no lab directory '$1'"
  (cd -- "$1" && pwd -P)
}

print_env() {
  local dir=$1
  echo "LD_PRELOAD=$(find_nss_wrapper)"
  echo "NSS_WRAPPER_PASSWD=$dir/passwd"
  echo "NSS_WRAPPER_GROUP=$dir/group"
}

with_lab_env() {
  local dir=$1
  shift
  env "$(print_env "$dir" | sed -n 1p)" "$(print_env "$dir" | sed -n 2p)" \
    "$(print_env "$dir" | sed -n 3p)" PATH="$PATH:/usr/sbin:/sbin" "$@"
}

# pid_of DIR NAME: the live PID in DIR/pid/NAME.pid whose command line names DIR's smb.conf.
pid_of() {
  local dir=$1 name=$2 pid
  [[ -f "$dir/pid/$name.pid" ]] || return 1
  pid=$(tr -dc '0-9' <"$dir/pid/$name.pid")
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qxF -e "$dir/smb.conf" -e "--configfile=$dir/smb.conf" ||
    return 1
  echo "$pid"
}

# PIDs of every process whose command line names DIR's smb.conf (smbd and its children take
# `-s CONF`, samba-dcerpcd and its rpcd workers `--configfile=CONF`). The pattern is an escaped
# regex, so grep's own command line never matches it.
pids_using_conf() {
  local dir=$1 f re
  re=$(printf '%s' "$dir/smb.conf" | sed 's/[][\\.*^$+?(){}|/]/\\&/g')
  for f in $(grep -lzxE -- "(--configfile=)?$re" /proc/[0-9]*/cmdline 2>/dev/null); do
    f=${f#/proc/}
    echo "${f%/cmdline}"
  done
}

port_listening() {
  local port=$1
  (exec 3<>"/dev/tcp/$LAB_ADDRESS/$port") 2>/dev/null
}

# smbd_listens PID PORT: process PID holds a TCP socket listening on PORT (/proc/net/tcp of this
# network namespace), so that a port another program took between its choice and smbd's bind
# is not mistaken for the lab's server.
smbd_listens() {
  local pid=$1 port=$2 hex inode
  printf -v hex '%04X' "$port"
  # Fields: sl local_address(ADDR:PORT, hex) rem_address st(0A = LISTEN) ... inode (the 10th).
  for inode in $(awk -v p=":$hex" 'substr($2, length($2) - 4) == p && $4 == "0A" { print $10 }' \
    /proc/net/tcp); do
    [[ -n $(find "/proc/$pid/fd" -lname "socket:\[$inode\]" 2>/dev/null | head -n1) ]] && return 0
  done
  return 1
}

write_conf() {
  local dir=$1 port=$2 share
  {
    cat <<EOF
# Private lab server written by samba-lab.sh; regenerated by every start.
[global]
    server role = standalone server
    workgroup = SMBFLEET
    netbios name = SMBFLEET-LAB
    smb ports = $port
    interfaces = $LAB_ADDRESS
    bind interfaces only = yes
    disable netbios = yes
    private dir = $dir/private
    lock directory = $dir/lock
    state directory = $dir/state
    cache directory = $dir/cache
    pid directory = $dir/pid
    ncalrpc dir = $dir/ncalrpc
    binddns dir = $dir/bind-dns
    usershare path = $dir/usershares
    passdb backend = tdbsam:$dir/private/passdb.tdb
    log file = $dir/log/log.%m
    log level = 1 auth_audit:3
    max log size = 1000
    load printers = no
    printing = bsd
    printcap name = /dev/null
    disable spoolss = yes
    # Agent-managed global settings; last in [global] so that they win.
    include = $dir/conf.d/posture.conf
EOF
    for share in "${LAB_SHARES[@]}"; do
      cat <<EOF

[$share]
    path = $dir/shares/$share
    comment = smbfleet lab share $share
    read only = no
    valid users = $LAB_USER
    # Agent-managed settings of this share.
    include = $dir/conf.d/share-$share.conf
EOF
    done
  } >"$dir/smb.conf.tmp"
  mv -f -- "$dir/smb.conf.tmp" "$dir/smb.conf"
  cat >"$dir/client.conf" <<EOF
# Client settings for smbclient against the lab (keeps it off /etc/samba/smb.conf).
[global]
    client min protocol = SMB2_02
    lock directory = $dir/client-lock
    state directory = $dir/client-lock
    cache directory = $dir/client-lock
    private dir = $dir/client-lock
EOF
  printf 'username = %s\npassword = %s\ndomain = SMBFLEET\n' "$LAB_USER" "$LAB_PASS" >"$dir/smbfleet.auth"
  chmod 600 "$dir/smbfleet.auth"
}

cmd_start() {
  (($# == 2)) || usage
  local dir port
  [[ "$2" =~ ^[0-9]+$ ]] && (($2 > 0 && $2 < 65536)) || die "PORT must be 1-65535, got '$2'"
  port=$2
  require_tools
  dir=$(abs_dir "$1")
  if pid=$(pid_of "$dir" smbd); then
    die "smbd for $dir is already running (pid $pid)"
  fi
  if port_listening "$port"; then
    die "$LAB_ADDRESS:$port is already in use"
  fi
  mkdir -p "$dir"/{private,lock,state,cache,pid,ncalrpc,bind-dns,usershares,log,conf.d,holds,client-lock}
  # The share user (not root) must be able to reach the shares below DIR.
  chmod a+x "$dir"
  chmod 700 "$dir/private" "$dir/client-lock"
  chmod 755 "$dir/ncalrpc"
  local share
  for share in "${LAB_SHARES[@]}"; do
    mkdir -p "$dir/shares/$share"
    chmod 777 "$dir/shares/$share"
    [[ -e "$dir/shares/$share/readme.txt" ]] || echo "smbfleet lab share $share" >"$dir/shares/$share/readme.txt"
    [[ -e "$dir/conf.d/share-$share.conf" ]] || echo "# agent-managed settings for [$share]" >"$dir/conf.d/share-$share.conf"
  done
  [[ -e "$dir/conf.d/posture.conf" ]] || echo "# agent-managed global settings" >"$dir/conf.d/posture.conf"
  write_conf "$dir" "$port"

  grep -q "^$LAB_USER:" "$dir/passwd" 2>/dev/null || {
    cp /etc/passwd "$dir/passwd"
    echo "$LAB_USER:x:$LAB_UID:$LAB_UID:smbfleet lab:/nonexistent:/usr/sbin/nologin" >>"$dir/passwd"
    cp /etc/group "$dir/group"
    echo "$LAB_USER:x:$LAB_UID:" >>"$dir/group"
  }
  chown "$LAB_UID:$LAB_UID" "$dir/shares"/* 2>/dev/null || true

  if ! with_lab_env "$dir" testparm -s "$dir/smb.conf" >"$dir/log/testparm.out" 2>&1; then
    cat "$dir/log/testparm.out" >&2
    die "testparm rejects $dir/smb.conf (see above)"
  fi
  if ! printf '%s\n%s\n' "$LAB_PASS" "$LAB_PASS" |
    with_lab_env "$dir" smbpasswd -s -c "$dir/smb.conf" -a "$LAB_USER" >"$dir/log/smbpasswd.out" 2>&1; then
    cat "$dir/log/smbpasswd.out" >&2
    die "smbpasswd could not add $LAB_USER"
  fi

  with_lab_env "$dir" smbd -D -s "$dir/smb.conf" </dev/null >"$dir/log/smbd.out" 2>&1 ||
    die "smbd did not start: $(cat "$dir/log/smbd.out")"
  local i pid
  # 30 s: a loaded 2-core machine running tests side by side can take more than 10.
  for ((i = 0; i < 600; i++)); do
    if pid=$(pid_of "$dir" smbd) && smbd_listens "$pid" "$port"; then
      echo "$port" >"$dir/port"
      return 0
    fi
    sleep 0.05
  done
  cmd_stop "$dir" || true
  die "smbd did not listen on $LAB_ADDRESS:$port within 30 s (see $dir/log/log.smbd)"
}

# wait_gone PID...: TERM, then KILL after 5 s; returns when every PID has exited.
wait_gone() {
  local pid i alive
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    alive=0
    for pid in "$@"; do
      [[ -d "/proc/$pid" ]] && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]] && alive=1
    done
    ((alive)) || return 0
    sleep 0.05
  done
  kill -KILL "$@" 2>/dev/null || true
  sleep 0.1
}

cmd_release() {
  (($# == 2)) || usage
  local dir name
  dir=$(existing_dir "$1")
  name=$2
  [[ "$name" =~ ^[A-Za-z0-9_.-]+$ ]] || die "NAME must be letters, digits, '.', '_' or '-'"
  [[ -f "$dir/holds/$name.pids" ]] || die "no held session '$name' in $dir"
  if [[ -p "$dir/holds/$name.fifo" ]]; then
    # Ask smbclient to quit cleanly; the timeout covers a reader that is already gone.
    timeout 2 bash -c 'echo quit >"$1"' _ "$dir/holds/$name.fifo" 2>/dev/null || true
  fi
  local pids=()
  read -r -a pids <"$dir/holds/$name.pids" || true
  wait_gone "${pids[@]}"
  rm -f "$dir/holds/$name.pids" "$dir/holds/$name.fifo"
}

cmd_stop() {
  (($# == 1)) || usage
  local dir f pid
  dir=$(existing_dir "$1")
  for f in "$dir"/holds/*.pids; do
    [[ -e "$f" ]] || continue
    cmd_release "$dir" "$(basename "$f" .pids)" || true
  done
  local pids=()
  for name in smbd samba-dcerpcd; do
    if pid=$(pid_of "$dir" "$name"); then pids+=("$pid"); fi
  done
  wait_gone "${pids[@]}"
  # Connection children and rpcd workers that outlived their parent.
  mapfile -t pids < <(pids_using_conf "$dir")
  wait_gone "${pids[@]}"
  mapfile -t pids < <(pids_using_conf "$dir")
  ((${#pids[@]} == 0)) || die "still running for $dir: ${pids[*]}"
  rm -f "$dir/pid/smbd.pid" "$dir/pid/samba-dcerpcd.pid"
}

cmd_hold() {
  (($# >= 3)) || usage
  local dir name share port
  dir=$(existing_dir "$1")
  name=$2
  share=$3
  shift 3
  [[ "$name" =~ ^[A-Za-z0-9_.-]+$ ]] || die "NAME must be letters, digits, '.', '_' or '-'"
  [[ "$share" =~ ^[A-Za-z0-9_.$-]+$ ]] || die "SHARE must be letters, digits, '.', '_', '$' or '-'"
  [[ -f "$dir/port" ]] || die "lab $dir is not started"
  port=$(<"$dir/port")
  [[ ! -e "$dir/holds/$name.pids" ]] || die "session '$name' is already held"
  local creds=(-A "$dir/smbfleet.auth") opt
  for opt in "$@"; do
    case "$opt" in -U* | --user* | -N | --no-pass | -A* | --authentication-file*) creds=() ;; esac
  done
  local fifo="$dir/holds/$name.fifo" out="$dir/holds/$name.out"
  rm -f "$fifo" "$out"
  mkfifo -m 600 "$fifo"
  # smbclient reads commands from the fifo; `sleep` keeps its write end open so that the session
  # stays until release. Both run in their own session, detached from the caller's terminal.
  setsid stdbuf -oL -eL smbclient -s "$dir/client.conf" -p "$port" "//$LAB_ADDRESS/$share" \
    "${creds[@]}" "$@" <"$fifo" >"$out" 2>&1 &
  local client_pid=$!
  setsid sleep 86400 >"$fifo" 2>/dev/null </dev/null &
  local keeper_pid=$!
  echo "$client_pid $keeper_pid" >"$dir/holds/$name.pids"
  timeout 5 bash -c 'echo ls >"$1"' _ "$fifo" 2>/dev/null || true
  local i
  for ((i = 0; i < 300; i++)); do
    if grep -q 'blocks of size' "$out" 2>/dev/null; then
      return 0
    fi
    if ! [[ -d "/proc/$client_pid" ]]; then
      break
    fi
    sleep 0.05
  done
  cmd_release "$dir" "$name" >/dev/null 2>&1 || true
  echo "samba-lab: session '$name' to //$LAB_ADDRESS/$share was not established:" >&2
  cat "$out" >&2 2>/dev/null || true
  return 1
}

cmd_send() {
  (($# == 3)) || usage
  local dir name before i
  dir=$(existing_dir "$1")
  name=$2
  [[ "$name" =~ ^[A-Za-z0-9_.-]+$ ]] || die "NAME must be letters, digits, '.', '_' or '-'"
  [[ -p "$dir/holds/$name.fifo" ]] || die "no held session '$name' in $dir"
  [[ "$3" != *$'\n'* ]] || die "COMMAND must be one line"
  local out="$dir/holds/$name.out" fifo="$dir/holds/$name.fifo"
  before=$(stat -c %s "$out")
  timeout 5 bash -c 'printf "%s\n" "$2" >"$1"' _ "$fifo" "$3" ||
    die "session '$name' does not take commands"
  for ((i = 0; i < SEND_SECONDS * 20; i++)); do
    if (($(stat -c %s "$out") > before)); then
      # The first output may come before COMMAND has finished. smbclient runs one command after
      # another and reads the next line only when the last one is done (each on its own write:
      # it does not take a second line it has already buffered until more input comes), so
      # once a `pwd` sent now has answered, COMMAND has finished.
      timeout 5 bash -c 'printf "pwd\n" >"$1"' _ "$fifo" || die "session '$name' does not take commands"
      for (( ; i < SEND_SECONDS * 20; i++)); do
        tail -c "+$((before + 1))" "$out" | grep -q '^Current directory is' && return 0
        sleep 0.05
      done
      break
    fi
    sleep 0.05
  done
  die "session '$name' did not answer '$3' within $SEND_SECONDS s"
}

cmd_try() {
  (($# >= 2)) || usage
  local dir share port
  dir=$(existing_dir "$1")
  share=$2
  shift 2
  [[ "$share" =~ ^[A-Za-z0-9_.$-]+$ ]] || die "SHARE must be letters, digits, '.', '_', '$' or '-'"
  [[ -f "$dir/port" ]] || die "lab $dir is not started"
  port=$(<"$dir/port")
  local out
  # smbclient's exit status is not reliable for a refused tree connect: look for the listing.
  out=$(timeout 20 smbclient -s "$dir/client.conf" -p "$port" "//$LAB_ADDRESS/$share" \
    -A "$dir/smbfleet.auth" "$@" -c ls 2>&1) || true
  printf '%s\n' "$out"
  grep -q 'blocks of size' <<<"$out"
}

main() {
  (($# >= 1)) || usage
  [[ "$LAB_ADDRESS" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] ||
    die "SAMBA_LAB_ADDRESS must be an IPv4 address like 127.0.0.1, got '$LAB_ADDRESS'"
  [[ "$SEND_SECONDS" =~ ^[0-9]+$ ]] && ((SEND_SECONDS >= 1 && SEND_SECONDS <= 3600)) ||
    die "SAMBA_LAB_SEND_SECONDS must be 1-3600, got '$SEND_SECONDS'"
  local cmd=$1
  shift
  case "$cmd" in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    env)
      (($# == 1)) || usage
      print_env "$(existing_dir "$1")"
      ;;
    hold) cmd_hold "$@" ;;
    send) cmd_send "$@" ;;
    release) cmd_release "$@" ;;
    try) cmd_try "$@" ;;
    status)
      (($# >= 1)) || usage
      local dir
      dir=$(existing_dir "$1")
      shift
      with_lab_env "$dir" smbstatus -s "$dir/smb.conf" "$@"
      ;;
    param)
      (($# == 3)) || usage
      local dir
      dir=$(existing_dir "$1")
      with_lab_env "$dir" testparm -s --section-name="$2" --parameter-name="$3" "$dir/smb.conf" 2>/dev/null
      ;;
    conf)
      (($# == 1)) || usage
      echo "$(existing_dir "$1")/smb.conf"
      ;;
    *) usage ;;
  esac
}

main "$@"

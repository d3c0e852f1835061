#!/usr/bin/env bash
# `smbfleetctl completion bash`, sourced in bash: what the completion function offers for the
# words typed so far, at the first, second and third level, for commands and flags.
# Usage: completion_test.sh SMBFLEETCTL
set -euo pipefail
ctl=$1

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# shellcheck source=/dev/null
source <("$ctl" completion bash)
complete -p smbfleetctl | grep -q -- "-F _smbfleetctl" || fail "no completion registered"

# offers WORD...: COMPREPLY for the command line WORD... (the last word is being completed).
offers() {
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _smbfleetctl
  echo "${COMPREPLY[*]}"
}

# expect WANT WORD...
expect() {
  local want=$1 got
  shift
  got=$(offers "$@")
  [[ "$got" == "$want" ]] || fail "completing '$*': got '$got', want '$want'"
  echo "ok: '$*' -> '$got'"
}

# Level 1: commands, and the global flags.
expect "changes" smbfleetctl ch
expect "compliance changes certs completion" smbfleetctl c
expect "--config --collector --cert --ca --call-timeout" smbfleetctl --c
# Level 2: subcommands of a command, its own and the global flags.
expect "propose list show approve reject halt resume rollback watch calibration" smbfleetctl changes ""
expect "approve" smbfleetctl changes ap
expect "init-root sign-approvers publish show" smbfleetctl trust ""
expect "--waves --watch --window" smbfleetctl changes approve --w
expect "--interval" smbfleetctl changes watch CHG-1 --i
expect "--uses" smbfleetctl enroll-tokens create --u
# Level 3 through a flag's value: "host" after --collector is its value, not the command.
expect "show refresh" smbfleetctl --collector host host ""
expect "label" smbfleetctl --format json hosts l
expect "--reason" smbfleetctl hosts label fs01 site=x --re
expect "readiness" smbfleetctl rea
expect "--rule" smbfleetctl readiness --r
expect "--limit" smbfleetctl readiness --rule min-dialect-3-1-1 --l
# Nothing below a leaf.
expect "" smbfleetctl whoami ""
echo "completion: all cases passed"

#!/usr/bin/env bash
# Development certificate authority for smbfleet (openssl).
#
#   ca.sh init DIR                       create the CAs (once): DIR/ca.pem + ca.key, the root that
#                                        signs collectors and that agents and smbfleetctl pin;
#                                        DIR/agents-ca.pem + .key, which issues agents'
#                                        certificates; DIR/people-ca.pem + .key, people's
#                                        (both intermediates under the root)
#   ca.sh collector DIR NAME [IP...]     server certificate for a collector (SAN: NAME, localhost,
#                                        IPs), 90 days, from the root
#   ca.sh agent DIR HOSTNAME             client certificate of an agent: CN=HOSTNAME, OU=agent,
#                                        7 days, from the agents CA
#   ca.sh operator DIR USER ROLE [FILE]  client certificate of a person: CN=USER, OU=operator, OU=ROLE
#                                        (ROLE: viewer, proposer, approver, admin, or several
#                                        joined by commas, one OU each), written to
#                                        DIR/FILE.pem and .key (default operator-USER); one person
#                                        may hold a certificate per role; 90 days, from the people CA
#   ca.sh roles DIR                      one operator per role for trying change management:
#                                        viewer, proposer, approver-a, approver-b (both approvers)
#   ca.sh dev DIR [HOST...]              all of the above for a local demo or test (the operators
#                                        are admin plus those of `roles`), and
#                                        DIR/collector-identity.yaml: the collector's `identity`
#                                        section naming the agents and people CAs
#
# Client certificates (agents, people) are written with their issuing CA after them, so that
# the collector verifies them against ca.pem alone; it tells their kind by the CA that issued
# them (identity.agent_issuers, identity.operator_issuers). Serials are random (128 bits).
# The identity of an agent is its certificate's first DNS SAN (else CN); the collector never
# trusts a host name from a report. Keys are written with mode 0600.
#
# Lifetimes may be changed for tests with SMBFLEET_CA_AGENT_DAYS, SMBFLEET_CA_PEOPLE_DAYS,
# SMBFLEET_CA_SERVER_DAYS.
set -euo pipefail

die() { echo "ca.sh: $*" >&2; exit 1; }
command -v openssl >/dev/null || die "openssl is missing (apt-get install openssl)"

valid_name() { [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$ ]] || die "'$1' is not a valid name (letters, digits, . _ -)"; }

agent_days=${SMBFLEET_CA_AGENT_DAYS:-7}
people_days=${SMBFLEET_CA_PEOPLE_DAYS:-90}
server_days=${SMBFLEET_CA_SERVER_DAYS:-90}

serial() { echo "0x$(openssl rand -hex 16)"; }

# An intermediate CA under the root: issues one kind of client certificate only.
sub_ca() {  # dir basename common-name
  local dir=$1 base=$2 cn=$3
  [[ -f "$dir/$base.pem" ]] && return 0
  (umask 077; openssl ecparam -name prime256v1 -genkey -noout -out "$dir/$base.key")
  openssl req -new -key "$dir/$base.key" -subj "/O=smbfleet/CN=$cn" -out "$dir/$base.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:TRUE,pathlen:0" \
    "keyUsage=critical,keyCertSign,cRLSign" "subjectKeyIdentifier=hash" \
    "authorityKeyIdentifier=keyid" "extendedKeyUsage=clientAuth" > "$dir/$base.ext"
  openssl x509 -req -in "$dir/$base.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -set_serial "$(serial)" \
    -days 1825 -sha256 -extfile "$dir/$base.ext" -out "$dir/$base.pem" 2>/dev/null
  rm -f "$dir/$base.csr" "$dir/$base.ext"
}

init() {
  local dir=$1
  mkdir -p "$dir"
  if [[ ! -f "$dir/ca.pem" ]]; then
    (umask 077; openssl ecparam -name prime256v1 -genkey -noout -out "$dir/ca.key")
    openssl req -x509 -new -key "$dir/ca.key" -sha256 -days 3650 -subj "/O=smbfleet/CN=smbfleet dev CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -out "$dir/ca.pem" 2>/dev/null
  fi
  sub_ca "$dir" agents-ca "smbfleet agents CA"
  sub_ca "$dir" people-ca "smbfleet people CA"
}

issue() {  # dir basename subject extfile-content issuer-basename days
  local dir=$1 base=$2 subject=$3 ext=$4 ca=$5 days=$6
  [[ -f "$dir/$ca.pem" ]] || die "$dir has no $ca.pem: run 'ca.sh init $dir' first"
  (umask 077; openssl ecparam -name prime256v1 -genkey -noout -out "$dir/$base.key")
  openssl req -new -key "$dir/$base.key" -subj "$subject" -out "$dir/$base.csr" 2>/dev/null
  printf '%s\n' "$ext" "authorityKeyIdentifier=keyid" > "$dir/$base.ext"
  openssl x509 -req -in "$dir/$base.csr" -CA "$dir/$ca.pem" -CAkey "$dir/$ca.key" -set_serial "$(serial)" \
    -days "$days" -sha256 -extfile "$dir/$base.ext" -out "$dir/$base.pem" 2>/dev/null
  # A client certificate carries its intermediate, so that ca.pem alone verifies it.
  if [[ "$ca" != ca ]]; then cat "$dir/$ca.pem" >> "$dir/$base.pem"; fi
  rm -f "$dir/$base.csr" "$dir/$base.ext"
}

# The collector's `identity` section for this directory (paste into, or append to, its config).
identity_snippet() {
  local dir
  dir=$(cd "$1" && pwd)
  printf '%s\n' "identity:" "  agent_issuers: [$dir/agents-ca.pem]" \
    "  operator_issuers: [$dir/people-ca.pem]" > "$dir/collector-identity.yaml"
}

collector() {
  local dir=$1 name=$2; shift 2
  valid_name "$name"
  local san="DNS:$name,DNS:localhost,IP:127.0.0.1"
  for ip in "$@"; do san="$san,IP:$ip"; done
  issue "$dir" "collector" "/O=smbfleet/OU=collector/CN=$name" \
    "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$san" ca "$server_days"
}

agent() {
  local dir=$1 host=$2
  valid_name "$host"
  issue "$dir" "agent-$host" "/O=smbfleet/OU=agent/CN=$host" \
    "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
subjectAltName=DNS:$host" agents-ca "$agent_days"
}

operator() {
  local dir=$1 user=$2 role=$3 file=${4:-operator-$2}
  valid_name "$user"
  valid_name "$file"
  local ous="" r
  local -a wanted
  IFS=, read -ra wanted <<< "$role"
  [[ ${#wanted[@]} -gt 0 ]] || die "no role given"
  for r in "${wanted[@]}"; do
    case "$r" in viewer|proposer|approver|admin) ;; *) die "role '$r' is not one of viewer, proposer, approver, admin";; esac
    ous="$ous/OU=$r"
  done
  issue "$dir" "$file" "/O=smbfleet/OU=operator$ous/CN=$user" \
    "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth" people-ca "$people_days"
}

# Four-eyes needs two distinct approvers, and the proposer may not approve its own change.
roles() {
  local dir=$1
  operator "$dir" viewer viewer
  operator "$dir" proposer proposer
  operator "$dir" approver-a approver
  operator "$dir" approver-b approver
}

cmd=${1:-}; shift || true
case "$cmd" in
  init) [[ $# -eq 1 ]] || die "usage: ca.sh init DIR"; init "$1" ;;
  collector) [[ $# -ge 2 ]] || die "usage: ca.sh collector DIR NAME [IP...]"; collector "$@" ;;
  agent) [[ $# -eq 2 ]] || die "usage: ca.sh agent DIR HOSTNAME"; agent "$@" ;;
  operator) [[ $# -eq 3 || $# -eq 4 ]] || die "usage: ca.sh operator DIR USER ROLE [FILE]"; operator "$@" ;;
  roles) [[ $# -eq 1 ]] || die "usage: ca.sh roles DIR"; roles "$1" ;;
  dev)
    [[ $# -ge 1 ]] || die "usage: ca.sh dev DIR [HOST...]"
    dir=$1; shift
    init "$dir"
    collector "$dir" localhost
    operator "$dir" admin admin
    roles "$dir"
    for h in "$@"; do agent "$dir" "$h"; done
    identity_snippet "$dir" ;;
  *) sed -n '2,32p' "$0" >&2; exit 2 ;;
esac

# shellcheck shell=bash
# The shared start of the agent's fault scenarios (sourced by agent_*.sh, not a scenario itself):
# tests/e2e/lib.sh, a PostgreSQL of the scenario's own when SMBFLEET_TEST_PG_DSN is not set (the
# fault suite runs without one; durable where deploy/pg.sh offers it), e2e_init with the binaries
# of SMBFLEET_BUILD_DIR and certificates for the hosts given, and a cleanup that runs the
# scenario's `before_cleanup` (when it defines one), then e2e_cleanup, then stops that server.
#
#   agent_fault_mode SCENARIO SHORT LONG "$@"   sets $mode (short, long) and $rounds
#   agent_fault_init HOST...
set -euo pipefail
: "${SMBFLEET_BUILD_DIR:?the build tree with the binaries}"
# shellcheck source-path=SCRIPTDIR source=../../e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../e2e/lib.sh"

agent_fault_mode() {
  local scenario=$1 short=$2 long=$3
  # shellcheck disable=SC2034  # mode and rounds are the scenario's
  case "${4:---short}" in
    --short) mode=short rounds=$short ;;
    --long) mode=long rounds=$long ;;
    *) echo "usage: $scenario.sh [--short|--long]" >&2; exit 2 ;;
  esac
}

agent_fault_init() {
  own_pg=
  if [[ -z "${SMBFLEET_TEST_PG_DSN:-}" ]]; then
    own_pg=$(mktemp -d /tmp/smbfleet-fault-pg.XXXXXX)
    local durable=()
    grep -q -- '--durable' "$e2e_root/deploy/pg.sh" && durable=(--durable)
    SMBFLEET_TEST_PG_DSN=$(bash "$e2e_root/deploy/pg.sh" start "$own_pg" "$(free_port)" "${durable[@]}")
    export SMBFLEET_TEST_PG_DSN
  fi
  local b=$SMBFLEET_BUILD_DIR
  e2e_init "$b/collector/smbfleet-collector" "$b/agent/smbfleet-agent" "$b/cli/smbfleetctl" "$@"
  trap agent_fault_cleanup EXIT  # e2e_init set its own: ours calls it
}

agent_fault_cleanup() {
  local rc=$?
  set +e
  declare -F before_cleanup >/dev/null && before_cleanup
  (exit "$rc")  # e2e_cleanup reads the exit status as $? (KEEP_E2E=onfail)
  e2e_cleanup
  if [[ -n "$own_pg" ]]; then
    bash "$e2e_root/deploy/pg.sh" stop "$own_pg" >/dev/null 2>&1
    rm -rf "$own_pg"
  fi
  exit "$rc"
}

# duplicated_reports: reports stored more than once (rows beyond one per report_id, in reports and
# in the posture history).
duplicated_reports() {
  psql "$dsn" -qAt -c "SELECT (SELECT count(*) - count(DISTINCT report_id) FROM reports) +
    (SELECT count(*) FROM (SELECT report_id FROM postures GROUP BY report_id HAVING count(*) > 1) d)"
}

# spool_told CODE: a stored posture carries the spool's probe error with CODE (DROPPED, CORRUPT).
spool_told() {
  (($(psql "$dsn" -qAt -c "SELECT count(*) FROM postures WHERE posture_json->'probeErrors' @> '[{\"probe\": \"spool\", \"code\": \"$1\"}]'") > 0))
}

# spooled_ids LOG: the report ids the agent logged as spooled (durable in its spool), sorted.
spooled_ids() { grep -o 'report [0-9a-f-]\{36\} spooled$' "$1" | awk '{print $2}' | sort -u; }

# shellcheck shell=bash
# Counting helpers of the agent's fault scenarios (sourced by agent_*.sh, not a scenario itself),
# on top of the suite's lib.sh (fault_init: mode, a durable PostgreSQL, certificates, cleanup;
# a scenario may define before_cleanup for teardown that must come first).
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

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

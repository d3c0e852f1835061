#!/usr/bin/env bash
# The fault suite (docs/fault-tests.md): runs every tests/fault/scenarios/*.sh, one after the
# other, and prints one JSON document {"scenarios": [...]} with each scenario's figures (the
# last line of its output) and its exit status. Exits non-zero if any scenario failed.
#
#   SMBFLEET_BUILD_DIR=build tests/fault/run.sh [--short|--long] [NAME...]
#
# Each scenario's output goes to $SMBFLEET_FAULT_LOGS (default: a new folder, named on stderr).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
form=--short
if [[ "${1:-}" == --short || "${1:-}" == --long ]]; then form=$1; shift; fi
: "${SMBFLEET_BUILD_DIR:?the build tree with the binaries, e.g. SMBFLEET_BUILD_DIR=build}"
SMBFLEET_BUILD_DIR=$(cd "$SMBFLEET_BUILD_DIR" && pwd)
export SMBFLEET_BUILD_DIR
logs=${SMBFLEET_FAULT_LOGS:-$(mktemp -d /tmp/smbfleet-fault-logs.XXXXXX)}
mkdir -p "$logs"
echo "fault suite ($form): logs in $logs" >&2

names=("$@")
if ((${#names[@]} == 0)); then
  for f in "$here"/scenarios/*.sh; do names+=("$(basename "$f" .sh)"); done
fi
failed=0
results=()
for name in "${names[@]}"; do
  script=$here/scenarios/$name.sh
  [[ -x "$script" ]] || { echo "no scenario $name ($script)" >&2; failed=1; continue; }
  echo "-- $name" >&2
  start=$(date +%s%3N)
  rc=0
  "$script" "$form" >"$logs/$name.log" 2>&1 || rc=$?
  seconds=$(( ($(date +%s%3N) - start) / 1000 ))
  last=$(tail -1 "$logs/$name.log")
  jq -e 'type == "object"' <<<"$last" >/dev/null 2>&1 || last='{}'
  ((rc == 0)) || { failed=1; echo "   FAILED (exit $rc): $logs/$name.log" >&2; }
  results+=("$(jq -c --arg n "$name" --argjson rc "$rc" --argjson s "$seconds" \
    '{scenario: $n} + . + {exit: $rc, seconds: $s}' <<<"$last")")
done
printf '%s\n' "${results[@]}" | jq -s --arg form "${form#--}" '{form: $form, scenarios: .}'
exit "$failed"

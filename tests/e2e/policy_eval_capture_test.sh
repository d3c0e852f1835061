#!/usr/bin/env bash
# The operator's offline path on a Windows capture: `smbfleet-agent collect --once
# --source=windows-capture:DIR` piped into `smbfleetctl policy eval`. On a server whose own client
# talks to an old NAS over SMB 2.1 without signing, the plan that requires client signing names
# that NAS, with the connection as evidence; the encrypted and signed connections are not named.
#   policy_eval_capture_test.sh AGENT SMBFLEETCTL
set -euo pipefail
agent_bin=$1
ctl_bin=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/smbfleet-eval.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$agent_bin" collect --once --source="windows-capture:$root/tests/fixtures/windows/ws2022-nas-client" \
  --format=json >"$work/posture.json"
"$ctl_bin" policy eval --policy "$root/policy/policies/baseline.yaml" \
  --posture "$work/posture.json" --now 2026-12-01T00:00:00Z >"$work/text"
cat "$work/text"
grep -qE '^  [0-9]+\. \[REQUIRE\] client\.requireSigning: false -> true' "$work/text" ||
  fail "no client.requireSigning step"
line=$(grep -E '^    client\.requireSigning: oldnas ' "$work/text") || fail "oldnas not named"
grep -qF 'this host'"'"'s connection to \\oldnas\scans dialect 2.1 signed=false' <<<"$line" ||
  fail "no connection evidence: $line"
if grep -qE '^    client\.requireSigning: (dc01|contosofiles)' "$work/text"; then
  fail "a signed or encrypted connection was named"
fi

"$ctl_bin" policy eval --policy "$root/policy/policies/baseline.yaml" \
  --posture "$work/posture.json" --now 2026-12-01T00:00:00Z --format=json >"$work/json"
python3 - "$work/json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))["plan"]
own = [c for c in plan["impact"]["clients"]
       if c["setting"] == "client.requireSigning" and c["source"] == "IMPACT_SOURCE_OWN_CONNECTION"]
assert [c["clientName"] for c in own] == ["oldnas"], own
assert own[0]["share"] == "scans" and own[0]["dialect"] == "DIALECT_SMB_2_1", own[0]
PY
echo "PASS"

#!/usr/bin/env bash
# End to end change management on a real smbd, real PostgreSQL and mutual TLS: a change is
# proposed from the baseline policy's plan, approved under four-eyes, pushed over the agent's
# Watch stream, applied to smb.conf and reloaded, and rolled back; and the ways it must stop.
#
#   change_test.sh SCENARIO COLLECTOR AGENT SMBFLEETCTL      (needs SMBFLEET_TEST_PG_DSN)
#
# SCENARIO:
#   flow            propose -> own/viewer approval refused -> two approvers -> applied over the
#                   stream -> SMB2_10 refused, SMB3 encrypted -> compliant -> rollback
#   refused         enforcement off on the agent: REFUSED with the reason, nothing touched
#   precondition    smb.conf edited after approval while the agent is away: PRECONDITION_FAILED,
#                   smb.conf byte-identical
#   halt            a refused canary halts the rollout; the second wave's host is never dispatched
#   offline         an agent away at approval gets its order when it reconnects
#   two-collectors  approval through collector A, the agent's stream on collector B
#   tampered        someone with write access to the database rewrites an approved order while
#                   the agent is away (one payload byte; then, on a second change, one of two
#                   signatures dropped and the rule lowered to one): REFUSED, smb.conf untouched
#   crash-journal   the agent dies right after its journal entry (before applying), and
#   crash-apply     right after applying (before its ack); after a restart the change is acked
#                   exactly once
set -euo pipefail
scenario=$1
shift
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

# What the baseline policy's plan for the lab sets on Samba; the agents allow exactly these.
readonly ALLOW="[server.requireSigning, client.requireSigning, server.minDialect, share.encryptData, client.minDialect, client.requireEncryption]"
# Load counters every second, in windows of three (docs/agent-changes.md "Counters around a change").
readonly ENFORCE="{enforce: true, allow: $ALLOW, counters: {interval: 1s, window: 3s}}"

# --- building blocks ---------------------------------------------------------------------------

# A host with its own Samba lab (named after it) and a legacy SMB2_10 client holding a session on
# the confidential share `finance`, plus a modern one on `demo`.
lab_with_clients() {
  local host=$1
  start_lab "$host"
  lab hold "$work/$host" legacy finance -m SMB2_10 >/dev/null || fail "SMB2_10 session to finance"
  lab hold "$work/$host" modern demo -m SMB3_11 >/dev/null || fail "SMB3_11 session to demo"
}

# A fingerprint of every file smbd's configuration is made of.
conf_sum() { (cd "$work/$1" && sha256sum smb.conf conf.d/*); }

# Waits until the collector has a posture of HOST (the agent's first report was stored).
wait_reported() {
  poll 30 "a stored report of $1" ctl admin host show "$1"
}

# approve_both ID [FLAGS...]: the two approvals a change with a named client impact needs.
approve_both() {
  local id=$1
  shift
  expect_exit 0 "first approval" approver-a changes approve "$id" --comment "first look" "$@"
  expect_exit 0 "second approval" approver-b changes approve "$id" --comment "second look" "$@"
}

# The host's change as the collector has it, for a failure message.
show() { ctl admin changes show "$1" || true; }

# --- scenarios -----------------------------------------------------------------------------------

scenario_flow() {
  local host=fs-flow
  e2e_init "$@" "$host"
  lab_with_clients "$host"
  new_database
  start_collector collector
  agent_config "$host" "$host" collector "$ENFORCE" >"$work/agent.yaml"
  start_agent agent "$work/agent.yaml"
  wait_reported "$host"

  step "the baseline policy finds the unencrypted confidential share and the SMB2_10 client"
  ctl admin findings --host "$host" --format=json >"$work/findings.json" || fail "findings"
  jq -e '[.findings[]? | select(.ruleId == "classified-shares-encrypted" and .share == "finance")]
         | length == 1' "$work/findings.json" >/dev/null ||
    fail "no classified-shares-encrypted finding for finance: $(cat "$work/findings.json")"
  ctl admin host show "$host" --format=json |
    jq -e '[.. | objects | select(.dialect? == "DIALECT_SMB_2_1")] | length >= 1' >/dev/null ||
    fail "the SMB2_10 session is not in the posture"
  local before_encrypt before_dialect
  before_encrypt=$(lab param "$work/$host" finance 'smb encrypt')
  before_dialect=$(lab param "$work/$host" global 'server min protocol')

  step "proposed by a proposer; the impact names the SMB2_10 client"
  local id
  id=$(propose proposer --host "$host" --reason "encrypt the confidential share")
  echo "   change $id"
  change_json "$id" >"$work/proposed.json"
  jq -e --arg h "$host" '.hosts[] | select(.host == $h) | .steps[]
         | select(.setting == "share.encryptData" and .share == "finance" and .value == "true")' \
    "$work/proposed.json" >/dev/null ||
    fail "the plan does not encrypt finance: $(cat "$work/proposed.json")"
  jq -e '[.hosts[].impact.clients[]? | select(.dialect == "DIALECT_SMB_2_1")] | length >= 1' \
    "$work/proposed.json" >/dev/null || fail "the impact does not name the SMB2_10 client"
  jq -e '.impact.refusedClients >= 1 and .approvalsRequired == 2' "$work/proposed.json" >/dev/null ||
    fail "impact summary or approvals required: $(jq -c '{impact, approvalsRequired}' "$work/proposed.json")"
  ctl viewer changes show "$id" | tee "$work/show.txt" | sed 's/^/   | /'
  grep -q "127.0.0.1" "$work/show.txt" || fail "changes show does not list the client's address"

  step "four-eyes: the proposer's own approval (5), a viewer's and a mere proposer's (4) are refused"
  # The proposer also holds an approver certificate (same name): four-eyes, not the role, refuses.
  bash "$e2e_root/deploy/ca.sh" operator "$work/pki" proposer approver operator-proposer-approver
  expect_exit 5 "own approval" proposer-approver changes approve "$id"
  grep -q "proposer" "$work/ctl.out" || fail "the refusal does not name the proposer"
  expect_exit 4 "viewer approval" viewer changes approve "$id"
  expect_exit 4 "approval without the approver role" proposer changes approve "$id"

  step "one approver is not enough"
  expect_exit 0 "first approval" approver-a changes approve "$id" --comment "looked at the impact"
  [[ $(change_state "$id") == CHANGE_STATE_PROPOSED ]] || fail "one approval moved the change on"
  ctl approver-a changes approve "$id" >/dev/null 2>&1 || true
  [[ $(change_state "$id") == CHANGE_STATE_PROPOSED ]] || fail "a repeated approval moved it on"
  [[ $(change_get "$id" '.approvals | length') == 1 ]] || fail "a repeated approval counted twice"

  step "the second approver: pushed over the stream and applied (followed by changes watch)"
  # Not a terminal: one line per state change; exit 0 once COMPLETED with every host APPLIED.
  ctl viewer changes watch "$id" --interval 200ms --timeout 100s >"$work/watch.txt" 2>&1 &
  local watch_pid=$!
  # The watch has seen the change as it is before the approval goes in.
  poll 30 "changes watch to print PROPOSED" grep -q "  change  PROPOSED" "$work/watch.txt"
  local t0
  t0=$(epoch_ms)
  expect_exit 0 "second approval" approver-b changes approve "$id" --comment "go"
  wait_host_state 30 "$id" "$host" APPLIED
  local t1 approved_at acked_at
  t1=$(epoch_ms)
  approved_at=$(change_get "$id" '.approvals[-1].at')
  acked_at=$(change_get "$id" --arg h "$host" '.hosts[] | select(.host == $h) | .finishedAt')
  # collector_ms: the last approval's time to the ack's, both stamped by the collector;
  # observed_ms: from this script's approve command to seeing APPLIED (polled every 0.2 s).
  printf '{"test":"e2e_change_flow","metric":"approval_to_applied_ack_ms",%s}\n' \
    "$(printf '"collector_ms":%d,"observed_ms":%d' \
      $(($(epoch_ms "$acked_at") - $(epoch_ms "$approved_at"))) $((t1 - t0)))"
  wait_change_state 15 "$id" COMPLETED
  local watch_rc=0
  wait "$watch_pid" || watch_rc=$?
  sed 's/^/   watch | /' "$work/watch.txt"
  ((watch_rc == 0)) || fail "changes watch exited $watch_rc on a change that COMPLETED"
  grep -q "  change  PROPOSED" "$work/watch.txt" || fail "changes watch did not start at PROPOSED"
  grep -q "  change  COMPLETED" "$work/watch.txt" || fail "changes watch did not print COMPLETED"
  grep -q "  $host  APPLIED" "$work/watch.txt" || fail "changes watch did not print $host APPLIED"

  step "counters around the change: the window before from the ack, after from a report"
  # The ack carried the three seconds before the apply; the report that follows the after-window's
  # end (reason change_counters) carries the three after it; the collector summarised both and
  # set the measured effect beside the prediction.
  _has_after() {
    [[ $(change_get "$id" --arg h "$host" \
      '.hosts[] | select(.host == $h) | .countersAfter.complete // false') == true ]]
  }
  poll 30 "the after-window of $host's counters" _has_after
  change_json "$id" >"$work/counted.json"
  jq -e --arg h "$host" '.hosts[] | select(.host == $h)
     | (.countersBefore.samples | length) >= 2 and .countersBefore.complete
       and (.countersAfter.samples | length) >= 2
       and .countersBefore.summary.samples >= 2 and .countersAfter.summary.samples >= 2
       and (.countersBefore.summary.cpuPercent | type) == "number"
       and (.countersAfter.summary.availableMemoryBytes | tonumber) > 0
       and (.measured.summary | length) > 0
       and (.measured.cpuChangePoints | type) == "number"' "$work/counted.json" >/dev/null ||
    fail "no before/after counters with a measured line: $(jq -c --arg h "$host" \
      '.hosts[] | select(.host == $h) | {countersBefore, countersAfter, measured}' "$work/counted.json")"
  ctl viewer changes show "$id" | tee "$work/show-measured.txt" | grep "measured:" | sed 's/^/   | /'
  grep -q "^  measured: .*CPU" "$work/show-measured.txt" ||
    fail "changes show has no measured line: $(cat "$work/show-measured.txt")"

  step "the cost model against what it measured: changes calibration, saved and listed"
  ctl viewer changes calibration --format=json >"$work/calibration.json"
  jq -e '.calibration.inputCount >= 1 and (.calibration.groups | length) >= 1
     and ([.calibration.groups[] | select(.platform == "samba") | .changes] | add) >= 1' \
    "$work/calibration.json" >/dev/null ||
    fail "changes calibration does not count the measured change: $(cat "$work/calibration.json")"
  ctl viewer changes calibration | sed 's/^/   | /'
  expect_exit 4 "a viewer saving a calibration" viewer changes calibration --save
  ctl approver-a changes calibration --save | tee "$work/calibration-saved.txt" | sed 's/^/   | /'
  grep -q "^calibration [0-9][0-9]* saved by" "$work/calibration-saved.txt" ||
    fail "changes calibration --save printed no id: $(cat "$work/calibration-saved.txt")"
  ctl viewer changes calibration --history >"$work/calibration-history.txt"
  grep -q "^1  " "$work/calibration-history.txt" ||
    fail "changes calibration --history does not list it: $(cat "$work/calibration-history.txt")"

  step "smb.conf changed and reloaded: SMB2_10 refused, SMB3 encrypted"
  [[ $(lab param "$work/$host" finance 'smb encrypt') == required ]] ||
    fail "finance is not 'smb encrypt = required' after the change"
  if lab try "$work/$host" finance -m SMB2_10 >"$work/try210.out"; then
    fail "a new SMB2_10 client still reaches finance: $(cat "$work/try210.out")"
  fi
  # Refused by the server: at negotiation (minimum dialect) or at the tree connect (encryption).
  grep -Eq "negotiation failed: NT_STATUS_NOT_SUPPORTED|tree connect failed: NT_STATUS_ACCESS_DENIED" \
    "$work/try210.out" || fail "SMB2_10 refused for another reason: $(cat "$work/try210.out")"
  lab try "$work/$host" finance -m SMB3_11 >"$work/try311.out" ||
    fail "a new SMB3_11 client cannot reach finance: $(cat "$work/try311.out")"
  lab hold "$work/$host" secure finance -m SMB3_11 >/dev/null || fail "SMB3_11 session to finance"
  lab status "$work/$host" --json |
    jq -e '[.tcons[] | select(.service == "finance" and .encryption.degree == "full")] | length >= 1' \
      >/dev/null || fail "the SMB3_11 tree connect to finance is not encrypted"

  # Rules without a remediation step (CIS client items Samba has no setting for yet) may still
  # find something; none of the rules the change remediates may.
  step "the agent's report after the change: the rules the change remediates are compliant"
  jq '[.hosts[].steps[].ruleIds[]?] | unique' "$work/proposed.json" >"$work/remediated.json"
  jq -e 'index("classified-shares-encrypted")' "$work/remediated.json" >/dev/null ||
    fail "the change names no remediated rule: $(cat "$work/remediated.json")"
  _no_findings() {
    ctl admin findings --host "$host" --format=json |
      jq -e --slurpfile fixed "$work/remediated.json" \
        '[(.findings // [])[] | select(.ruleId as $r | $fixed[0] | index($r))] | length == 0'
  }
  poll 30 "no findings of the remediated rules for $host after the change" _no_findings
  ctl admin findings --host "$host" | sed 's/^/   | /'
  ctl admin compliance | sed 's/^/   | /'
  step "desired vs applied: the host is where it should be"
  ctl admin hosts | sed 's/^/   | /'
  ctl admin hosts --format=json | jq -e --arg h "$host" --arg id "$id" \
    '.hosts[] | select(.name == $h) | .changeStatus
     | .desiredChangeId == $id and .appliedChangeId == $id and .lastResult == "HOST_CHANGE_STATE_APPLIED"' \
    >/dev/null || fail "hosts does not show $host at change $id"

  step "rollback: the SMB2_10 client connects again"
  expect_exit 0 "rollback" approver-a changes rollback "$id" --reason "legacy client still needed"
  local rb
  rb=$(change_get "$id" '.rolledBackBy // empty')
  [[ -n "$rb" ]] || fail "rollback made no linked change"
  wait_host_state 30 "$rb" "$host" APPLIED
  [[ $(change_state "$id") == CHANGE_STATE_ROLLED_BACK ]] || fail "the original is not ROLLED_BACK"
  expect_exit 1 "changes watch of a ROLLED_BACK change" viewer changes watch "$id" --timeout 30s
  grep -q "ended ROLLED_BACK" "$work/ctl.out" || fail "changes watch did not say it ended ROLLED_BACK"
  [[ $(change_get "$rb" '.rollbackOf') == "$id" ]] || fail "the rollback is not linked to $id"
  # The typed values come back; Samba's words may differ (`default` is written back as
  # `if_required`, its meaning for a server).
  local typed='[.hosts[0].KEY[]? | {setting, share, value}] | sort_by(.setting, .share)'
  [[ "$(change_get "$rb" "${typed//KEY/after}")" == "$(change_get "$id" "${typed//KEY/before}")" ]] ||
    fail "the rollback did not restore the journaled before-values"
  [[ "$before_encrypt" != required && $(lab param "$work/$host" finance 'smb encrypt') != required ]] ||
    fail "finance still requires encryption after the rollback"
  [[ $(lab param "$work/$host" global 'server min protocol') == "$before_dialect" ]] ||
    fail "server min protocol not restored"
  lab try "$work/$host" finance -m SMB2_10 >"$work/try210b.out" ||
    fail "SMB2_10 still refused after the rollback: $(cat "$work/try210b.out")"

  step "every transition is audited"
  ctl admin audit --change "$id" | sed 's/^/   | /'
  local action
  for action in proposed approved dispatched acked rolled_back; do
    (($(audit_count "$id" "$action") >= 1)) || fail "no '$action' audit entry for $id"
  done
  (($(audit_count "$id" approved) == 2)) || fail "expected two 'approved' audit entries"
  (($(audit_count "$id" acked "$host") == 1)) || fail "expected one 'acked' audit entry"
}

scenario_refused() {
  local host=fs-off
  e2e_init "$@" "$host"
  lab_with_clients "$host"
  new_database
  start_collector collector
  agent_config "$host" "$host" collector >"$work/agent.yaml"  # no changes: enforcement off
  start_agent agent "$work/agent.yaml"
  wait_reported "$host"
  local id before
  before=$(conf_sum "$host")
  id=$(propose proposer --host "$host")
  approve_both "$id"
  wait_host_state 30 "$id" "$host" REFUSED
  local message
  message=$(change_get "$id" '.hosts[0].message')
  echo "   refused: $message"
  grep -qi "enforce" <<<"$message" || fail "the REFUSED ack does not say enforcement is off: '$message'"
  ctl admin changes show "$id" >"$work/show.txt"
  grep -qiF "enforce" "$work/show.txt" || fail "changes show does not show the reason"
  [[ "$(conf_sum "$host")" == "$before" ]] || fail "smb.conf changed on a host without enforcement"
  wait_change_state 15 "$id" HALTED
}

scenario_precondition() {
  local host=fs-pre
  e2e_init "$@" "$host"
  lab_with_clients "$host"
  new_database
  start_collector collector
  agent_config "$host" "$host" collector "$ENFORCE" >"$work/agent.yaml"
  start_agent agent "$work/agent.yaml"
  wait_reported "$host"
  local id
  id=$(propose proposer --host "$host")

  step "the agent goes away; approved; someone edits smb.conf by hand"
  stop_proc agent
  approve_both "$id"
  wait_host_state 15 "$id" "$host" DISPATCHED
  echo "    smb encrypt = desired" >>"$work/$host/conf.d/share-finance.conf"
  local edited
  edited=$(conf_sum "$host")

  step "the agent comes back: PRECONDITION_FAILED, nothing changed"
  start_agent agent "$work/agent.yaml"
  wait_host_state 30 "$id" "$host" PRECONDITION_FAILED
  local message
  message=$(change_get "$id" '.hosts[0].message')
  echo "   $message"
  grep -q "share.encryptData" <<<"$message" || fail "the ack does not name the setting: '$message'"
  [[ "$(conf_sum "$host")" == "$edited" ]] || fail "smb.conf changed although a precondition failed"
}

scenario_halt() {
  local canary=fs-canary second=fs-second
  e2e_init "$@" "$canary" "$second"
  lab_with_clients "$canary"
  lab_with_clients "$second"
  new_database
  start_collector collector
  # The canary's own configuration does not allow encrypting shares: it refuses the order.
  local canary_allow="[server.requireSigning, client.requireSigning, server.minDialect, client.minDialect, client.requireEncryption]"
  agent_config "$canary" "$canary" collector "{enforce: true, allow: $canary_allow}" \
    >"$work/canary.yaml"
  agent_config "$second" "$second" collector "$ENFORCE" >"$work/second.yaml"
  start_agent canary "$work/canary.yaml"
  start_agent second "$work/second.yaml"
  wait_reported "$canary"
  wait_reported "$second"
  local id before
  before=$(conf_sum "$second")
  id=$(propose proposer --host "$canary" --host "$second")
  approve_both "$id" --canary "$canary"
  wait_host_state 30 "$id" "$canary" REFUSED
  echo "   canary: $(change_get "$id" --arg h "$canary" '.hosts[] | select(.host == $h) | .message')"
  wait_change_state 15 "$id" HALTED
  sleep 2  # a second wave dispatched by mistake would show up within this time
  [[ $(host_state "$id" "$second") == HOST_CHANGE_STATE_PENDING ]] ||
    fail "the second wave's host is $(host_state "$id" "$second") after the canary failed"
  (($(audit_names "$id" dispatched "$canary") == 1)) || fail "the canary's dispatch is not audited"
  (($(audit_names "$id" dispatched "$second") == 0)) || fail "$second was dispatched"
  [[ "$(conf_sum "$second")" == "$before" ]] || fail "$second's smb.conf changed"
  ctl admin changes show "$id" | sed 's/^/   | /'
}

scenario_offline() {
  local host=fs-away
  e2e_init "$@" "$host"
  lab_with_clients "$host"
  new_database
  start_collector collector
  agent_config "$host" "$host" collector "$ENFORCE" >"$work/agent.yaml"
  "$agent_bin" run --config "$work/agent.yaml" --once >"$work/agent-once.log" 2>&1 ||
    fail "agent run --once failed"
  wait_reported "$host"
  local id
  id=$(propose proposer --host "$host")
  approve_both "$id"
  wait_host_state 15 "$id" "$host" DISPATCHED
  sleep 1
  [[ $(host_state "$id" "$host") == HOST_CHANGE_STATE_DISPATCHED ]] || fail "acked without an agent"
  step "the agent connects: it gets the pending order"
  start_agent agent "$work/agent.yaml"
  wait_host_state 30 "$id" "$host" APPLIED
  [[ $(lab param "$work/$host" finance 'smb encrypt') == required ]] || fail "finance not encrypted"
}

scenario_two_collectors() {
  local host=fs-two
  e2e_init "$@" "$host"
  lab_with_clients "$host"
  new_database
  start_collector collector-a
  start_collector collector-b
  ctl_port=${collector_port[collector-a]}
  agent_config "$host" "$host" collector-b "$ENFORCE" >"$work/agent.yaml"
  start_agent agent "$work/agent.yaml"
  wait_reported "$host"
  local id t0
  id=$(propose proposer --host "$host")
  expect_exit 0 "first approval" approver-a changes approve "$id"
  t0=$(epoch_ms)
  expect_exit 0 "second approval through A" approver-b changes approve "$id"
  wait_host_state 10 "$id" "$host" APPLIED
  printf '{"test":"e2e_change_two_collectors","metric":"approval_to_applied_ack_ms","observed_ms":%d}\n' \
    $(($(epoch_ms) - t0))
  # The order crossed processes through PostgreSQL, not through a reconnect of the agent.
  (($(grep -c "watch stream of $host opened" "$work/collector-b.log") == 1)) ||
    fail "the agent reconnected to collector B"
  ! grep -q "watch stream of $host opened" "$work/collector-a.log" ||
    fail "the agent's stream was on collector A"
  [[ $(lab param "$work/$host" finance 'smb encrypt') == required ]] || fail "finance not encrypted"
}

# sql STATEMENT: run as the database's owner, the way an attacker holding it would.
sql() { psql "$dsn" -qAt -v ON_ERROR_STOP=1 -c "$1"; }

scenario_tampered() {
  local host=fs-tamper
  e2e_init "$@" "$host"
  lab_with_clients "$host"
  new_database
  start_collector collector
  agent_config "$host" "$host" collector "$ENFORCE" >"$work/agent.yaml"
  start_agent agent "$work/agent.yaml"
  wait_reported "$host"
  local id before
  before=$(conf_sum "$host")

  step "approved while the agent is away; one byte of the signed payload is rewritten in the database"
  id=$(propose proposer --host "$host")
  stop_proc agent
  approve_both "$id"
  wait_host_state 15 "$id" "$host" DISPATCHED
  # The payload's last byte, flipped (PostgreSQL's base64 wraps lines; protobuf's JSON does not).
  sql "UPDATE changes SET more = jsonb_set(more, '{approvalPayload}', to_jsonb(translate(encode(
         set_byte(p, length(p) - 1, get_byte(p, length(p) - 1) # 1), 'base64'), E'\n', '')))
       FROM (SELECT decode(more->>'approvalPayload', 'base64') AS p FROM changes
             WHERE id = '$id') AS t WHERE id = '$id'" || fail "rewriting the payload"
  start_agent agent "$work/agent.yaml"
  wait_host_state 30 "$id" "$host" REFUSED
  local message
  message=$(change_get "$id" '.hosts[0].message')
  echo "   refused: $message"
  grep -q "approval check failed" <<<"$message" || fail "not refused by the approval check: '$message'"
  [[ "$(conf_sum "$host")" == "$before" ]] || fail "smb.conf changed for a tampered order"
  wait_change_state 15 "$id" HALTED

  step "a second change: one of its two signatures deleted and the rule lowered to one"
  id=$(propose proposer --host "$host" --reason "second try")
  stop_proc agent
  approve_both "$id"
  wait_host_state 15 "$id" "$host" DISPATCHED
  sql "UPDATE changes SET approvals_required = 1 WHERE id = '$id';
       DELETE FROM change_approvals WHERE change_id = '$id' AND approver = 'approver-b'" ||
    fail "dropping a signature"
  [[ $(change_get "$id" '.approvals | length') == 1 ]] || fail "the signature was not dropped"
  start_agent agent "$work/agent.yaml"
  wait_host_state 30 "$id" "$host" REFUSED
  message=$(change_get "$id" '.hosts[0].message')
  echo "   refused: $message"
  grep -qi "signature" <<<"$message" || fail "the refusal does not name the signatures: '$message'"
  [[ "$(conf_sum "$host")" == "$before" ]] || fail "smb.conf changed with one signature of two"
}

scenario_crash() {  # scenario_crash POINT COLLECTOR AGENT SMBFLEETCTL
  local point=$1 host=fs-crash
  shift
  e2e_init "$@" "$host"
  lab_with_clients "$host"
  new_database
  start_collector collector
  agent_config "$host" "$host" collector "$ENFORCE" >"$work/agent.yaml"
  # The agent's test hook: it exits at once (_exit, as abrupt as kill -9 for what is on disk)
  # right after that step.
  start_agent agent "$work/agent.yaml" "SMBFLEET_AGENT_TEST_CRASH_AFTER=$point"
  wait_reported "$host"
  local id
  id=$(propose proposer --host "$host")
  approve_both "$id"
  poll 30 "the agent to die after the '$point' step" exited agent
  stop_proc agent KILL
  [[ $(host_state "$id" "$host") == HOST_CHANGE_STATE_DISPATCHED ]] ||
    fail "acked before the crash: $(host_state "$id" "$host")"
  step "restarted: recovery acks once"
  start_agent agent "$work/agent.yaml"
  local state
  wait_acked() {
    state=$(host_state "$id" "$host")
    [[ "$state" == HOST_CHANGE_STATE_APPLIED || "$state" == HOST_CHANGE_STATE_ROLLED_BACK ]]
  }
  poll 30 "$host to ack APPLIED or ROLLED_BACK after recovery" wait_acked
  state=$(host_state "$id" "$host")
  echo "   recovered: $state ($(change_get "$id" '.hosts[0].message'))"
  sleep 2  # a second ack would arrive within this time
  (($(audit_count "$id" acked "$host") == 1)) || fail "expected exactly one 'acked' audit entry"
  if [[ "$state" == HOST_CHANGE_STATE_APPLIED ]]; then
    [[ $(lab param "$work/$host" finance 'smb encrypt') == required ]] || fail "APPLIED but not encrypted"
  else
    [[ $(lab param "$work/$host" finance 'smb encrypt') != required ]] || fail "ROLLED_BACK but encrypted"
  fi
}

case "$scenario" in
  flow | refused | precondition | halt | offline | tampered) "scenario_$scenario" "$@" ;;
  two-collectors) scenario_two_collectors "$@" ;;
  crash-journal) scenario_crash journal "$@" ;;
  crash-apply) scenario_crash apply "$@" ;;
  *) echo "unknown scenario '$scenario'" >&2; exit 2 ;;
esac
echo PASS

#!/usr/bin/env bash
# kill -9 a real agent (Samba source, real smbd) while it applies a four-eyes approved change
# order, at points spread over the apply: the order not yet journaled, journaled 'started' with
# smb.conf old or new, 'finished' before its ack, acked. The kill is timed, not hooked: a
# reference run measures approval-to-ack, the runs kill at fractions of it. On restart the
# journal finishes or rolls back, the collector records exactly one ack, and smb.conf with its
# include files is byte-identical to the old or the new version, matching the result (APPLIED:
# new; anything else: old). Between runs the original files are put back. The figures say where
# each kill landed. Three instants rare by timing get one kill each, exactly there: between
# the renames of two include files, after the journal's 'finished' before the ack, after the
# ack before the journal's 'acked'; a test tool preloaded into the agent (tests/fault/
# kill_at_rename.cc, not part of the product) sends SIGKILL at that rename.
#
#   samba_apply_kill.sh [--short|--long]   short: 8 kills; long: 30
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
host=fs-kill
fault_init samba_apply_kill "$@" "$host"
if [[ $mode == long ]]; then runs=30; else runs=8; fi

readonly ALLOW="[server.requireSigning, client.requireSigning, server.minDialect, share.encryptData, client.minDialect, client.requireEncryption]"
lab_dir=$work/$host
journal_dir=$work/agent-$host/spool-changes
kill_at_rename=$SMBFLEET_BUILD_DIR/tests/fault/libsmbfleet_fault_kill_at_rename.so

# The bytes smbd's configuration is made of: smb.conf and the agent-managed include files.
conf_sum() {
  (cd "$lab_dir" && find smb.conf conf.d -maxdepth 1 -type f \( -name smb.conf -o -name '*.conf' \) \
    -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}
conf_class() {
  local s
  s=$(conf_sum)
  if [[ $s == "$old_sum" ]]; then echo old; elif [[ $s == "${new_sum:-}" ]]; then echo new; else echo mixed; fi
}
restore_conf() {
  rm -rf "$lab_dir/conf.d"
  cp -a "$work/orig/conf.d" "$lab_dir/conf.d"
  cp -a "$work/orig/smb.conf" "$lab_dir/smb.conf"
}
host_reports() {
  psql "$dsn" -qAt -c "SELECT count(*) FROM reports r JOIN hosts h ON h.id = r.host_id WHERE h.name = '$host'"
}
# start_and_report [WRAPPER...]: starts the agent (under WRAPPER) and waits for its startup
# report, so that a proposal plans on the files as they are now.
start_and_report() {
  local before
  before=$(host_reports)
  spawn agent "$@" "$agent_bin" run --config "$work/agent.yaml"
  local deadline=$(($(epoch_ms) + 30000))
  until (($(host_reports) > before)); do
    (($(epoch_ms) < deadline)) || fail "no startup report of $host"
    sleep 0.1
  done
}
# propose_and_approve REASON: a change from the baseline plan, approved by as many approvers as
# it needs; sets $id and $t_approved (when the last approval returned).
propose_and_approve() {
  id=$(propose proposer --host "$host" --reason "$1")
  ctl approver-a changes approve "$id" --comment "first look" >/dev/null ||
    fail "first approval of $id"
  if [[ $(change_state "$id") == CHANGE_STATE_PROPOSED ]]; then
    ctl approver-b changes approve "$id" --comment "second look" >/dev/null ||
      fail "second approval of $id"
  fi
  t_approved=$(epoch_ms)
}
terminal() {
  case "$(host_state "$id" "$host")" in
    HOST_CHANGE_STATE_APPLIED | HOST_CHANGE_STATE_ROLLED_BACK | HOST_CHANGE_STATE_FAILED | \
      HOST_CHANGE_STATE_PRECONDITION_FAILED | HOST_CHANGE_STATE_REFUSED) return 0 ;;
  esac
  return 1
}

step "Samba lab with an SMB 3.1.1 and an SMB 2.1 client, database, collector"
start_lab "$host"
lab hold "$lab_dir" legacy finance -m SMB2_10 >/dev/null || fail "SMB2_10 session to finance"
lab hold "$lab_dir" modern demo -m SMB3_11 >/dev/null || fail "SMB3_11 session to demo"
new_database
start_collector collector
agent_config "$host" "$host" collector "{enforce: true, allow: $ALLOW}" >"$work/agent.yaml"
mkdir -p "$work/orig"
cp -a "$lab_dir/smb.conf" "$lab_dir/conf.d" "$work/orig/"
old_sum=$(conf_sum)

step "reference run: the change applied without a kill"
start_and_report
propose_and_approve "reference"
wait_host_state 30 "$id" "$host" APPLIED
apply_ms=$(($(epoch_ms) - t_approved))
new_sum=$(conf_sum)
mkdir -p "$work/new"
cp -a "$lab_dir/smb.conf" "$lab_dir/conf.d" "$work/new/"
[[ $new_sum != "$old_sum" ]] || fail "the reference change did not change smb.conf"
echo "   approval to APPLIED: $apply_ms ms"
stop_proc agent TERM
restore_conf

declare -A landed=()
results=()
bad() { echo "FAIL: run $run: $*" >&2; fault_status=1; }

# The managed files the reference change rewrote, in the order the agent renames them into place
# (path order).
changed_files=()
for f in $(cd "$work/new" && find conf.d -maxdepth 1 -type f -name '*.conf' | sort); do
  cmp -s "$work/new/$f" "$work/orig/$f" || changed_files+=("$f")
done

# kill_run RUN DELAY|AT: one change, the agent killed DELAY ms after its approval, or at the
# instant AT names, by the test tool preloaded into it (tests/fault/kill_at_rename.cc):
#   torn      on entering the rename of the second changed include file (the first is new)
#   finished  once the journal's 'finished' entry is written, before the ack is sent
#   acked     on entering the journal's 'acked' write: the collector has the ack, the journal
#             does not know
# then restarted; checks and records where the kill landed and what recovery made of it.
kill_run() {
  local delay=$2
  run=$1
  local -a at=(env LD_PRELOAD="$kill_at_rename")
  # The journal's entry of the change: <journal>/<id>@1.order.json, renamed into place at 'started',
  # 'finished' and 'acked'.
  local -a entry=(SMBFLEET_FAULT_KILL_AT_RENAME_PREFIX="$journal_dir/"
    SMBFLEET_FAULT_KILL_AT_RENAME_SUFFIX=@1.order.json)
  case $delay in
    torn) at+=(SMBFLEET_FAULT_KILL_AT_RENAME_TO="$lab_dir/${changed_files[1]}") ;;
    finished) at+=("${entry[@]}" SMBFLEET_FAULT_KILL_AT_RENAME_NTH=2 SMBFLEET_FAULT_KILL_AT_RENAME_AFTER=1) ;;
    acked) at+=("${entry[@]}" SMBFLEET_FAULT_KILL_AT_RENAME_NTH=3) ;;
    *) at=() ;;
  esac
  start_and_report "${at[@]}"
  propose_and_approve "kill run $run"
  if ((${#at[@]} > 0)); then
    poll 30 "the agent to be killed at '$delay'" exited agent
  else
    while (($(epoch_ms) < t_approved + delay)); do sleep 0.01; done
  fi
  stop_proc agent KILL
  local killed_after=$(($(epoch_ms) - t_approved))

  # Where the kill landed: the journal entry's state, smb.conf, the collector's view.
  local journal_state=none f at_kill point acked_before=false
  for f in "$journal_dir/$id"@*.json; do
    [[ -f $f ]] && journal_state=$(jq -r .state "$f")
  done
  at_kill=$(conf_class)
  terminal && acked_before=true
  if [[ $acked_before == true && $journal_state == finished ]]; then point=ack_delivered_not_recorded
  elif [[ $acked_before == true || $journal_state == acked ]]; then point=after_ack
  elif [[ $journal_state == finished ]]; then point=finished_not_acked
  elif [[ $journal_state == started ]]; then point=started_conf_$at_kill
  else point=before_journal; fi
  [[ $delay != torn || $at_kill != mixed ]] || point=started_conf_torn
  landed[$point]=$((${landed[$point]:-0} + 1))

  start_agent agent "$work/agent.yaml"
  poll 30 "$host to ack change $id after the restart" terminal
  sleep 2  # a second ack would arrive within this time
  local result acks after
  result=$(host_state "$id" "$host")
  acks=$(audit_count "$id" acked "$host")
  after=$(conf_class)
  echo "   run $run: killed ${killed_after} ms after approval, $point (smb.conf $at_kill); after restart: ${result#HOST_CHANGE_STATE_}, smb.conf $after, $acks ack(s)"
  ((acks == 1)) || bad "$acks acks of change $id recorded, expected exactly one"
  case "$after" in
    new) [[ $result == HOST_CHANGE_STATE_APPLIED ]] || bad "smb.conf is the new version but the result is $result" ;;
    old) [[ $result != HOST_CHANGE_STATE_APPLIED ]] || bad "APPLIED but smb.conf is the old version" ;;
    *) bad "smb.conf is neither the old nor the new version after recovery ($(cd "$lab_dir" && head -50 "${changed_files[@]}"))" ;;
  esac
  results+=("$(jq -nc --argjson run "$run" --argjson ms "$killed_after" --arg point "$point" \
    --arg at_kill "$at_kill" --arg result "${result#HOST_CHANGE_STATE_}" --arg after "$after" \
    --argjson acks "$acks" \
    '{run: $run, killed_after_ms: $ms, point: $point, conf_at_kill: $at_kill, result: $result,
      conf_after: $after, acks: $acks}')")
  stop_proc agent TERM
  restore_conf
}

# Kill points spread from the approval to half the reference's approval-to-APPLIED time (which
# includes the collector's and this script's polling; the agent's own work is in the first part
# of it); long: at random over the same span.
span=$((apply_ms / 2))
for n in $(seq 1 "$runs"); do
  if [[ $mode == long ]]; then delay=$((RANDOM % (span + 1))); else delay=$((span * (n - 1) / (runs - 1))); fi
  kill_run "$n" "$delay"
done

# The instants timing alone rarely hits: between two renames of include files, between the
# journal's 'finished' and the ack, between the ack and the journal's 'acked'.
if [[ ! -f $kill_at_rename ]]; then
  bad "$kill_at_rename is not built: the kills at exact instants were not run"
else
  n=$runs
  for at in torn finished acked; do
    n=$((n + 1))
    if [[ $at == torn ]] && ((${#changed_files[@]} < 2)); then
      echo "   the change rewrites one file: no kill between two renames to make"
      continue
    fi
    kill_run "$n" "$at"
  done
  ((${#changed_files[@]} < 2)) || [[ ${landed[started_conf_torn]:-0} == 1 ]] ||
    bad "the kill at the second rename did not leave the files torn"
  [[ ${landed[finished_not_acked]:-0} -ge 1 ]] || bad "the kill after 'finished' did not land before the ack"
  [[ ${landed[ack_delivered_not_recorded]:-0} -ge 1 ]] || bad "the kill before 'acked' did not land after the ack"
fi

landed_json=$(for k in "${!landed[@]}"; do echo "{\"$k\": ${landed[$k]}}"; done | jq -sc 'add // {}')
figures=$(printf '%s\n' "${results[@]}" | jq -sc --arg mode "$mode" --argjson apply "$apply_ms" \
  --argjson landed "$landed_json" '{
    scenario: "samba_apply_kill", mode: $mode, kills: length, reference_apply_ms: $apply,
    landed: $landed,
    acked_once: map(select(.acks == 1)) | length,
    acked_twice_or_more: map(select(.acks > 1)) | length,
    never_acked: map(select(.acks == 0)) | length,
    applied: map(select(.result == "APPLIED")) | length,
    rolled_back: map(select(.result == "ROLLED_BACK")) | length,
    other_results: map(select(.result != "APPLIED" and .result != "ROLLED_BACK")) | length,
    mixed_at_kill: map(select(.conf_at_kill == "mixed")) | length,
    mixed_after_recovery: map(select(.conf_after == "mixed")) | length,
    runs: . }')
fault_finish

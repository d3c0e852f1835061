// Changes: pending approvals, proposing, one change with its hosts, approvals, rollout and
// audit log. Buttons follow the roles; the collector checks every call anyway.
import { useEffect, useState } from "preact/hooks";
import { call } from "../api.js";
import { Link, navigate, urlOf } from "../router.jsx";
import { loadApproverKey, signPayload } from "../sign.js";
import { ageText, Empty, enumText, ErrorBox, Labels, Loading, Section, timeText, useCall } from "../ui.jsx";

const kStates = ["proposed", "approved", "rolling_out", "halted", "completed", "rejected", "rolled_back", "expired"];
const kMoving = new Set(["CHANGE_STATE_APPROVED", "CHANGE_STATE_ROLLING_OUT"]);

function stateText(s) {
  return enumText(s || "CHANGE_STATE_UNSPECIFIED", "CHANGE_STATE_");
}

function ProposeForm() {
  const [ruleId, setRuleId] = useState("");
  const [labels, setLabels] = useState("");
  const [reason, setReason] = useState("");
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const selector = {};
    for (const kv of labels.split(/\s+/).filter(Boolean)) {
      const m = kv.match(/^([^=]+)=(.*)$/);
      if (!m) {
        setError({ code: "INVALID_ARGUMENT", message: `labels: "${kv}" is not key=value` });
        setBusy(false);
        return;
      }
      selector[m[1]] = m[2];
    }
    try {
      const r = await call("ProposeChange", { ruleId: ruleId.trim(), labels: selector, reason });
      navigate(`/changes/${encodeURIComponent(r.change.id)}`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="inline-form" onSubmit={submit} aria-label="Propose a change for a rule">
      <label>
        Rule
        <input name="rule" value={ruleId} onInput={(e) => setRuleId(e.currentTarget.value)} required />
      </label>
      <label>
        Only hosts with labels (k=v …)
        <input name="labels" value={labels} onInput={(e) => setLabels(e.currentTarget.value)} />
      </label>
      <label>
        Reason
        <input name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={busy}>
        Propose
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

function ChangeRows({ changes }) {
  return (
    <table data-testid="changes">
      <thead>
        <tr>
          <th scope="col">Change</th>
          <th scope="col">State</th>
          <th scope="col">Proposed</th>
          <th scope="col">Why</th>
          <th scope="col" class="num">
            Hosts
          </th>
          <th scope="col" class="num">
            Refused clients
          </th>
          <th scope="col">Approvals</th>
        </tr>
      </thead>
      <tbody>
        {changes.map((c) => (
          <tr key={c.id} data-change={c.id}>
            <th scope="row">
              <Link href={`/changes/${encodeURIComponent(c.id)}`}>{c.id}</Link>
            </th>
            <td class={`state ${c.state || ""}`}>{stateText(c.state)}</td>
            <td>
              {c.proposedBy} <span class="muted">{ageText(c.proposedAt)}</span>
            </td>
            <td>
              {c.ruleId ? `rule ${c.ruleId}` : ""} {c.reason || ""}
            </td>
            <td class="num">{(c.impact && c.impact.hosts) || 0}</td>
            <td class="num">{(c.impact && c.impact.refusedClients) || 0}</td>
            <td>
              {(c.approvals || []).length}/{c.approvalsRequired || 0}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Changes({ query, can }) {
  const state = query.get("state") || "";
  const request = { limit: 200 };
  if (state) request.state = `CHANGE_STATE_${state.toUpperCase()}`;
  const list = useCall("ListChanges", request, [state]);
  const pending = useCall("ListChanges", { state: "CHANGE_STATE_PROPOSED", limit: 200 }, []);
  return (
    <main id="main">
      <h1>Changes</h1>
      <Section title="Waiting for approval" id="pending">
        <ErrorBox error={pending.error} />
        {pending.data ? (
          (pending.data.changes || []).length ? (
            <ChangeRows changes={pending.data.changes} />
          ) : (
            <Empty>Nothing waits for approval.</Empty>
          )
        ) : (
          <Loading what="pending changes" />
        )}
      </Section>
      {can.propose ? (
        <Section title="Propose a change for every failing host of a rule" id="propose">
          <ProposeForm />
        </Section>
      ) : null}
      <Section title="All changes" id="all">
        <nav class="tabs" aria-label="Filter by state">
          <Link href="/changes" aria-current={!state ? "page" : undefined}>
            all
          </Link>
          {kStates.map((s) => (
            <Link key={s} href={urlOf("/changes", { state: s })} aria-current={state === s ? "page" : undefined}>
              {s.replace("_", " ")}
            </Link>
          ))}
        </nav>
        <ErrorBox error={list.error} />
        {list.data ? (
          (list.data.changes || []).length ? (
            <ChangeRows changes={list.data.changes} />
          ) : (
            <Empty>No change.</Empty>
          )
        ) : (
          <Loading what="changes" />
        )}
      </Section>
    </main>
  );
}

function Steps({ steps }) {
  if (!steps || !steps.length) return <span class="muted">no settings</span>;
  return (
    <ul class="steps">
      {steps.map((s, i) => (
        <li key={i}>
          <code>{s.setting}</code>
          {s.share ? ` [${s.share}]` : ""}: {s.expectedCurrent || "(unset)"} → <strong>{s.value}</strong>
          {s.phase ? <span class="muted"> {enumText(s.phase, "PLAN_PHASE_")}</span> : null}
        </li>
      ))}
    </ul>
  );
}

function fixed(v, digits) {
  return v == null || !isFinite(v) ? "-" : Number(v).toFixed(digits);
}

function signed(v) {
  return v == null ? "-" : `${v >= 0 ? "+" : ""}${fixed(v, 1)}`;
}

// Predicted beside measured, from the windows before and after the apply (ChangeHost
// countersBefore, countersAfter, measured); a ratio of 0 is a prediction the model did not make.
function Measured({ host }) {
  const before = host.countersBefore;
  const after = host.countersAfter;
  if (!before && !after) return null;
  if (!after) {
    return (
      <p class="muted" data-testid="measured">
        measured: collecting (before: CPU {fixed((before.summary || {}).cpuPercent, 1)}%)
      </p>
    );
  }
  const b = (before && before.summary) || {};
  const a = after.summary || {};
  const m = host.measured || {};
  const known = m.predictionKnown;
  const ratio = (v) => (v ? `x${fixed(v, 2)}` : "-");
  const rows = [
    ["CPU %", fixed(b.cpuPercent, 1), fixed(a.cpuPercent, 1), signed(m.cpuChangePoints),
      known ? signed(m.predictedCpuChangePoints || 0) : "-"],
    ["CPU per byte", fixed(b.cpuPercentPerMbPerSecond, 3), fixed(a.cpuPercentPerMbPerSecond, 3),
      ratio(m.cpuPerByteRatio), known ? ratio(m.predictedCpuRatio) : "-"],
    ["SMB MB/s", fixed(b.smbBytesPerSecond / 1e6, 1), fixed(a.smbBytesPerSecond / 1e6, 1),
      ratio(m.smbBytesRatio), known ? ratio(m.predictedThroughputRatio) : "-"],
    ["available memory GiB",
      fixed(b.availableMemoryBytes == null ? null : Number(b.availableMemoryBytes) / 2 ** 30, 2),
      fixed(a.availableMemoryBytes == null ? null : Number(a.availableMemoryBytes) / 2 ** 30, 2), "", ""],
  ];
  return (
    <div data-testid="measured">
      <p class="muted">measured: {m.summary || "not measured"}</p>
      <table class="measured">
        <thead>
          <tr>
            <th scope="col"></th>
            <th scope="col">before</th>
            <th scope="col">after</th>
            <th scope="col">measured</th>
            <th scope="col">predicted</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r[0]}>
              <th scope="row">{r[0]}</th>
              <td class="num">{r[1]}</td>
              <td class="num">{r[2]}</td>
              <td class="num">{r[3]}</td>
              <td class="num">{r[4]}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function HostRows({ hosts }) {
  if (!hosts || !hosts.length) return <Empty>No host.</Empty>;
  return (
    <table data-testid="change-hosts">
      <thead>
        <tr>
          <th scope="col">Host</th>
          <th scope="col">Rollout</th>
          <th scope="col">Settings before → after</th>
          <th scope="col">Impact and cost</th>
        </tr>
      </thead>
      <tbody>
        {hosts.map((h) => {
          const impact = h.impact || {};
          const cost = impact.cost || {};
          return (
            <tr key={h.host} data-host={h.host}>
              <th scope="row">
                <Link href={`/hosts/${encodeURIComponent(h.host)}`}>{h.host}</Link>{" "}
                {Object.keys(h.labels || {}).length ? <Labels labels={h.labels} /> : null}
              </th>
              <td>
                <span class="host-state" data-testid="host-state">
                  {enumText(h.state || "HOST_CHANGE_STATE_UNSPECIFIED", "HOST_CHANGE_STATE_")}
                </span>
                {h.wave != null && h.wave >= 0 ? <span class="muted"> wave {h.wave + 1}</span> : null}
                {h.message ? <p class="muted">{h.message}</p> : null}
                {h.finishedAt ? <p class="muted">finished {timeText(h.finishedAt)}</p> : null}
              </td>
              <td>
                <Steps steps={h.steps} />
                {(h.notRemediable || []).length ? (
                  <p class="muted">needs a person: {h.notRemediable.join(", ")}</p>
                ) : null}
              </td>
              <td>
                {impact.refusedClients ? `${impact.refusedClients} clients refused` : "refuses no known client"}
                {(impact.clients || []).length ? (
                  <ul class="clients">
                    {impact.clients.slice(0, 10).map((c, i) => (
                      <li key={i}>
                        {c.clientName || ""} {c.clientAddress || ""} {c.user ? `(${c.user})` : ""}: {c.reason}
                      </li>
                    ))}
                  </ul>
                ) : null}
                <p class="muted">cost: {cost.known ? cost.summary : "unknown (no benchmark)"}</p>
                <Measured host={h} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function ApproveForm({ change, payload, me, onDone }) {
  const [file, setFile] = useState(null);
  const [comment, setComment] = useState("");
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    if (!file) {
      setError({ code: "INVALID_ARGUMENT", message: "choose your approver key file first" });
      return;
    }
    setBusy(true);
    try {
      const pem = await file.text();
      const key = await loadApproverKey(pem);
      // Sign what the collector shows now: a payload fetched afresh, of this change.
      const fresh = await call("GetChange", { id: change.id });
      if (!fresh.approvalPayload) throw new Error(`change ${change.id} cannot be approved now`);
      const signature = await signPayload(key, me, fresh.approvalPayload);
      await call("ApproveChange", { id: change.id, comment, signature });
      onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="inline-form" onSubmit={submit} aria-label="Approve this change" data-testid="approve-form">
      <label>
        Your approver key (PEM, from <code>smbfleetctl keys init</code>)
        <input type="file" name="key" accept=".key,.pem,text/plain" onChange={(e) => setFile(e.currentTarget.files[0] || null)} />
      </label>
      <label>
        Comment
        <input name="comment" value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={busy} data-testid="approve">
        Approve
      </button>
      <p class="muted">The key is read and used in this page only; it is never sent.</p>
      <ErrorBox error={error} />
    </form>
  );
}

function ReasonAction({ label, rpc, id, required, onDone, testid }) {
  const [reason, setReason] = useState("");
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await call(rpc, { id, reason });
      onDone(r);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="inline-form" onSubmit={submit} aria-label={label}>
      <label>
        Reason{required ? "" : " (optional)"}
        <input name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} required={required} />
      </label>
      <button type="submit" disabled={busy} data-testid={testid}>
        {label}
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

function AuditTable({ entries }) {
  if (!entries || !entries.length) return <Empty>No entry.</Empty>;
  return (
    <table data-testid="audit">
      <thead>
        <tr>
          <th scope="col" class="num">
            #
          </th>
          <th scope="col">When</th>
          <th scope="col">Who</th>
          <th scope="col">What</th>
          <th scope="col">Change</th>
          <th scope="col">Host</th>
          <th scope="col">Detail</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => (
          <tr key={e.seq}>
            <td class="num">{e.seq}</td>
            <td>{timeText(e.at)}</td>
            <td>{e.actor}</td>
            <td>{e.action}</td>
            <td>{e.changeId ? <Link href={`/changes/${encodeURIComponent(e.changeId)}`}>{e.changeId}</Link> : e.waiverId || ""}</td>
            <td>{e.host ? <Link href={`/hosts/${encodeURIComponent(e.host)}`}>{e.host}</Link> : ""}</td>
            <td>
              {e.detail || ""} {e.reason ? <span class="muted">{e.reason}</span> : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
export { AuditTable };

export function ChangeDetail({ id, can }) {
  const got = useCall("GetChange", { id }, [id]);
  const audit = useCall("ListAudit", { changeId: id, limit: 500 }, [id]);
  const [notice, setNotice] = useState("");
  const change = got.data && got.data.change;
  const moving = change && kMoving.has(change.state);

  // Rollout progress: every 2 s while the change is moving.
  useEffect(() => {
    if (!moving) return undefined;
    const t = setInterval(() => {
      got.reload();
      audit.reload();
    }, 2000);
    return () => clearInterval(t);
  }, [moving, id]);

  if (got.error && !change) {
    return (
      <main id="main">
        <h1>Change {id}</h1>
        <ErrorBox error={got.error} />
      </main>
    );
  }
  if (!change) {
    return (
      <main id="main">
        <h1>Change {id}</h1>
        <Loading what="the change" />
      </main>
    );
  }
  const me = can.name;
  const own = change.proposedBy === me || (change.requestedBy && change.requestedBy === me);
  const approvedByMe = (change.approvals || []).some((a) => a.approver === me);
  const proposed = change.state === "CHANGE_STATE_PROPOSED";
  const done = (what) => () => {
    setNotice(what);
    got.reload();
    audit.reload();
  };
  const impact = change.impact || {};
  return (
    <main id="main" class="change">
      <h1>
        Change {change.id}{" "}
        <span class={`state ${change.state}`} data-testid="change-state">
          {stateText(change.state)}
        </span>
      </h1>
      {moving ? (
        <p class="muted" role="status">
          Rolling out: this page updates every 2 seconds (wave {(change.currentWave || 0) + 1} of {change.waveCount || "?"}).
        </p>
      ) : null}
      {notice ? <p role="status">{notice}</p> : null}
      <dl class="facts">
        <div>
          <dt>proposed by</dt>
          <dd data-testid="proposed-by">
            {change.proposedBy} at {timeText(change.proposedAt)}
          </dd>
        </div>
        {change.requestedBy ? (
          <div>
            <dt>requested by</dt>
            <dd>{change.requestedBy}</dd>
          </div>
        ) : null}
        <div>
          <dt>source</dt>
          <dd>
            {enumText(change.source, "CHANGE_SOURCE_")}
            {change.ruleId ? ` · rule ${change.ruleId}` : ""}
            {Object.keys(change.labelSelector || {}).length ? (
              <>
                {" "}
                · <Labels labels={change.labelSelector} />
              </>
            ) : null}
          </dd>
        </div>
        <div>
          <dt>reason</dt>
          <dd>{change.reason || "—"}</dd>
        </div>
        <div>
          <dt>approvals</dt>
          <dd data-testid="approvals">
            {(change.approvals || []).length} of {change.approvalsRequired || 0}
            {(change.approvals || []).map((a) => (
              <span class="label" key={a.approver}>
                {a.approver} ({a.keyId}) {timeText(a.at)}
              </span>
            ))}
          </dd>
        </div>
        <div>
          <dt>impact</dt>
          <dd>
            {impact.hosts || 0} hosts, {impact.hostsWithImpact || 0} with refused clients, {impact.refusedClients || 0} distinct
            clients refused
          </dd>
        </div>
        <div>
          <dt>expires</dt>
          <dd>{timeText(change.notAfter)}</dd>
        </div>
        <div>
          <dt>content hash</dt>
          <dd>
            <code>{change.contentHash}</code>
          </dd>
        </div>
        {change.haltReason ? (
          <div>
            <dt>halted because</dt>
            <dd>{change.haltReason}</dd>
          </div>
        ) : null}
        {change.rejectedBy ? (
          <div>
            <dt>rejected by</dt>
            <dd>{change.rejectedBy}</dd>
          </div>
        ) : null}
        {change.rollbackOf ? (
          <div>
            <dt>rolls back</dt>
            <dd>
              <Link href={`/changes/${encodeURIComponent(change.rollbackOf)}`}>{change.rollbackOf}</Link>
            </dd>
          </div>
        ) : null}
        {change.rolledBackBy ? (
          <div>
            <dt>rolled back by</dt>
            <dd>
              <Link href={`/changes/${encodeURIComponent(change.rolledBackBy)}`}>{change.rolledBackBy}</Link>
            </dd>
          </div>
        ) : null}
      </dl>
      <p>
        <Link href={urlOf("/readiness", { change: change.id })}>Who would break</Link>
      </p>
      <ErrorBox error={got.error} />
      <div class="act" data-testid="actions">
        {can.approve && proposed && !own && !approvedByMe && got.data.approvalPayload ? (
          <ApproveForm change={change} payload={got.data.approvalPayload} me={me} onDone={done("Approved.")} />
        ) : null}
        {can.approve && proposed && !own ? (
          <ReasonAction label="Reject" rpc="RejectChange" id={change.id} required onDone={done("Rejected.")} testid="reject" />
        ) : null}
        {can.halt && kMoving.has(change.state) ? (
          <ReasonAction label="Halt" rpc="HaltChange" id={change.id} onDone={done("Halted.")} testid="halt" />
        ) : null}
        {can.approve && change.state === "CHANGE_STATE_HALTED" ? (
          <ReasonAction label="Resume" rpc="ResumeChange" id={change.id} onDone={done("Resumed.")} testid="resume" />
        ) : null}
        {can.approve && !change.rolledBackBy && ["CHANGE_STATE_ROLLING_OUT", "CHANGE_STATE_HALTED", "CHANGE_STATE_COMPLETED"].includes(change.state) ? (
          <ReasonAction
            label="Roll back"
            rpc="RollbackChange"
            id={change.id}
            onDone={(r) => {
              setNotice("Rollback proposed.");
              if (r.rollback && r.rollback.id) navigate(`/changes/${encodeURIComponent(r.rollback.id)}`);
            }}
            testid="rollback"
          />
        ) : null}
        {proposed && own ? <p class="muted">You proposed this change: someone else approves it.</p> : null}
      </div>
      <Section title="Hosts" id="hosts" count={(change.hosts || []).length}>
        <HostRows hosts={change.hosts} />
      </Section>
      <Section title="Audit log" id="audit">
        <ErrorBox error={audit.error} />
        {audit.data ? <AuditTable entries={audit.data.entries} /> : null}
      </Section>
    </main>
  );
}

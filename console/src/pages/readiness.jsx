// "Who would break": the clients a rule, or a proposed change, would refuse; for client-side
// settings (client.*) the servers the fleet's own clients would be cut off from.
import { useState } from "preact/hooks";
import { Link, navigate, urlOf } from "../router.jsx";
import { Empty, ErrorBox, Loading, timeText, useCall } from "../ui.jsx";

function HostLinks({ hosts }) {
  return (hosts || []).map((h) => (
    <Link key={h} href={`/hosts/${encodeURIComponent(h)}`} class="label">
      {h}
    </Link>
  ));
}

function EvidenceList({ evidence }) {
  return (
    <ul class="evidence">
      {(evidence || []).slice(0, 5).map((e, j) => (
        <li key={j}>
          {e.field}: {e.observed} {e.note ? `— ${e.note}` : ""}
        </li>
      ))}
    </ul>
  );
}

// One row per client or server: its own columns first, then why, when and the evidence.
function CutOffTable({ testid, rows, columns }) {
  const all = [
    ...columns,
    { head: "Why", cell: (r) => (r.reasons || []).join("; ") },
    { head: "First seen", cell: (r) => timeText(r.firstSeen) },
    { head: "Last seen", cell: (r) => timeText(r.lastSeen) },
    { head: "Evidence", cell: (r) => <EvidenceList evidence={r.evidence} /> },
  ];
  return (
    <table data-testid={testid}>
      <thead>
        <tr>
          {all.map((c) => (
            <th scope="col" key={c.head}>
              {c.head}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i}>
            {all.map((c) => (
              <td key={c.head}>{c.cell(r)}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const CLIENT_COLUMNS = [
  {
    head: "Client",
    cell: (c) => (
      <>
        {c.clientName || ""} <span class="muted">{c.clientAddress || ""}</span>
      </>
    ),
  },
  { head: "User", cell: (c) => c.user || "" },
  { head: "Servers that would refuse it", cell: (c) => <HostLinks hosts={c.hosts} /> },
];

const SERVER_COLUMNS = [
  {
    head: "Server",
    cell: (s) => (
      <>
        {s.serverName || ""} <span class="muted">{s.serverAddress || ""}</span>
      </>
    ),
  },
  { head: "Our hosts whose client talks to it", cell: (s) => <HostLinks hosts={s.hosts} /> },
];

export function Readiness({ query }) {
  const rule = query.get("rule") || "";
  const change = query.get("change") || "";
  const request = rule ? { ruleId: rule } : change ? { changeId: change } : null;
  const { data, error, loading } = useCall("GetReadiness", request, [rule, change]);
  const [form, setForm] = useState({ kind: change ? "change" : "rule", value: rule || change });
  const submit = (e) => {
    e.preventDefault();
    navigate(urlOf("/readiness", { [form.kind]: form.value.trim() }));
  };
  const clients = (data && data.clients) || [];
  const servers = (data && data.servers) || [];
  const side = (data && data.side) || "";
  const clientSide = side === "client" || side === "both";
  const serverSide = side !== "client";
  return (
    <main id="main">
      <h1>Readiness: who would break</h1>
      <form class="inline-form" onSubmit={submit} role="search" aria-label="Readiness of a rule or change">
        <label>
          For
          <select value={form.kind} onChange={(e) => setForm({ ...form, kind: e.currentTarget.value })}>
            <option value="rule">rule</option>
            <option value="change">change</option>
          </select>
        </label>
        <label>
          Id
          <input name="id" value={form.value} onInput={(e) => setForm({ ...form, value: e.currentTarget.value })} required />
        </label>
        <button type="submit">Show</button>
      </form>
      {!request ? <Empty>Choose a rule or a proposed change.</Empty> : null}
      <ErrorBox error={error} />
      {request && loading && !data ? <Loading what="readiness" /> : null}
      {data ? (
        <>
          <p data-testid="requirement">
            {data.requirement || ""} · {data.hostsConsidered || 0} hosts considered
            {serverSide ? ` · ${clients.length} clients would be refused` : ""}
            {clientSide ? ` · ${servers.length} servers would cut our clients off` : ""}
          </p>
          {serverSide ? (
            clients.length ? (
              <CutOffTable testid="readiness" rows={clients} columns={CLIENT_COLUMNS} />
            ) : (
              <Empty>No known client would be refused.</Empty>
            )
          ) : null}
          {clientSide ? (
            <>
              <h2>Servers our clients would be cut off from</h2>
              {servers.length ? <CutOffTable testid="readiness-servers" rows={servers} columns={SERVER_COLUMNS} /> : <Empty>No known server would refuse our clients.</Empty>}
            </>
          ) : null}
        </>
      ) : null}
    </main>
  );
}

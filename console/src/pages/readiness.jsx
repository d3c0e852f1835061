// "Who would break": the clients a rule, or a proposed change, would refuse.
import { useState } from "preact/hooks";
import { Link, navigate, urlOf } from "../router.jsx";
import { Empty, ErrorBox, Loading, timeText, useCall } from "../ui.jsx";

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
            {data.requirement || ""} · {data.hostsConsidered || 0} hosts considered · {clients.length} clients would be
            refused
          </p>
          {clients.length ? (
            <table data-testid="readiness">
              <thead>
                <tr>
                  <th scope="col">Client</th>
                  <th scope="col">User</th>
                  <th scope="col">Servers that would refuse it</th>
                  <th scope="col">Why</th>
                  <th scope="col">First seen</th>
                  <th scope="col">Last seen</th>
                  <th scope="col">Evidence</th>
                </tr>
              </thead>
              <tbody>
                {clients.map((c, i) => (
                  <tr key={i}>
                    <td>
                      {c.clientName || ""} <span class="muted">{c.clientAddress || ""}</span>
                    </td>
                    <td>{c.user || ""}</td>
                    <td>
                      {(c.hosts || []).map((h) => (
                        <Link key={h} href={`/hosts/${encodeURIComponent(h)}`} class="label">
                          {h}
                        </Link>
                      ))}
                    </td>
                    <td>{(c.reasons || []).join("; ")}</td>
                    <td>{timeText(c.firstSeen)}</td>
                    <td>{timeText(c.lastSeen)}</td>
                    <td>
                      <ul class="evidence">
                        {(c.evidence || []).slice(0, 5).map((e, j) => (
                          <li key={j}>
                            {e.field}: {e.observed} {e.note ? `— ${e.note}` : ""}
                          </li>
                        ))}
                      </ul>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <Empty>No known client would be refused.</Empty>
          )}
        </>
      ) : null}
    </main>
  );
}

// The append-only audit log of changes and waivers.
import { useState } from "preact/hooks";
import { navigate, urlOf, Link } from "../router.jsx";
import { ErrorBox, Loading, useCall } from "../ui.jsx";
import { AuditTable } from "./changes.jsx";

export function Audit({ query }) {
  const changeId = query.get("change") || "";
  const after = query.get("after") || "";
  const request = { limit: 200 };
  if (changeId) request.changeId = changeId;
  if (after) request.afterSeq = after;
  const { data, error } = useCall("ListAudit", request, [changeId, after]);
  const [field, setField] = useState(changeId);
  const entries = (data && data.entries) || [];
  const last = entries.length ? entries[entries.length - 1].seq : null;
  return (
    <main id="main">
      <h1>Audit log</h1>
      <form
        class="inline-form"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(urlOf("/audit", { change: field.trim() }));
        }}
      >
        <label>
          Change
          <input name="change" value={field} onInput={(e) => setField(e.currentTarget.value)} />
        </label>
        <button type="submit">Show</button>
      </form>
      <ErrorBox error={error} />
      {data ? <AuditTable entries={entries} /> : error ? null : <Loading what="the audit log" />}
      {entries.length === 200 && last != null ? (
        <nav class="pager" aria-label="Pages">
          <Link href={urlOf("/audit", { change: changeId, after: last })}>Later entries</Link>
        </nav>
      ) : null}
    </main>
  );
}

// Small shared pieces: loading data, errors, tables, values shown as text.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { call } from "./api.js";

// useCall(rpc, request, deps) -> {data, error, loading, reload}. `request` null: no call.
export function useCall(rpc, request, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: request != null });
  const seq = useRef(0);
  const load = useCallback(async () => {
    if (request == null) return;
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await call(rpc, request);
      if (mine === seq.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === seq.current) setState({ data: null, error, loading: false });
    }
  }, deps);
  useEffect(() => {
    load();
  }, [load]);
  return { ...state, reload: load };
}

export function ErrorBox({ error }) {
  if (!error) return null;
  return (
    <div class="error" role="alert" data-testid="error">
      <strong>{error.code || "ERROR"}</strong> {error.message}
    </div>
  );
}

export function Loading({ what }) {
  return <p class="muted" aria-busy="true">Loading {what}…</p>;
}

// Enum names from the JSON mapping, shortened for people: DIALECT_SMB_3_1_1 -> SMB 3.1.1.
export function enumText(value, prefix) {
  if (value == null || value === "") return "unknown";
  let s = String(value);
  if (prefix && s.startsWith(prefix)) s = s.slice(prefix.length);
  if (s === "UNSPECIFIED") return "unknown";
  if (prefix === "DIALECT_") return s.replace(/^SMB_?/, "SMB ").replace(/_/g, ".").replace("SMB .", "SMB ");
  return s.toLowerCase().replace(/_/g, " ");
}

export function timeText(ts) {
  if (!ts) return "—";
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/:\d\dZ$/, "Z");
}

export function ageText(ts) {
  if (!ts) return "";
  const s = Math.round((Date.now() - new Date(ts).getTime()) / 1000);
  if (Number.isNaN(s)) return "";
  if (s < 90) return `${s}s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 2 * 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

export function pctText(p) {
  if (p == null) return "0.0%";
  if (p < 0) return "n/a";
  return `${p.toFixed(1)}%`;
}

// A proto3 optional value: absent means unknown, which is not the same as false.
export function Known({ value }) {
  if (value === undefined || value === null) return <span class="unknown">unknown</span>;
  if (value === true) return <span class="yes">yes</span>;
  if (value === false) return <span class="no">no</span>;
  return <>{String(value)}</>;
}

export function Labels({ labels }) {
  const entries = Object.entries(labels || {});
  if (!entries.length) return <span class="muted">—</span>;
  return (
    <span class="labels">
      {entries.map(([k, v]) => (
        <span class="label" key={k}>
          {k}={v}
        </span>
      ))}
    </span>
  );
}

export function Section({ title, id, children, count }) {
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>
        {title}
        {count != null ? <span class="count"> ({count})</span> : null}
      </h2>
      {children}
    </section>
  );
}

export function Empty({ children }) {
  return <p class="muted">{children}</p>;
}

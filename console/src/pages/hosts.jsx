// Hosts: search and filters in the URL, keyset paging by the server.
import { useState } from "preact/hooks";
import { Link, navigate, urlOf } from "../router.jsx";
import { ageText, Empty, enumText, ErrorBox, Labels, Loading, useCall } from "../ui.jsx";

const kPageSize = 50;

// label=site=paris or label=site:paris, any number of them.
function labelsOf(values) {
  const labels = {};
  for (const v of values) {
    const m = v.match(/^([^=:]+)[=:](.*)$/);
    if (m) labels[m[1].trim()] = m[2].trim();
  }
  return labels;
}

// Only the filters that are set go into the request: a collector without a filter field still
// answers an unfiltered listing.
function requestOf(query) {
  const r = { pageSize: kPageSize };
  const q = query.get("q");
  if (q) r.query = q;
  const labels = labelsOf(query.getAll("label"));
  if (Object.keys(labels).length) r.labels = labels;
  if (query.get("os")) r.os = query.get("os");
  const platform = query.get("platform");
  if (platform === "windows") r.platform = "PLATFORM_WINDOWS";
  if (platform === "samba") r.platform = "PLATFORM_SAMBA";
  if (query.get("failing")) r.failingRule = query.get("failing");
  if (query.get("stale")) r.staleOnly = true;
  if (query.get("page")) r.pageToken = query.get("page");
  return r;
}

function Filters({ query }) {
  const [form, setForm] = useState(() => ({
    q: query.get("q") || "",
    label: query.getAll("label").join(" "),
    os: query.get("os") || "",
    platform: query.get("platform") || "",
    failing: query.get("failing") || "",
    stale: !!query.get("stale"),
  }));
  const set = (k) => (e) => setForm({ ...form, [k]: e.currentTarget.type === "checkbox" ? e.currentTarget.checked : e.currentTarget.value });
  const submit = (e) => {
    e.preventDefault();
    navigate(
      urlOf("/hosts", {
        q: form.q.trim(),
        label: form.label.split(/\s+/).filter(Boolean),
        os: form.os.trim(),
        platform: form.platform,
        failing: form.failing.trim(),
        stale: form.stale ? 1 : "",
      }),
    );
  };
  return (
    <form class="filters" onSubmit={submit} role="search" aria-label="Filter hosts">
      <label>
        Name contains
        <input name="q" value={form.q} onInput={set("q")} type="search" />
      </label>
      <label>
        Labels (k=v …)
        <input name="label" value={form.label} onInput={set("label")} placeholder="site=paris" />
      </label>
      <label>
        OS
        <input name="os" value={form.os} onInput={set("os")} />
      </label>
      <label>
        Platform
        <select name="platform" value={form.platform} onChange={set("platform")}>
          <option value="">any</option>
          <option value="windows">Windows</option>
          <option value="samba">Samba</option>
        </select>
      </label>
      <label>
        Failing rule (* = any)
        <input name="failing" value={form.failing} onInput={set("failing")} />
      </label>
      <label class="check">
        <input type="checkbox" name="stale" checked={form.stale} onChange={set("stale")} /> stale only
      </label>
      <button type="submit">Search</button>
      <Link href="/hosts">Clear</Link>
    </form>
  );
}

export function Hosts({ query }) {
  const key = query.toString();
  const request = requestOf(query);
  const { data, error, loading } = useCall("ListHosts", request, [key]);
  const hosts = (data && data.hosts) || [];
  const nextUrl = () => {
    const q = new URLSearchParams(query);
    q.set("page", data.nextPageToken);
    return `/hosts?${q.toString()}`;
  };
  const firstUrl = () => {
    const q = new URLSearchParams(query);
    q.delete("page");
    const s = q.toString();
    return s ? `/hosts?${s}` : "/hosts";
  };
  return (
    <main id="main">
      <h1>Hosts</h1>
      <Filters query={query} key={key} />
      <ErrorBox error={error} />
      {loading && !data ? <Loading what="hosts" /> : null}
      {data ? (
        <>
          <p class="muted" data-testid="hosts-total">
            {data.total != null ? `${data.total} hosts match` : `${hosts.length} hosts on this page`}
            {query.get("page") ? " (a later page)" : ""}
          </p>
          {hosts.length ? (
            <table data-testid="hosts">
              <thead>
                <tr>
                  <th scope="col">Host</th>
                  <th scope="col">Platform</th>
                  <th scope="col">OS</th>
                  <th scope="col">Labels</th>
                  <th scope="col">Last seen</th>
                  <th scope="col" class="num">
                    Shares
                  </th>
                  <th scope="col" class="num">
                    Sessions
                  </th>
                  <th scope="col">Agent</th>
                </tr>
              </thead>
              <tbody>
                {hosts.map((h) => (
                  <tr key={h.name}>
                    <th scope="row">
                      <Link href={`/hosts/${encodeURIComponent(h.name)}`}>{h.name}</Link>
                    </th>
                    <td>{enumText(h.platform, "PLATFORM_")}</td>
                    <td>
                      {h.osName || ""} {h.osVersion || ""}
                    </td>
                    <td>
                      <Labels labels={h.labels} />
                    </td>
                    <td>{ageText(h.lastSeen) || "never"}</td>
                    <td class="num">{h.shares || 0}</td>
                    <td class="num">{h.sessions || 0}</td>
                    <td>
                      {h.connected ? <span class="yes">connected</span> : <span class="muted">not connected</span>}
                      {h.probeErrors ? <span class="no"> · {h.probeErrors} probe errors</span> : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <Empty>No host matches.</Empty>
          )}
          <nav class="pager" aria-label="Pages">
            {query.get("page") ? <Link href={firstUrl()}>First page</Link> : null}
            {data.nextPageToken ? <Link href={nextUrl()}>Next page</Link> : null}
          </nav>
        </>
      ) : null}
    </main>
  );
}

// The fleet overview (GetFleetOverview); GetCompliance alone while the collector has no overview.
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { call } from "../api.js";
import { Link, urlOf } from "../router.jsx";
import { ageText, Empty, enumText, ErrorBox, Loading, pctText, Section, timeText } from "../ui.jsx";

function useOverview() {
  const [state, setState] = useState({ loading: true });
  useEffect(() => {
    let live = true;
    (async () => {
      try {
        const data = await call("GetFleetOverview", {});
        if (live) setState({ data, full: true });
      } catch (e) {
        if (e.status !== 501 && e.status !== 404) {
          if (live) setState({ error: e });
          return;
        }
        try {
          const c = await call("GetCompliance", {});
          if (live) {
            setState({
              data: { policyName: c.policyName, policyVersion: c.policyVersion, byRule: c.rules || [] },
              full: false,
            });
          }
        } catch (e2) {
          if (live) setState({ error: e2 });
        }
      }
    })();
    return () => {
      live = false;
    };
  }, []);
  return state;
}

const kCounts = [
  ["compliant", "compliant"],
  ["nonCompliant", "non-compliant"],
  ["waived", "waived"],
  ["unknown", "unknown"],
  ["errors", "errors"],
];

function RuleTable({ rules, can }) {
  if (!rules.length) return <Empty>No rule results yet.</Empty>;
  return (
    <table data-testid="by-rule">
      <thead>
        <tr>
          <th scope="col">Rule</th>
          <th scope="col">Compliant %</th>
          {kCounts.map(([, t]) => (
            <th scope="col" class="num" key={t}>
              {t}
            </th>
          ))}
          <th scope="col" class="num">
            n/a
          </th>
          <th scope="col">Look</th>
        </tr>
      </thead>
      <tbody>
        {rules.map((r) => (
          <tr key={r.ruleId} data-rule={r.ruleId}>
            <th scope="row">{r.ruleId}</th>
            <td data-field="compliantPct">
              <Bar pct={r.compliantPct} />
            </td>
            {kCounts.map(([k]) => (
              <td class="num" data-field={k} key={k}>
                {r[k] || 0}
              </td>
            ))}
            <td class="num" data-field="notApplicable">
              {r.notApplicable || 0}
            </td>
            <td class="actions">
              {r.nonCompliant ? <Link href={urlOf("/hosts", { failing: r.ruleId })}>failing hosts</Link> : null}{" "}
              <Link href={urlOf("/readiness", { rule: r.ruleId })}>who would break</Link>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Bar({ pct }) {
  const p = pct == null ? 0 : pct;
  return (
    <span class="bar" title={pctText(p)}>
      <meter min="0" max="100" low="80" high="95" optimum="100" value={p < 0 ? 0 : p} aria-hidden="true" />
      <span>{pctText(p)}</span>
    </span>
  );
}

function SliceTable({ slices, what, testid, link }) {
  if (!slices || !slices.length) return <Empty>Nothing to show by {what}.</Empty>;
  return (
    <table data-testid={testid}>
      <thead>
        <tr>
          <th scope="col">{what}</th>
          <th scope="col">Compliant %</th>
          {kCounts.map(([, t]) => (
            <th scope="col" class="num" key={t}>
              {t}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {slices.map((s) => (
          <tr key={s.key} data-key={s.key}>
            <th scope="row">{link ? <Link href={link(s.key)}>{s.key}</Link> : s.key}</th>
            <td>
              <Bar pct={s.compliantPct} />
            </td>
            {kCounts.map(([k]) => (
              <td class="num" key={k} data-field={k}>
                {s[k] || 0}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Trend({ points }) {
  const el = useRef(null);
  useEffect(() => {
    if (!el.current || !points || points.length < 1) return undefined;
    const xs = points.map((p) => Date.parse(`${p.day}T00:00:00Z`) / 1000);
    const ys = points.map((p) => (p.compliantPct == null || p.compliantPct < 0 ? null : p.compliantPct));
    const width = Math.max(320, Math.min(el.current.clientWidth || 800, 1100));
    const plot = new uPlot(
      {
        width,
        height: 220,
        scales: { x: { time: true }, y: { range: [0, 100] } },
        axes: [{}, { values: (u, vals) => vals.map((v) => `${v}%`) }],
        series: [{}, { label: "compliant %", stroke: "#1f6f43", width: 2, fill: "rgba(31,111,67,0.08)", spanGaps: true }],
        legend: { show: true },
      },
      [xs, ys],
      el.current,
    );
    return () => plot.destroy();
  }, [points]);
  if (!points || !points.length) return <Empty>No history yet: the trend starts with the first evaluated day.</Empty>;
  const last = points[points.length - 1];
  return (
    <figure class="trend">
      <div ref={el} role="img" aria-label={`Fleet compliance over ${points.length} days, now ${pctText(last.compliantPct)}`} />
      <figcaption class="muted">
        Fleet-wide compliant % per UTC day, {points[0].day} to {last.day}.
      </figcaption>
    </figure>
  );
}

function HostAges({ hosts, label, testid, showCount }) {
  if (!hosts || !hosts.length) return <Empty>None.</Empty>;
  return (
    <table data-testid={testid}>
      <thead>
        <tr>
          <th scope="col">Host</th>
          <th scope="col">{label}</th>
          {showCount ? (
            <th scope="col" class="num">
              {showCount}
            </th>
          ) : null}
        </tr>
      </thead>
      <tbody>
        {hosts.map((h) => (
          <tr key={h.name}>
            <th scope="row">
              <Link href={`/hosts/${encodeURIComponent(h.name)}`}>{h.name}</Link>
            </th>
            <td>
              {timeText(h.since)} <span class="muted">{ageText(h.since)}</span>
            </td>
            {showCount ? <td class="num">{h.count || 0}</td> : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Sessions({ s }) {
  if (!s) return <Empty>No session data.</Empty>;
  const byDialect = Object.entries(s.byDialect || {});
  return (
    <>
      <dl class="figures" data-testid="sessions">
        <div>
          <dt>live sessions</dt>
          <dd>{s.sessions || 0}</dd>
        </div>
        <div>
          <dt>unsigned</dt>
          <dd>{s.unsignedSessions || 0}</dd>
        </div>
        <div>
          <dt>unencrypted</dt>
          <dd>{s.unencryptedSessions || 0}</dd>
        </div>
        <div>
          <dt>legacy dialect (below SMB 3.0)</dt>
          <dd>{s.legacyDialectSessions || 0}</dd>
        </div>
      </dl>
      {byDialect.length ? (
        <p>
          By dialect:{" "}
          {byDialect.map(([d, n]) => (
            <span class="label" key={d}>
              {enumText(d, "DIALECT_")}: {n}
            </span>
          ))}
        </p>
      ) : null}
      <HostAges hosts={s.topHosts} label="seen" testid="session-hosts" showCount="unsigned or legacy sessions" />
    </>
  );
}

export function Overview({ can }) {
  const { data, error, full, loading } = useOverview();
  if (loading) {
    return (
      <main id="main">
        <h1>Fleet overview</h1>
        <Loading what="the overview" />
      </main>
    );
  }
  if (error) {
    return (
      <main id="main">
        <h1>Fleet overview</h1>
        <ErrorBox error={error} />
      </main>
    );
  }
  return (
    <main id="main" class="overview">
      <h1>Fleet overview</h1>
      <p class="muted" data-testid="policy">
        Policy {data.policyName || "?"} {data.policyVersion || ""}
        {full ? (
          <>
            {" "}
            · {data.hosts || 0} hosts · generated {timeText(data.generatedAt)}
          </>
        ) : null}
      </p>
      {!full ? (
        <p class="note">This collector has no fleet overview yet: only compliance per rule is shown.</p>
      ) : null}
      {full ? (
        <dl class="figures">
          <div>
            <dt>hosts</dt>
            <dd data-testid="hosts-count">{data.hosts || 0}</dd>
          </div>
          <div>
            <dt>stale agents</dt>
            <dd>
              <Link href={urlOf("/hosts", { stale: 1 })}>{data.staleCount || 0}</Link>
            </dd>
          </div>
          <div>
            <dt>drift (desired ≠ applied)</dt>
            <dd>{data.driftCount || 0}</dd>
          </div>
        </dl>
      ) : null}
      <Section title="Compliance by rule" id="by-rule">
        <RuleTable rules={data.byRule || []} can={can} />
      </Section>
      {full ? (
        <>
          <Section title="Trend" id="trend">
            <Trend points={data.trend || []} />
          </Section>
          <div class="columns">
            <Section title="By classification" id="by-class">
              <SliceTable slices={data.byClassification} what="classification" testid="by-classification" />
            </Section>
            <Section title="By label" id="by-label">
              <SliceTable
                slices={data.byLabel}
                what="label"
                testid="by-label"
                link={(key) => urlOf("/hosts", { label: key })}
              />
            </Section>
          </div>
          <div class="columns">
            <Section title="Failing longest" id="failing">
              <HostAges hosts={data.failingLongest} label="failing since" testid="failing-longest" showCount="failing rules" />
            </Section>
            <Section title="Stale agents" id="stale" count={data.staleCount || 0}>
              <HostAges hosts={data.stale} label="last seen" testid="stale" />
            </Section>
          </div>
          <Section title="Drift: applied configuration differs from desired" id="drift" count={data.driftCount || 0}>
            {data.drift && data.drift.length ? (
              <table data-testid="drift">
                <thead>
                  <tr>
                    <th scope="col">Host</th>
                    <th scope="col">Desired change</th>
                    <th scope="col">Applied change</th>
                    <th scope="col">Last result</th>
                  </tr>
                </thead>
                <tbody>
                  {data.drift.map((h) => {
                    const cs = h.changeStatus || {};
                    return (
                      <tr key={h.name}>
                        <th scope="row">
                          <Link href={`/hosts/${encodeURIComponent(h.name)}`}>{h.name}</Link>
                        </th>
                        <td>
                          {cs.desiredChangeId ? (
                            <Link href={`/changes/${encodeURIComponent(cs.desiredChangeId)}`}>
                              {cs.desiredChangeId} v{cs.desiredVersion || 0}
                            </Link>
                          ) : (
                            "—"
                          )}
                        </td>
                        <td>
                          {cs.appliedChangeId || "—"} {cs.appliedChangeId ? `v${cs.appliedVersion || 0}` : ""}
                        </td>
                        <td>
                          {enumText(cs.lastResult, "HOST_CHANGE_STATE_")} {cs.lastError ? `: ${cs.lastError}` : ""}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            ) : (
              <Empty>Every host is at the change it should be at.</Empty>
            )}
          </Section>
          <div class="columns">
            <Section title="Encryption coverage of classified shares" id="encryption">
              {data.encryption && data.encryption.length ? (
                <table data-testid="encryption">
                  <thead>
                    <tr>
                      <th scope="col">Classification</th>
                      <th scope="col" class="num">
                        shares
                      </th>
                      <th scope="col" class="num">
                        encrypted
                      </th>
                      <th scope="col">coverage</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.encryption.map((e) => (
                      <tr key={e.classification}>
                        <th scope="row">{e.classification || "unclassified"}</th>
                        <td class="num">{e.shares || 0}</td>
                        <td class="num">{e.encrypted || 0}</td>
                        <td>
                          <Bar pct={e.encryptedPct} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ) : (
                <Empty>No classified shares.</Empty>
              )}
            </Section>
            <Section title="Unsigned and legacy sessions" id="sessions">
              <Sessions s={data.sessions} />
            </Section>
          </div>
        </>
      ) : null}
    </main>
  );
}

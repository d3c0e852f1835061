// One host: configuration (unset shown as unknown), shares, sessions with their round-trip
// times, network interfaces, events, benchmarks, findings, waivers and its change history.
import { useState } from "preact/hooks";
import { call } from "../api.js";
import { Link, navigate, urlOf } from "../router.jsx";
import { ageText, Empty, enumText, ErrorBox, Known, Labels, Loading, Section, timeText, useCall } from "../ui.jsx";

const kServerFields = [
  ["smb1Enabled", "SMB1 enabled"],
  ["smb2Enabled", "SMB2/3 enabled"],
  ["requireSigning", "require signing"],
  ["enableSigning", "enable signing"],
  ["encryptData", "encrypt data"],
  ["rejectUnencryptedAccess", "reject unencrypted access"],
  ["minDialect", "minimum dialect"],
  ["maxDialect", "maximum dialect"],
  ["auditSmb1Access", "audit SMB1 access"],
  ["auditClientDoesNotSupportEncryption", "audit clients without encryption"],
  ["auditClientDoesNotSupportSigning", "audit clients without signing"],
  ["guestAccessAllowed", "guest access allowed"],
  ["multichannelEnabled", "multichannel"],
  ["nameHardeningLevel", "SPN name hardening level"],
  ["enableAuthRateLimiter", "authentication rate limiter"],
  ["quicEnabled", "SMB over QUIC"],
];

const kClientFields = [
  ["requireSigning", "require signing"],
  ["enableSigning", "enable signing"],
  ["enableInsecureGuestLogons", "insecure guest logons"],
  ["smb1Enabled", "SMB1 enabled"],
  ["requireEncryption", "require encryption"],
  ["minDialect", "minimum dialect"],
  ["maxDialect", "maximum dialect"],
  ["blockNtlm", "block NTLM"],
];

function configValue(v) {
  if (typeof v === "string" && v.startsWith("DIALECT_")) return enumText(v, "DIALECT_");
  return v;
}

function ConfigTable({ config, fields, testid }) {
  if (!config) return <Empty>Unknown: the agent did not report this section.</Empty>;
  return (
    <table class="kv" data-testid={testid}>
      <tbody>
        {fields.map(([k, text]) => (
          <tr key={k} data-setting={k}>
            <th scope="row">{text}</th>
            <td>
              <Known value={configValue(config[k])} />
            </td>
          </tr>
        ))}
        {(config.encryptionCiphers || []).length ? (
          <tr>
            <th scope="row">ciphers</th>
            <td>{config.encryptionCiphers.join(", ")}</td>
          </tr>
        ) : null}
        {Object.entries(config.raw || {}).map(([k, v]) => (
          <tr key={`raw:${k}`} class="raw">
            <th scope="row">{k}</th>
            <td>{v}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Shares({ shares }) {
  if (!shares || !shares.length) return <Empty>No shares reported.</Empty>;
  return (
    <table data-testid="shares">
      <thead>
        <tr>
          <th scope="col">Share</th>
          <th scope="col">Path</th>
          <th scope="col">Classification</th>
          <th scope="col">Set by rule</th>
          <th scope="col">Encrypt data</th>
          <th scope="col">Guest ok</th>
          <th scope="col">Read only</th>
        </tr>
      </thead>
      <tbody>
        {shares.map((s, i) => (
          <tr key={i} data-share-index={i}>
            <th scope="row" class="share-name">
              {s.name}
              {s.special ? <span class="muted"> (special)</span> : null}
            </th>
            <td>{s.path}</td>
            <td>{s.classification || <span class="unknown">unclassified</span>}</td>
            <td>{s.classificationRule || "—"}</td>
            <td>
              <Known value={s.encryptData} />
            </td>
            <td>
              <Known value={s.guestOk} />
            </td>
            <td>
              <Known value={s.readOnly} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// A session's lowest round-trip time in ms, as `smbfleetctl host show` prints it: three
// decimals on a LAN, two from 1 ms, one from 10 ms. Unmeasured: null.
function minRttText(us) {
  if (us == null) return null;
  const ms = Number(us) / 1000;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 1) return `${ms.toFixed(2)} ms`;
  return `${ms.toFixed(3)} ms`;
}

function Sessions({ sessions }) {
  if (!sessions || !sessions.length) return <Empty>No live sessions.</Empty>;
  return (
    <table data-testid="sessions">
      <thead>
        <tr>
          <th scope="col">Client</th>
          <th scope="col">User</th>
          <th scope="col">Dialect</th>
          <th scope="col">Signing</th>
          <th scope="col">Encryption</th>
          <th scope="col">Cipher</th>
          <th scope="col">Shares</th>
          <th scope="col" title="the lowest round-trip time the server's TCP stack measured">
            RTT (min)
          </th>
        </tr>
      </thead>
      <tbody>
        {sessions.map((s, i) => (
          <tr key={i} data-client={s.clientAddress || ""}>
            <td>
              {s.clientName || ""} <span class="muted">{s.clientAddress || ""}</span>
            </td>
            <td>
              {s.user || ""}
              {s.guest ? " (guest)" : ""}
              {s.anonymous ? " (anonymous)" : ""}
            </td>
            <td>{enumText(s.dialect, "DIALECT_")}</td>
            <td class={s.signing === "PROTECTION_FULL" ? "yes" : s.signing === "PROTECTION_NONE" ? "no" : ""}>
              {enumText(s.signing, "PROTECTION_")}
              {s.signingAlgorithm ? ` (${s.signingAlgorithm})` : ""}
            </td>
            <td class={s.encryption === "PROTECTION_FULL" ? "yes" : s.encryption === "PROTECTION_NONE" ? "no" : ""}>
              {enumText(s.encryption, "PROTECTION_")}
            </td>
            <td>{s.cipher || "—"}</td>
            <td>{(s.shares || []).map((c) => c.name).join(", ")}</td>
            <td
              data-testid="rtt"
              title={s.rttUs != null ? `smoothed ${minRttText(s.rttUs)}, retransmits ${s.retransmits ?? "unknown"}` : ""}
            >
              <Known value={minRttText(s.minRttUs)} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// "25 Gbit/s", "100 Mbit/s"; null when the host did not say. int64 fields arrive as strings.
function speedText(bps) {
  if (bps == null) return null;
  const v = Number(bps);
  return v >= 1e9 ? `${v / 1e9} Gbit/s` : `${v / 1e6} Mbit/s`;
}

// "8 (on)", "1 (off)", "on"; null when unknown.
function rssText(nic) {
  const enabled = nic.rssEnabled == null ? "" : nic.rssEnabled ? "on" : "off";
  if (nic.rssQueues == null) return enabled || null;
  return enabled ? `${nic.rssQueues} (${enabled})` : String(nic.rssQueues);
}

function Nics({ nics }) {
  if (!nics || !nics.length) return <Empty>No network interfaces reported.</Empty>;
  return (
    <table data-testid="nics">
      <thead>
        <tr>
          <th scope="col">Interface</th>
          <th scope="col">Up</th>
          <th scope="col">Link speed</th>
          <th scope="col">RSS queues</th>
          <th scope="col">RSS capable</th>
          <th scope="col">RDMA</th>
          <th scope="col">MTU</th>
        </tr>
      </thead>
      <tbody>
        {nics.map((n, i) => (
          <tr key={i} data-nic={n.name || ""}>
            <th scope="row">
              {n.name || ""} <span class="muted">{n.description || ""}</span>
            </th>
            <td>
              <Known value={n.up} />
            </td>
            <td>
              <Known value={speedText(n.linkSpeedBps)} />
            </td>
            <td>
              <Known value={rssText(n)} />
            </td>
            <td>
              <Known value={n.rssCapable} />
            </td>
            <td>
              <Known value={n.rdmaCapable} />
            </td>
            <td>
              <Known value={n.mtu} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Events({ events }) {
  if (!events || !events.length) return <Empty>No SMB events reported.</Empty>;
  const recent = [...events].sort((a, b) => String(b.time || "").localeCompare(String(a.time || ""))).slice(0, 50);
  return (
    <table data-testid="events">
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Event</th>
          <th scope="col">Meaning</th>
          <th scope="col">Client</th>
          <th scope="col">User</th>
          <th scope="col">Share</th>
          <th scope="col">Message</th>
        </tr>
      </thead>
      <tbody>
        {recent.map((e, i) => (
          <tr key={i}>
            <td>{timeText(e.time)}</td>
            <td>
              {e.eventId || ""} <span class="muted">{enumText(e.level, "EVENT_LEVEL_")}</span>
            </td>
            <td>{e.kind ? e.kind.replace(/_/g, " ") : ""}</td>
            <td>
              {e.clientName || ""} <span class="muted">{e.clientAddress || ""}</span>
            </td>
            <td>{e.user || ""}</td>
            <td>{e.shareName || ""}</td>
            <td class="message">{e.message || e.status || ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Benchmarks({ benchmarks, cost }) {
  return (
    <>
      {benchmarks && benchmarks.length ? (
        <table data-testid="benchmarks">
          <thead>
            <tr>
              <th scope="col">Algorithm</th>
              <th scope="col" class="num">
                Buffer
              </th>
              <th scope="col" class="num">
                Threads
              </th>
              <th scope="col" class="num">
                MB/s
              </th>
              <th scope="col">Measured</th>
            </tr>
          </thead>
          <tbody>
            {benchmarks.map((b, i) => (
              <tr key={i}>
                <td>{b.algorithm}</td>
                <td class="num">{b.bufferBytes || 0}</td>
                <td class="num">{b.threads || 0}</td>
                <td class="num">{((b.bytesPerSecond || 0) / 1e6).toFixed(0)}</td>
                <td>{timeText(b.measuredAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <Empty>No benchmark results yet.</Empty>
      )}
      {cost ? (
        <p data-testid="predicted-cost">
          Predicted cost of the pending change: {cost.known ? cost.summary : "unknown (no benchmark to base it on)"}
          {cost.before || cost.after ? (
            <span class="muted">
              {" "}
              ({cost.before || "?"} → {cost.after || "?"})
            </span>
          ) : null}
        </p>
      ) : null}
    </>
  );
}

function Evidence({ evidence }) {
  if (!evidence || !evidence.length) return null;
  return (
    <ul class="evidence">
      {evidence.map((e, i) => (
        <li key={i}>
          {e.field}: {e.observed || "(unset)"} (expected {e.expected || "?"})
          {e.share ? ` share ${e.share}` : ""}
          {e.clientAddress || e.clientName ? ` client ${e.clientName || ""} ${e.clientAddress || ""}` : ""}
          {e.user ? ` user ${e.user}` : ""}
          {e.note ? ` — ${e.note}` : ""}
        </li>
      ))}
    </ul>
  );
}

function Findings({ host, findings, can }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const propose = async (f) => {
    setBusy(true);
    setError(null);
    try {
      const r = await call("ProposeChange", { hosts: [host], reason: `fix ${f.ruleId} on ${host} (from the console)` });
      navigate(`/changes/${encodeURIComponent(r.change.id)}`);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  if (!findings.length) return <Empty>No failing rule.</Empty>;
  return (
    <>
      <ErrorBox error={error} />
      <table data-testid="findings">
        <thead>
          <tr>
            <th scope="col">Rule</th>
            <th scope="col">Severity</th>
            <th scope="col">Share</th>
            <th scope="col">What</th>
            <th scope="col">Failing since</th>
            <th scope="col">Act</th>
          </tr>
        </thead>
        <tbody>
          {findings.map((f, i) => (
            <tr key={i} data-rule={f.ruleId}>
              <th scope="row">{f.ruleId}</th>
              <td>{enumText(f.severity, "SEVERITY_")}</td>
              <td>
                {f.share || "—"}
                {f.classification ? <span class="muted"> ({f.classification})</span> : null}
              </td>
              <td>
                {f.message}
                <Evidence evidence={f.evidence} />
                {f.waiverId ? <p class="muted">waived by {f.waiverId}</p> : null}
              </td>
              <td>
                {timeText(f.failingSince)} <span class="muted">{ageText(f.failingSince)}</span>
              </td>
              <td class="actions">
                <Link href={urlOf("/readiness", { rule: f.ruleId })}>who would break</Link>
                {can.propose && !f.waiverId ? (
                  <button type="button" disabled={busy} onClick={() => propose(f)}>
                    Propose fix
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function Waivers({ host, labels, waivers }) {
  const applies = (w) =>
    w.host ? w.host === host : w.labelKey ? (labels || {})[w.labelKey] === (w.labelValue || "") : true;
  const mine = (waivers || []).filter(applies);
  if (!mine.length) return <Empty>No waiver applies to this host.</Empty>;
  return (
    <table data-testid="waivers">
      <thead>
        <tr>
          <th scope="col">Waiver</th>
          <th scope="col">Rule</th>
          <th scope="col">Scope</th>
          <th scope="col">State</th>
          <th scope="col">Expires</th>
          <th scope="col">Justification</th>
        </tr>
      </thead>
      <tbody>
        {mine.map((w) => (
          <tr key={w.id}>
            <th scope="row">{w.id}</th>
            <td>{w.ruleId}</td>
            <td>
              {w.host ? `host ${w.host}` : ""}
              {w.labelKey ? `label ${w.labelKey}=${w.labelValue || ""}` : ""}
              {w.share ? ` share ${w.share}` : ""}
            </td>
            <td>{enumText(w.state, "WAIVER_STATE_")}</td>
            <td>{timeText(w.expiresAt)}</td>
            <td>{w.justification}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function History({ status, entries }) {
  const cs = status || {};
  return (
    <>
      <p data-testid="change-status">
        Desired:{" "}
        {cs.desiredChangeId ? (
          <Link href={`/changes/${encodeURIComponent(cs.desiredChangeId)}`}>
            {cs.desiredChangeId} v{cs.desiredVersion || 0}
          </Link>
        ) : (
          "none"
        )}{" "}
        · applied: {cs.appliedChangeId ? `${cs.appliedChangeId} v${cs.appliedVersion || 0}` : "none"} · last result:{" "}
        {enumText(cs.lastResult, "HOST_CHANGE_STATE_")}
        {cs.lastError ? ` (${cs.lastError})` : ""}
      </p>
      {entries.length ? (
        <table data-testid="history">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Change</th>
              <th scope="col">What</th>
              <th scope="col">Who</th>
              <th scope="col">Detail</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.seq}>
                <td>{timeText(e.at)}</td>
                <td>{e.changeId ? <Link href={`/changes/${encodeURIComponent(e.changeId)}`}>{e.changeId}</Link> : "—"}</td>
                <td>{e.action}</td>
                <td>{e.actor}</td>
                <td>{e.detail || e.reason || ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <Empty>No change has touched this host.</Empty>
      )}
    </>
  );
}

export function Host({ name, can }) {
  const host = useCall("GetHost", { name }, [name]);
  const findings = useCall("ListFindings", { host: name, includeWaived: true }, [name]);
  const waivers = useCall("ListWaivers", {}, [name]);
  const audit = useCall("ListAudit", { limit: 1000 }, [name]);
  const desired = host.data && host.data.summary && host.data.summary.changeStatus && host.data.summary.changeStatus.desiredChangeId;
  const change = useCall("GetChange", desired ? { id: desired } : null, [desired]);
  const [nudged, setNudged] = useState(null);

  if (host.error) {
    return (
      <main id="main">
        <h1>{name}</h1>
        <ErrorBox error={host.error} />
      </main>
    );
  }
  if (!host.data) {
    return (
      <main id="main">
        <h1>{name}</h1>
        <Loading what="the host" />
      </main>
    );
  }
  const s = host.data.summary || {};
  const p = host.data.posture || {};
  const hostInfo = p.host || {};
  const mine = change.data && change.data.change ? (change.data.change.hosts || []).find((h) => h.host === name) : null;
  const history = ((audit.data && audit.data.entries) || []).filter((e) => e.host === name).reverse();
  const nudge = async () => {
    setNudged(null);
    try {
      const r = await call("RequestReport", { name, reason: "asked from the console" });
      setNudged({ ok: r.delivered ? "asked: the agent will report now" : "the agent is not connected; it reports at its next interval" });
    } catch (e) {
      setNudged({ error: e });
    }
  };
  return (
    <main id="main" class="host">
      <h1>{s.name || name}</h1>
      <dl class="facts">
        <div>
          <dt>platform</dt>
          <dd>{enumText(s.platform, "PLATFORM_")}</dd>
        </div>
        <div>
          <dt>OS</dt>
          <dd>
            {s.osName || hostInfo.osName || "unknown"} {s.osVersion || ""}
          </dd>
        </div>
        <div>
          <dt>agent</dt>
          <dd>
            {s.agentVersion || "unknown"} · {s.connected ? "connected" : "not connected"}
          </dd>
        </div>
        <div>
          <dt>last seen</dt>
          <dd>
            {timeText(s.lastSeen)} <span class="muted">{ageText(s.lastSeen)}</span>
          </dd>
        </div>
        <div>
          <dt>first seen</dt>
          <dd>{timeText(s.firstSeen)}</dd>
        </div>
        <div>
          <dt>labels</dt>
          <dd>
            <Labels labels={s.labels} />
          </dd>
        </div>
        <div>
          <dt>reported labels (not trusted)</dt>
          <dd>
            <Labels labels={s.reportedLabels} />
          </dd>
        </div>
      </dl>
      {can.report ? (
        <p>
          <button type="button" onClick={nudge}>
            Ask for a report now
          </button>{" "}
          {nudged && nudged.ok ? <span role="status">{nudged.ok}</span> : null}
          <ErrorBox error={nudged && nudged.error} />
        </p>
      ) : null}
      {(p.probeErrors || []).length ? (
        <div class="note">
          Probe errors (what they leave unknown is shown as unknown):
          <ul>
            {p.probeErrors.map((e, i) => (
              <li key={i}>
                {e.probe}: {e.code} {e.message}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      <Section title="Findings" id="findings" count={findings.data ? (findings.data.findings || []).length : null}>
        <ErrorBox error={findings.error} />
        {findings.data ? <Findings host={name} findings={findings.data.findings || []} can={can} /> : null}
      </Section>
      <div class="columns">
        <Section title="Server configuration" id="server">
          <ConfigTable config={p.server} fields={kServerFields} testid="server-config" />
        </Section>
        <Section title="Client configuration" id="client">
          <ConfigTable config={p.client} fields={kClientFields} testid="client-config" />
        </Section>
      </div>
      <Section title="Shares" id="shares" count={(p.shares || []).length}>
        <Shares shares={p.shares} />
      </Section>
      <Section title="Live sessions" id="sessions" count={(p.sessions || []).length}>
        <Sessions sessions={p.sessions} />
      </Section>
      <Section title="Network interfaces" id="nics" count={(p.nics || []).length}>
        <Nics nics={p.nics} />
      </Section>
      <Section title="Recent SMB events" id="events" count={(p.events || []).length}>
        <Events events={p.events} />
      </Section>
      <Section title="Benchmark and predicted cost" id="bench">
        <Benchmarks benchmarks={p.benchmarks} cost={mine && mine.impact ? mine.impact.cost : null} />
      </Section>
      <Section title="Waivers" id="waivers">
        <ErrorBox error={waivers.error} />
        {waivers.data ? <Waivers host={name} labels={s.labels} waivers={waivers.data.waivers} /> : null}
      </Section>
      <Section title="Change history" id="history">
        <ErrorBox error={audit.error} />
        <History status={s.changeStatus} entries={history} />
      </Section>
      <p class="muted">
        Report collected {timeText(p.collectedAt)}; report id{" "}
        <span data-testid="report-id">{host.data.lastReportId || "—"}</span>.
      </p>
    </main>
  );
}

// The browser half of console_e2e_test.sh: real chromium against the collector's console.
//   node console_e2e.mjs CONFIG_JSON CHANGE_ID_OUT
// CONFIG_JSON (written by the shell driver): base URL, host, the hostile share name, each
// person's API token and approver key file, and `smbfleetctl compliance --format=json`.
import crypto from "node:crypto";
import fs from "node:fs";
import { check, launch, newPage, shot } from "./browser.mjs";

const [configFile, changeIdOut] = process.argv.slice(2);
const config = JSON.parse(fs.readFileSync(configFile, "utf8"));
const { base, host, hostile } = config;

const results = [];
async function scenario(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push([name, null]);
    console.log(`ok - ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push([name, e]);
    console.log(`not ok - ${name}: ${e.message}`);
  }
}

const browser = await launch();
const contexts = [];
// Each person in their own browser profile. The collector's certificate is from the test CA.
async function personPage(who) {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1366, height: 850 } });
  contexts.push(context);
  const page = await newPage(context, who);
  page.setDefaultTimeout(20000);
  await page.goto(`${base}/`);
  await page.waitForURL(/\/signin/);
  await page.fill("#token", config.tokens[who]);
  await page.click("button[type=submit]");
  await page.waitForSelector("[data-testid=who-name]");
  const name = await page.textContent("[data-testid=who-name]");
  check(name === who, `signed in as ${who}, the header says ${name}`);
  return page;
}

// A request the page's own buttons would not make, sent with the page's session.
async function forge(page, rpc, body) {
  return page.evaluate(
    async ([rpc, body]) => {
      const s = JSON.parse(sessionStorage.getItem("smbfleet.session"));
      const r = await fetch(`/api/v1/${rpc}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${s.session}` },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.text() };
    },
    [rpc, body],
  );
}

function signWithKeyFile(keyFile, payloadBase64) {
  const key = crypto.createPrivateKey(fs.readFileSync(keyFile, "utf8"));
  const raw = Buffer.from(crypto.createPublicKey(key).export({ format: "jwk" }).x, "base64url");
  return {
    keyId: crypto.createHash("sha256").update(raw).digest("hex").slice(0, 16),
    signature: crypto.sign(null, Buffer.from(payloadBase64, "base64"), key).toString("base64"),
  };
}

async function approveInPage(page, who, id) {
  await page.goto(`${base}/changes/${encodeURIComponent(id)}`);
  await page.waitForSelector("[data-testid=approve]");
  await page.setInputFiles("input[type=file][name=key]", config.keys[who]);
  await page.fill("[data-testid=approve-form] input[name=comment]", `approved by ${who} in the console`);
  await page.click("[data-testid=approve]");
  await page.waitForFunction(
    (who) => [...document.querySelectorAll("[data-testid=approvals] .label")].some((e) => e.textContent.startsWith(`${who} `)),
    who,
  );
}

await scenario("an operator signs in with the certificate the browser presents", async () => {
  const context = await browser.newContext({
    ignoreHTTPSErrors: true,
    clientCertificates: [{ origin: base, certPath: config.certificate.cert, keyPath: config.certificate.key }],
  });
  contexts.push(context);
  const page = await newPage(context, "certificate");
  await page.goto(`${base}/`);
  await page.waitForURL(/\/signin/);
  await page.click("text=Use my certificate");
  await page.waitForSelector("[data-testid=who-name]");
  check((await page.textContent("[data-testid=who-name]")) === config.certificate.name, "the header names the certificate's person");
  check((await page.textContent("[data-testid=who]")).includes("via certificate"), "the header says the certificate signed in");
  await page.waitForSelector("[data-testid=by-rule] tr[data-rule]");
  check(page.problems.length === 0, page.problems.join("; "));
});

let changeId = "";
let viewer;
try {
  await scenario("the overview's numbers equal smbfleetctl compliance --format=json", async () => {
    viewer = await personPage("viewer");
    await viewer.waitForSelector("[data-testid=by-rule] tr[data-rule]");
    const shown = await viewer.$$eval("[data-testid=by-rule] tr[data-rule]", (rows) =>
      rows.map((r) => {
        const out = { ruleId: r.dataset.rule };
        for (const td of r.querySelectorAll("td[data-field]")) out[td.dataset.field] = td.textContent.trim();
        return out;
      }),
    );
    const rules = config.compliance.rules || [];
    check(rules.length > 0, "smbfleetctl compliance listed no rule");
    check(shown.length === rules.length, `the page shows ${shown.length} rules, the CLI ${rules.length}`);
    for (const r of rules) {
      const s = shown.find((x) => x.ruleId === r.ruleId);
      check(s, `rule ${r.ruleId} is not on the overview`);
      for (const k of ["compliant", "nonCompliant", "waived", "unknown", "errors", "notApplicable"]) {
        check(Number(s[k]) === (r[k] || 0), `rule ${r.ruleId} ${k}: page ${s[k]}, CLI ${r[k] || 0}`);
      }
      const pct = r.compliantPct == null ? 0 : r.compliantPct;
      const want = pct < 0 ? "n/a" : `${pct.toFixed(1)}%`;
      check(s.compliantPct === want, `rule ${r.ruleId} compliant %: page ${s.compliantPct}, CLI ${want}`);
    }
    console.log(JSON.stringify({ test: "console_browser_e2e", metric: "overview_rules_compared", value: rules.length }));
    await shot(viewer, "e2e-overview-viewer");
  });

  await scenario("a hostile share name shows as text: no dialog, no img element", async () => {
    await viewer.goto(`${base}/hosts/${encodeURIComponent(host)}`);
    // The agent reports the share on its next report; the page shows the latest.
    const deadline = Date.now() + 20000;
    let names = [];
    for (;;) {
      await viewer.waitForSelector("[data-testid=shares] .share-name");
      names = await viewer.$$eval("[data-testid=shares] .share-name", (c) => c.map((e) => e.textContent));
      if (names.some((n) => n.includes(hostile)) || Date.now() > deadline) break;
      await viewer.waitForTimeout(1000);
      await viewer.reload();
    }
    check(names.some((n) => n.includes(hostile)), `no share named ${hostile} on the page: ${JSON.stringify(names)}`);
    check((await viewer.locator("img").count()) === 0, "an img element is in the page");
    await shot(viewer, "e2e-host-hostile-share");
    check(viewer.problems.length === 0, viewer.problems.join("; "));
  });

  await scenario("the host page shows each session's measured round-trip time and the host's network interfaces", async () => {
    // The page and the API it reads, in the same moment: the held SMB2_10 session's lowest RTT
    // is the agent's sock_diag reading of smbd's socket.
    // Page and API compared on the same report: reload until the page shows the report id the
    // API answers with (a new report can land in between).
    let posture = {};
    for (let attempt = 0; ; ++attempt) {
      await viewer.goto(`${base}/hosts/${encodeURIComponent(host)}`);
      await viewer.waitForSelector("[data-testid=sessions] [data-testid=rtt]");
      const answer = await forge(viewer, "GetHost", { name: host });
      check(answer.status === 200, `GetHost answered ${answer.status}: ${answer.body}`);
      const got = JSON.parse(answer.body);
      posture = got.posture || {};
      const footer = await viewer.textContent("[data-testid=report-id]");
      if (footer === got.lastReportId) break;
      check(attempt < 5, `the page shows report ${footer}, the API ${got.lastReportId}, five times over`);
    }
    const sessions = posture.sessions || [];
    const measured = sessions.filter((s) => s.minRttUs != null);
    check(measured.length > 0, `no session of ${host} carries minRttUs: ${JSON.stringify(sessions)}`);
    const cells = await viewer.$$eval("[data-testid=sessions] tbody [data-testid=rtt]", (c) => c.map((e) => e.textContent));
    check(cells.length === sessions.length, `${cells.length} session rows for ${sessions.length} sessions`);
    sessions.forEach((s, i) => {
      if (s.minRttUs == null) {
        check(cells[i] === "unknown", `session ${i} (${s.clientAddress}) has no RTT, the page reads "${cells[i]}"`);
        return;
      }
      const m = /^(\d+\.\d+) ms$/.exec(cells[i]);
      check(m, `RTT cell of session ${i} (${s.clientAddress}) reads "${cells[i]}"`);
      const ms = Number(s.minRttUs) / 1000;
      check(Math.abs(Number(m[1]) - ms) <= 0.05 * ms + 0.0005, `session ${i} RTT: page ${m[1]} ms, API ${ms} ms`);
    });
    const nics = posture.nics || [];
    const rows = await viewer.$$eval("[data-testid=nics] tbody tr", (r) => r.map((e) => e.dataset.nic));
    check(
      JSON.stringify(rows) === JSON.stringify(nics.map((n) => n.name)),
      `NIC rows ${JSON.stringify(rows)}, the API's NICs ${JSON.stringify(nics.map((n) => n.name))}`,
    );
    console.log(JSON.stringify({ test: "console_browser_e2e", metric: "sessions_with_rtt", value: measured.length }));
    await viewer.locator("#sessions").scrollIntoViewIfNeeded();
    await shot(viewer, "e2e-host-sessions-nics");
    check(viewer.problems.length === 0, viewer.problems.join("; "));
  });

  let proposer;
  await scenario("the proposer proposes from a finding and has no approve button on it; a forged approval is refused", async () => {
    proposer = await personPage("proposer");
    await proposer.goto(`${base}/hosts/${encodeURIComponent(host)}`);
    const row = proposer.locator('[data-testid=findings] tr[data-rule="classified-shares-encrypted"]').first();
    await row.locator("button", { hasText: "Propose fix" }).click();
    await proposer.waitForURL(/\/changes\/[^/]+$/);
    changeId = decodeURIComponent(new URL(proposer.url()).pathname.split("/").pop());
    fs.writeFileSync(changeIdOut, changeId);
    console.log(`change ${changeId}`);
    await proposer.waitForSelector("[data-testid=change-state]");
    check((await proposer.textContent("[data-testid=change-state]")) === "proposed", "the new change is proposed");
    check((await proposer.locator("[data-testid=approve]").count()) === 0, "the proposer sees an approve button on their own change");
    await shot(proposer, "e2e-change-proposer");
    const got = await forge(proposer, "GetChange", { id: changeId });
    const payload = JSON.parse(got.body).approvalPayload;
    check(payload, "GetChange has no approval payload for a proposed change");
    const sig = signWithKeyFile(config.keys.proposer, payload);
    const forged = await forge(proposer, "ApproveChange", { id: changeId, signature: { approver: "proposer", ...sig } });
    check([403, 409].includes(forged.status), `the proposer's own approval answered ${forged.status}: ${forged.body}`);
    console.log(`own approval refused: ${forged.status} ${forged.body}`);
  });

  await scenario("a viewer has no approve button; a forged approval with the viewer's session is 403", async () => {
    check(changeId, "no change was proposed");
    await viewer.goto(`${base}/changes/${encodeURIComponent(changeId)}`);
    await viewer.waitForSelector("[data-testid=change-state]");
    await viewer.waitForSelector("[data-testid=change-hosts]");
    check((await viewer.locator("[data-testid=approve]").count()) === 0, "the viewer sees an approve button");
    check((await viewer.locator("[data-testid=actions] button").count()) === 0, "the viewer sees action buttons");
    const forged = await forge(viewer, "ApproveChange", { id: changeId, comment: "forged" });
    check(forged.status === 403, `a forged approval by the viewer answered ${forged.status}: ${forged.body}`);
    check(JSON.parse(forged.body).code === "PERMISSION_DENIED", `the refusal's code: ${forged.body}`);
    await shot(viewer, "e2e-change-viewer");
  });

  await scenario("who would break: the rule's readiness names the clients the host would refuse; host filters in the URL reach the server", async () => {
    await viewer.goto(`${base}/readiness?rule=classified-shares-encrypted`);
    await viewer.waitForSelector("[data-testid=requirement]");
    const rows = await viewer.$$eval("[data-testid=readiness] tbody tr", (rs) => rs.map((r) => r.textContent));
    check(rows.some((t) => t.includes(host)), `no client that ${host} would refuse on the readiness page: ${JSON.stringify(rows)}`);
    await shot(viewer, "e2e-readiness");
    await viewer.goto(`${base}/hosts?q=${encodeURIComponent(host.slice(3))}&failing=classified-shares-encrypted`);
    await viewer.waitForSelector("[data-testid=hosts-total]");
    const total = await viewer.textContent("[data-testid=hosts-total]");
    check(total.startsWith("1 hosts match"), `the filtered hosts page says: ${total}`);
    const names = await viewer.$$eval("[data-testid=hosts] tbody th[scope=row]", (c) => c.map((e) => e.textContent.trim()));
    check(names.length === 1 && names[0] === host, `the filtered hosts page lists ${JSON.stringify(names)}`);
    await viewer.goto(`${base}/hosts?q=no-such-host`);
    await viewer.waitForSelector("[data-testid=hosts-total]");
    check((await viewer.locator("[data-testid=hosts] tbody tr").count()) === 0, "a filter that matches nothing lists hosts");
    check(viewer.problems.length === 0, viewer.problems.join("; "));
  });

  await scenario("who would break, client side: a client rule's readiness names the server the other host's client talks to", async () => {
    await viewer.goto(`${base}/readiness?rule=client-signing-required`);
    await viewer.waitForSelector("[data-testid=readiness-servers] tbody tr");
    const rows = await viewer.$$eval("[data-testid=readiness-servers] tbody tr", (rs) => rs.map((r) => r.textContent));
    check(
      rows.some((t) => t.includes("oldnas") && t.includes(config.clientHost) && t.includes("unsigned connection")),
      `no oldnas row naming ${config.clientHost}: ${JSON.stringify(rows)}`,
    );
    const requirement = await viewer.textContent("[data-testid=requirement]");
    check(requirement.includes("servers would cut our clients off"), `the requirement line says: ${requirement}`);
    check((await viewer.locator("[data-testid=readiness]").count()) === 0, "a client-side rule shows a clients table");
    await shot(viewer, "e2e-readiness-servers");
    check(viewer.problems.length === 0, viewer.problems.join("; "));
  });

  await scenario("two approvers approve in their browsers; the page follows the rollout to applied", async () => {
    check(changeId, "no change was proposed");
    const a = await personPage("approver-a");
    await approveInPage(a, "approver-a", changeId);
    check((await a.textContent("[data-testid=change-state]")) === "proposed", "one approval of two moved the change on");
    await shot(a, "e2e-change-approved-once");
    const b = await personPage("approver-b");
    const t0 = Date.now();
    await approveInPage(b, "approver-b", changeId);
    // No reload from here: the page polls while the change is moving.
    await b.waitForFunction(
      (host) => document.querySelector(`[data-testid=change-hosts] tr[data-host="${host}"] [data-testid=host-state]`)?.textContent === "applied",
      host,
      { timeout: 60000 },
    );
    console.log(JSON.stringify({ test: "console_browser_e2e", metric: "approval_to_applied_seen_ms", value: Date.now() - t0 }));
    await shot(b, "e2e-change-applied");
    for (const p of [a, b]) check(p.problems.length === 0, p.problems.join("; "));
  });
} finally {
  for (const c of contexts) await c.close().catch(() => {});
  await browser.close();
}

const failed = results.filter(([, e]) => e).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

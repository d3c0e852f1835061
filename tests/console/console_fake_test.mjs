// The console's pages in a real headless chromium against a fake AdminService API (no
// collector): the built bundle served with the collector's CSP, canned answers that carry
// hostile host-reported strings, and an ApproveChange that verifies the page's Ed25519
// signature the way the collector does. The end-to-end test (console_e2e_test.sh) runs the
// same pages against a real collector, database and Samba host.
//   node console_fake_test.mjs BUNDLE_DIR
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { check, launch, newPage, shot } from "./browser.mjs";

const bundle = process.argv[2];
if (!bundle || !fs.existsSync(path.join(bundle, "index.html"))) {
  console.error("usage: node console_fake_test.mjs BUNDLE_DIR (console/build.sh's output)");
  process.exit(2);
}

const kHostile = "<img src=x onerror=alert(1)>";
const kCsp =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

// approver-a's key, as `smbfleetctl keys init` writes it (PKCS#8 PEM), and its registration.
const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
const keyPem = privateKey.export({ type: "pkcs8", format: "pem" });
const publicRaw = Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url");
const keyId = crypto.createHash("sha256").update(publicRaw).digest("hex").slice(0, 16);

const people = {
  sft_viewer: { name: "viewer", kind: "operator", roles: ["viewer"], credential: "token" },
  sft_proposer: { name: "proposer", kind: "operator", roles: ["proposer"], credential: "token" },
  sft_approver: { name: "approver-a", kind: "operator", roles: ["approver"], credential: "token" },
  sft_approver_b: { name: "approver-b", kind: "operator", roles: ["approver"], credential: "token" },
};
const sessions = new Map();
const payload = Buffer.from("approval payload of CHG-1 v1");
const change = {
  id: "CHG-1",
  state: "CHANGE_STATE_PROPOSED",
  version: "1",
  source: "CHANGE_SOURCE_HOSTS",
  reason: kHostile,
  proposedBy: "proposer",
  proposedAt: "2026-12-01T10:00:00Z",
  approvalsRequired: 2,
  approvals: [],
  contentHash: "ab".repeat(32),
  impact: { hosts: 1, hostsWithImpact: 1, refusedClients: 1 },
  hosts: [
    {
      host: "fs01",
      state: "HOST_CHANGE_STATE_PENDING",
      wave: -1,
      steps: [{ setting: "server.requireSigning", expectedCurrent: "false", value: "true" }],
      impact: {
        refusedClients: 1,
        clients: [{ clientName: kHostile, clientAddress: "10.0.0.9", reason: "unsigned session" }],
        cost: { known: true, summary: "signing AES_128_GMAC: 3% less throughput" },
      },
    },
  ],
};
const verified = [];
const seen = []; // [rpc, request] of every API call
let overviewImplemented = true;
let getChangeCalls = 0;

function answer(res, status, body) {
  res.writeHead(status, { "Content-Type": "application/json", "Cache-Control": "no-store" });
  res.end(JSON.stringify(body));
}

const rpcs = {
  GetFleetOverview: () => ({
    policyName: "baseline",
    policyVersion: "3",
    hosts: 1,
    byRule: [
      { ruleId: "smb.signing.required", compliant: 0, nonCompliant: 1, compliantPct: 0 },
      { ruleId: "smb.smb1.disabled", compliant: 1, compliantPct: 100 },
    ],
    byClassification: [{ key: "confidential", compliant: 1, nonCompliant: 1, compliantPct: 50 }],
    byLabel: [{ key: "site=lab", compliant: 1, nonCompliant: 1, compliantPct: 50 }],
    trend: [
      { day: "2026-11-30", compliantPct: 40 },
      { day: "2026-12-01", compliantPct: 50 },
    ],
    failingLongest: [{ name: "fs01", since: "2026-11-30T00:00:00Z", count: 1 }],
    staleCount: 0,
    driftCount: 0,
    encryption: [{ classification: "confidential", shares: 1, encrypted: 0, encryptedPct: 0 }],
    sessions: { sessions: 1, unsignedSessions: 1, byDialect: { DIALECT_SMB_2_1: 1 } },
    generatedAt: "2026-12-01T12:00:00Z",
  }),
  ListHosts: (req) => ({
    hosts: [{ name: req.pageToken ? "fs02" : "fs01", platform: "PLATFORM_SAMBA", labels: { site: "lab" }, shares: 1 }],
    total: 2,
    nextPageToken: req.pageToken ? "" : "after-fs01",
  }),
  GetCompliance: () => ({
    policyName: "baseline",
    policyVersion: "3",
    rules: [{ ruleId: "smb.signing.required", compliant: 2, nonCompliant: 3, waived: 1, compliantPct: 50 }],
  }),
  GetHost: (req) => {
    if (req.name !== "fs01") return [404, { code: "NOT_FOUND", message: `host ${req.name} not found` }];
    return {
      summary: { name: "fs01", platform: "PLATFORM_SAMBA", labels: { site: "lab" }, reportedLabels: { note: kHostile } },
      posture: {
        server: { requireSigning: false, smb1Enabled: false, raw: { "server signing": kHostile } },
        shares: [{ name: kHostile, path: "/srv/x", classification: "confidential", classificationRule: "names" }],
        sessions: [{ clientAddress: "10.0.0.9", clientName: kHostile, user: kHostile, dialect: "DIALECT_SMB_2_1", signing: "PROTECTION_NONE" }],
        events: [{ eventId: 3021, time: "2026-12-01T09:00:00Z", message: kHostile, kind: "client_no_signing" }],
      },
    };
  },
  ListFindings: () => ({
    findings: [{ host: "fs01", ruleId: "smb.signing.required", message: kHostile, severity: "SEVERITY_HIGH", evidence: [{ field: "server.requireSigning", observed: "false", expected: "true" }] }],
  }),
  ListWaivers: () => ({}),
  ListAudit: () => ({ entries: [{ seq: "1", action: "proposed", actor: "proposer", changeId: "CHG-1", reason: kHostile }] }),
  ListChanges: () => ({ changes: [{ ...change, hosts: [] }] }),
  GetChange: (req) => {
    if (req.id !== "CHG-1") return [404, { code: "NOT_FOUND", message: "no such change" }];
    if (change.state === "CHANGE_STATE_ROLLING_OUT" && ++getChangeCalls >= 3) {
      change.hosts[0].state = getChangeCalls >= 4 ? "HOST_CHANGE_STATE_APPLIED" : "HOST_CHANGE_STATE_DISPATCHED";
      if (getChangeCalls >= 4) change.state = "CHANGE_STATE_COMPLETED";
    }
    return { change, approvalPayload: change.state === "CHANGE_STATE_PROPOSED" ? payload.toString("base64") : "" };
  },
  ApproveChange: (req, who) => {
    if (!who.roles.includes("approver")) return [403, { code: "PERMISSION_DENIED", message: "approve-change needs the approver role" }];
    if (who.name === change.proposedBy) return [409, { code: "FAILED_PRECONDITION", message: "nobody approves their own change" }];
    const sig = req.signature || {};
    if (sig.approver !== who.name || sig.keyId !== keyId) {
      // Both fake approvers share one registered key: the fake checks the signature, not people.
      return [400, { code: "INVALID_ARGUMENT", message: `signature: key ${sig.keyId} is not ${who.name}'s` }];
    }
    if (!crypto.verify(null, payload, publicKey, Buffer.from(sig.signature || "", "base64"))) {
      return [400, { code: "INVALID_ARGUMENT", message: "signature: does not verify" }];
    }
    verified.push(sig);
    change.approvals.push({ approver: who.name, keyId, at: new Date().toISOString() });
    if (change.approvals.length === 2) {
      change.state = "CHANGE_STATE_ROLLING_OUT";
      change.waveCount = 1;
      change.hosts[0].wave = 0;
    }
    return { change, approvals: change.approvals.length, approvalsRequired: 2 };
  },
};

const server = http.createServer(async (req, res) => {
  res.setHeader("Content-Security-Policy", kCsp);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
  const url = new URL(req.url, "http://x");
  if (req.method === "POST" && url.pathname.startsWith("/api/v1/")) {
    const rpc = url.pathname.slice(8);
    let body = "";
    for await (const chunk of req) body += chunk;
    if (req.headers["content-type"] !== "application/json") {
      return answer(res, 415, { code: "INVALID_ARGUMENT", message: "Content-Type must be application/json" });
    }
    const bearer = (req.headers.authorization || "").replace(/^Bearer /, "");
    if (rpc === "SignIn") {
      const who = people[bearer];
      if (!who) return answer(res, 401, { code: "UNAUTHENTICATED", message: "no valid credential" });
      const id = `sfs_${crypto.randomBytes(8).toString("hex")}`;
      sessions.set(id, who);
      return answer(res, 200, { session: id, expiresAt: "2099-01-01T00:00:00Z", idleTimeoutSeconds: 1800, who });
    }
    const who = sessions.get(bearer);
    if (!who) return answer(res, 401, { code: "UNAUTHENTICATED", message: "session expired" });
    if (rpc === "SignOut") {
      sessions.delete(bearer);
      return answer(res, 200, {});
    }
    const request = JSON.parse(body || "{}");
    seen.push([rpc, request]);
    if (rpc === "GetFleetOverview" && !overviewImplemented) {
      return answer(res, 501, { code: "UNIMPLEMENTED", message: "GetFleetOverview is not implemented" });
    }
    const handler = rpcs[rpc];
    if (!handler) return answer(res, 501, { code: "UNIMPLEMENTED", message: `${rpc} is not in the fake` });
    const out = handler(request, who);
    return Array.isArray(out) ? answer(res, out[0], out[1]) : answer(res, 200, out);
  }
  if (req.method !== "GET") return answer(res, 405, { code: "INVALID_ARGUMENT", message: "method" });
  if (url.pathname.startsWith("/assets/")) {
    const file = path.join(bundle, path.normalize(url.pathname).replace(/^\/+/, ""));
    if (!file.startsWith(path.resolve(bundle)) || !fs.existsSync(file)) {
      res.writeHead(404);
      return res.end();
    }
    const type = file.endsWith(".js") ? "text/javascript" : file.endsWith(".css") ? "text/css" : "application/octet-stream";
    res.writeHead(200, { "Content-Type": type });
    return res.end(fs.readFileSync(file));
  }
  res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
  res.end(fs.readFileSync(path.join(bundle, "index.html")));
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
// 127.0.0.1 is a secure context for the browser, so WebCrypto signs as under HTTPS.
const base = `http://127.0.0.1:${server.address().port}`;

async function signIn(page, token) {
  await page.goto(`${base}/`);
  await page.waitForURL(/\/signin/);
  await page.fill("#token", token);
  await page.click("button[type=submit]");
  await page.waitForSelector("[data-testid=who-name]");
}

const forge = (page, rpc, body) =>
  page.evaluate(
    async ([rpc, body]) => {
      const s = JSON.parse(sessionStorage.getItem("smbfleet.session"));
      const r = await fetch(`/api/v1/${rpc}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${s.session}` },
        body: JSON.stringify(body),
      });
      return r.status;
    },
    [rpc, body],
  );

const results = [];
async function scenario(name, fn) {
  try {
    await fn();
    results.push([name, null]);
    console.log(`ok - ${name}`);
  } catch (e) {
    results.push([name, e]);
    console.log(`not ok - ${name}: ${e.message}`);
  }
}

const browser = await launch();
try {
  await scenario("viewer: overview, hostile strings as text, no approve button, forged approve 403", async () => {
    const context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    const page = await newPage(context, "viewer");
    await signIn(page, "sft_viewer");
    check((await page.textContent("[data-testid=who-roles]")) === "viewer", "the header names the viewer role");
    await page.waitForSelector("[data-testid=by-rule] tr[data-rule]");
    check((await page.locator("[data-testid=by-rule] tr[data-rule]").count()) === 2, "two rules on the overview");
    const nc = await page.textContent('[data-testid=by-rule] tr[data-rule="smb.signing.required"] [data-field=nonCompliant]');
    check(nc === "1", `non-compliant of smb.signing.required is ${nc}`);
    await shot(page, "fake-overview");
    await page.goto(`${base}/hosts/fs01`);
    await page.waitForSelector("[data-testid=shares] .share-name");
    const share = await page.textContent("[data-testid=shares] .share-name");
    check(share.includes(kHostile), `the hostile share name shows as text (got ${share})`);
    check((await page.locator("main img").count()) === 0, "no img element in the page");
    check((await page.locator("[data-setting=encryptData] .unknown").count()) === 1, "unset encryptData shows as unknown");
    await shot(page, "fake-host");
    await page.goto(`${base}/changes/CHG-1`);
    await page.waitForSelector("[data-testid=change-state]");
    check((await page.locator("[data-testid=approve]").count()) === 0, "a viewer sees no approve button");
    check((await page.locator("main img").count()) === 0, "no img element on the change page");
    check((await forge(page, "ApproveChange", { id: "CHG-1" })) === 403, "a forged approve as viewer is refused with 403");
    await shot(page, "fake-change-viewer");
    check(page.problems.length === 0, page.problems.join("; "));
    await context.close();
  });

  await scenario("proposer: no approve button on their own change, forged approve refused", async () => {
    const context = await browser.newContext();
    const page = await newPage(context, "proposer");
    await signIn(page, "sft_proposer");
    await page.goto(`${base}/changes/CHG-1`);
    await page.waitForSelector("[data-testid=change-state]");
    check((await page.locator("[data-testid=approve]").count()) === 0, "the proposer sees no approve button");
    check((await forge(page, "ApproveChange", { id: "CHG-1" })) === 403, "a forged approve by a proposer is refused");
    check(page.problems.length === 0, page.problems.join("; "));
    await context.close();
  });

  await scenario("approver: signs the approval payload in the page with the key file", async () => {
    const context = await browser.newContext();
    const page = await newPage(context, "approver");
    await signIn(page, "sft_approver");
    await page.goto(`${base}/changes/CHG-1`);
    await page.waitForSelector("[data-testid=approve]");
    await page.setInputFiles("input[type=file][name=key]", { name: "approver-a.key", mimeType: "text/plain", buffer: Buffer.from(keyPem) });
    await page.click("[data-testid=approve]");
    await page.waitForFunction(() => document.querySelector("[data-testid=approvals]")?.textContent.startsWith("1 of 2"));
    check(verified.length === 1 && verified[0].keyId === keyId, "the fake verified one signature by approver-a's key");
    check((await page.locator("[data-testid=approve]").count()) === 0, "no second approve button for the same approver");
    await shot(page, "fake-change-approved");
    check(page.problems.length === 0, page.problems.join("; "));
    await context.close();
  });

  await scenario("a wrong key file is refused with the reason", async () => {
    const context = await browser.newContext();
    const page = await newPage(context, "approver-bad-key");
    change.approvals = [];
    await signIn(page, "sft_approver");
    await page.goto(`${base}/changes/CHG-1`);
    await page.waitForSelector("[data-testid=approve]");
    await page.setInputFiles("input[type=file][name=key]", { name: "x.key", mimeType: "text/plain", buffer: Buffer.from("not a key") });
    await page.click("[data-testid=approve]");
    await page.waitForSelector("[data-testid=approve-form] [data-testid=error]");
    const text = await page.textContent("[data-testid=approve-form] [data-testid=error]");
    check(/PEM private key/.test(text), `the error names the key file's problem (got ${text})`);
    check(verified.length === 1, "nothing was approved with a bad key");
    await context.close();
  });

  await scenario("an expired session goes back to sign-in and returns to the page", async () => {
    const context = await browser.newContext();
    const page = await newPage(context, "expired");
    await signIn(page, "sft_viewer");
    sessions.clear();
    await page.goto(`${base}/hosts?q=fs`);
    await page.waitForURL(/\/signin\?next=/);
    await page.fill("#token", "sft_viewer");
    await page.click("button[type=submit]");
    await page.waitForURL(/\/hosts\?q=fs$/);
    await page.waitForSelector("[data-testid=hosts]");
    await context.close();
  });

  await scenario("filters and paging live in the URL and reach ListHosts", async () => {
    const context = await browser.newContext();
    const page = await newPage(context, "hosts");
    await signIn(page, "sft_viewer");
    await page.goto(`${base}/hosts?q=fs&label=site=lab&platform=samba&failing=smb.signing.required`);
    await page.waitForSelector("[data-testid=hosts]");
    let req = seen.filter(([r]) => r === "ListHosts").pop()[1];
    check(req.query === "fs" && req.labels.site === "lab" && req.platform === "PLATFORM_SAMBA", `ListHosts got ${JSON.stringify(req)}`);
    check(req.failingRule === "smb.signing.required" && !req.pageToken, `ListHosts got ${JSON.stringify(req)}`);
    check((await page.textContent("[data-testid=hosts-total]")).startsWith("2 hosts match"), "the total is shown");
    check((await page.inputValue("input[name=q]")) === "fs", "the search box shows the URL's query");
    await page.click("text=Next page");
    await page.waitForURL(/page=after-fs01/);
    await page.waitForSelector("text=fs02");
    req = seen.filter(([r]) => r === "ListHosts").pop()[1];
    check(req.pageToken === "after-fs01" && req.query === "fs", `the next page asked ${JSON.stringify(req)}`);
    await page.fill("input[name=q]", "");
    await page.fill("input[name=os]", "Debian");
    await page.click("form[role=search] button[type=submit]");
    await page.waitForURL(/\/hosts\?label=site%3Dlab&os=Debian&platform=samba&failing=/);
    await page.goBack();
    await page.waitForURL(/page=after-fs01/);
    await context.close();
  });

  await scenario("without GetFleetOverview the overview shows GetCompliance", async () => {
    overviewImplemented = false;
    const context = await browser.newContext();
    const page = await newPage(context, "fallback");
    await signIn(page, "sft_viewer");
    await page.waitForSelector('[data-testid=by-rule] tr[data-rule="smb.signing.required"]');
    const nc = await page.textContent('[data-testid=by-rule] tr[data-rule="smb.signing.required"] [data-field=nonCompliant]');
    check(nc === "3", `non-compliant from GetCompliance is 3, the page says ${nc}`);
    check(page.problems.length === 0, page.problems.join("; "));
    overviewImplemented = true;
    await context.close();
  });

  await scenario("the second approval starts the rollout; the page polls it to applied", async () => {
    const context = await browser.newContext();
    const page = await newPage(context, "approver-b");
    change.approvals = [{ approver: "approver-a", keyId, at: "2026-12-01T11:00:00Z" }];
    await signIn(page, "sft_approver_b");
    await page.goto(`${base}/changes/CHG-1`);
    await page.waitForSelector("[data-testid=approve]");
    await page.setInputFiles("input[type=file][name=key]", { name: "b.key", mimeType: "text/plain", buffer: Buffer.from(keyPem) });
    await page.click("[data-testid=approve]");
    await page.waitForFunction(() => document.querySelector("[data-testid=host-state]")?.textContent === "applied", null, { timeout: 20000 });
    check((await page.textContent("[data-testid=change-state]")) === "completed", "the change shows completed");
    await shot(page, "fake-change-applied");
    check(page.problems.length === 0, page.problems.join("; "));
    await context.close();
  });
} finally {
  await browser.close();
  server.close();
}

const failed = results.filter(([, e]) => e).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

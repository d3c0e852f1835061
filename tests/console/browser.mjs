// What the console's browser tests share: Debian's chromium driven by playwright-core (from
// console/node_modules, installed by console/build.sh), headless, and the checks every page
// must pass (no CSP violation, no script error, no dialog).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, "../..");
const require = createRequire(path.join(repoRoot, "console/package.json"));
const { chromium } = require("playwright-core");

export function chromiumPath() {
  for (const p of [process.env.SMBFLEET_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    if (p && fs.existsSync(p)) return p;
  }
  throw new Error("chromium is missing: bash deploy/setup.sh --tests installs it (or set SMBFLEET_CHROMIUM)");
}

export async function launch() {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Root in a container has no user namespaces for the sandbox.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
}

// A page that records what must never happen: a dialog (an injected script ran), a CSP
// violation, an uncaught error. `problems` lists them; dialogs are dismissed.
export async function newPage(context, name) {
  const page = await context.newPage();
  page.problems = [];
  page.on("dialog", async (d) => {
    page.problems.push(`${name}: a dialog opened (${d.type()}: ${d.message()})`);
    await d.dismiss();
  });
  page.on("pageerror", (e) => page.problems.push(`${name}: page error: ${e.message}`));
  page.on("console", (m) => {
    const text = m.text();
    if (/Content Security Policy|Refused to (load|execute|apply)/i.test(text)) {
      page.problems.push(`${name}: CSP: ${text}`);
    }
  });
  return page;
}

export function artifactsDir() {
  const dir = process.env.SMBFLEET_ARTIFACTS || path.join(process.cwd(), "test-artifacts/console");
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

export async function shot(page, name) {
  const file = path.join(artifactsDir(), `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

export function check(cond, what) {
  if (!cond) throw new Error(what);
}

// The bundle: one minified script and one stylesheet, both served from /assets/.
import { build } from "esbuild";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error("esbuild.mjs: usage: node esbuild.mjs OUTDIR");
  process.exit(2);
}

await build({
  entryPoints: { app: path.join(here, "src/main.jsx") },
  bundle: true,
  minify: true,
  sourcemap: false,
  format: "iife",
  target: ["chrome110", "firefox115", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: path.join(out, "assets"),
  // The stylesheet imports (uPlot's and ours) become assets/app.css.
  loader: { ".css": "css" },
  legalComments: "none",
  logLevel: "warning",
});

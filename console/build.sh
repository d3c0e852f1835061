#!/usr/bin/env bash
# Builds the console's bundle into OUTDIR: index.html and assets/app.js, assets/app.css.
#   bash console/build.sh OUTDIR
# Installs the locked npm packages first when node_modules is missing or older than
# package-lock.json. No inline script or style anywhere (the collector's CSP forbids them), no
# CDN, no external font: everything the page loads is in OUTDIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
command -v npm >/dev/null || { echo "build.sh: npm is missing (deploy/setup.sh installs nodejs and npm)" >&2; exit 1; }

# One npm ci at a time: the collector's build and the browser tests may run this together.
exec 9>"$here/.build.lock"
flock 9
stamp=$here/node_modules/.package-lock.json
if [[ ! -f $stamp || $here/package-lock.json -nt $stamp ]]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

mkdir -p "$out/assets"
out=$(cd "$out" && pwd)
node "$here/esbuild.mjs" "$out"
# The collector caches /assets/ for a day: index.html names each file with its content's hash,
# so a new build is fetched at once (the query is not part of the file's path).
js=$(sha256sum "$out/assets/app.js" | cut -c1-16)
css=$(sha256sum "$out/assets/app.css" | cut -c1-16)
sed -e "s#/assets/app.js\"#/assets/app.js?v=$js\"#" -e "s#/assets/app.css\"#/assets/app.css?v=$css\"#" \
  "$here/index.html" >"$out/index.html"

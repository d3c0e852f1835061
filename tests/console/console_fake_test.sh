#!/usr/bin/env bash
# The console's pages in headless chromium against a fake API (console_fake_test.mjs).
#   console_fake_test.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:?usage: console_fake_test.sh BUILD_DIR}
dist=$build/console-test/fake-dist
bash "$root/console/build.sh" "$dist"
export SMBFLEET_ARTIFACTS=$build/test-artifacts/console
exec node "$here/console_fake_test.mjs" "$dist"

#!/usr/bin/env bash
# The static gates of deploy/test.sh: clang-format over every tracked C++ file, then clang-tidy
# (.clang-tidy) over a build's compile_commands.json. Exits non-zero when either fails.
#
#   deploy/lint.sh                format check only
#   deploy/lint.sh BUILD_DIR      format check, then clang-tidy over that (built) tree
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

# Folders clang-tidy checks, and among them the ones that are clean: a finding in a TIDY_STRICT
# folder fails the run, a finding elsewhere is printed as a known debt. Add a folder here once
# its findings are fixed.
TIDY_DIRS=(agent cli collector common policy tests)
TIDY_STRICT=(agent/bench cli common policy tests/bench tests/netpath tests/policy)

status=0

echo "== format (clang-format)"
format=$(command -v clang-format-14 || command -v clang-format)
mapfile -d '' files < <(git -C "$root" ls-files -z -- '*.cc' '*.h')
if (cd "$root" && "$format" --dry-run -Werror "${files[@]}"); then
  echo "format: ok (${#files[@]} files)"
else
  echo "format: FAILED (fix with: clang-format -i FILE)"
  status=1
fi

if [[ $# -ge 1 ]]; then
  echo "== clang-tidy"
  # -Wno-error: clang's own warnings are findings like any other, classified by folder below.
  # -Wthread-safety: checks ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED, which GCC ignores.
  if ! python3 "$here/tidy.py" --root "$root" --build "$1" -j 2 \
      --dirs "${TIDY_DIRS[@]}" --strict "${TIDY_STRICT[@]}" \
      --extra-arg=-Wno-error --extra-arg=-Wthread-safety; then
    echo "clang-tidy: FAILED"
    status=1
  fi
fi
exit $status

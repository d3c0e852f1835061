#!/usr/bin/env python3
"""clang-tidy over a build's compile_commands.json, with a results cache (run by deploy/lint.sh).

The whole tree takes longer than CI should spend on it, so each translation unit's output is
cached under ~/.cache/smbfleet/clang-tidy, keyed by everything that can change it: the contents
of the file and of every project header it includes (from `ninja -t deps`), the path, size and
mtime of each system header, the compile command, .clang-tidy, the clang-tidy version and this
script. A fresh machine runs the whole tree once; later runs only redo what changed. Paths are
keyed relative to the checkout, so every clone on the machine shares the cache.

A finding fails the run when it is in one of the --strict folders; findings elsewhere are
printed as known debts and do not fail.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

DIAG = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<kind>warning|error): "
                  r"(?P<msg>.*?)(?: \[(?P<check>[\w.,-]+)\])?$")
ROOT_TOKEN = "@ROOT@"
CACHE_DAYS = 30


def sha(data):
    return hashlib.sha256(data).hexdigest()


def file_digest(path, memo):
    if path not in memo:
        try:
            with open(path, "rb") as f:
                memo[path] = sha(f.read())
        except OSError:
            memo[path] = "missing"
    return memo[path]


def ninja_deps(build):
    """Object file (relative to the build dir) -> absolute paths of everything it included."""
    try:
        text = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    deps, current = {}, None
    for line in text.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            current = line.split(":", 1)[0]
            deps[current] = [] if "(VALID)" in line else None
        elif current is not None and deps[current] is not None:
            deps[current].append(os.path.normpath(os.path.join(build, line.strip())))
    return deps


def object_of(command):
    args = shlex.split(command)
    return args[args.index("-o") + 1] if "-o" in args else None


def cache_key(entry, deps, root, build, base, memo):
    """None when the included files are unknown (never built): such a unit always runs."""
    included = deps.get(object_of(entry["command"]))
    if not included:
        return None
    h = hashlib.sha256(base.encode())
    h.update(entry["command"].replace(root, ROOT_TOKEN).encode())
    lines = []
    for path in set(included) | {entry["file"]}:
        if path.startswith(root + os.sep):
            lines.append(f"{path.replace(root, ROOT_TOKEN)} {file_digest(path, memo)}")
        else:
            try:
                st = os.stat(path)
                lines.append(f"{path} {st.st_size} {st.st_mtime_ns}")
            except OSError:
                lines.append(f"{path} missing")
    # Sorted after rooting: the checkout's path must not change the order.
    h.update("\n".join(sorted(lines)).encode())
    return h.hexdigest()


def run_tidy(tidy, build, entry, header_filter, extra):
    cmd = [tidy, "-p", build, "--quiet", f"--header-filter={header_filter}"]
    cmd += [f"--extra-arg={a}" for a in extra] + [entry["file"]]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--strict", nargs="*", default=[], help="folders whose findings fail the run")
    ap.add_argument("--dirs", nargs="+", required=True, help="folders whose files are checked")
    ap.add_argument("--extra-arg", action="append", default=[])
    ap.add_argument("--tidy", default="clang-tidy-14")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--cache", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "smbfleet", "clang-tidy"))
    args = ap.parse_args()
    root, build = os.path.realpath(args.root), os.path.realpath(args.build)

    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    prefixes = tuple(os.path.join(root, d) + os.sep for d in args.dirs)
    entries = [e for e in entries
               if e["file"].startswith(prefixes) and not e["file"].startswith(build + os.sep)]
    header_filter = "^" + re.escape(root) + "/(" + "|".join(map(re.escape, args.dirs)) + ")/"

    version = subprocess.run([args.tidy, "--version"], capture_output=True, text=True).stdout
    with open(os.path.join(root, ".clang-tidy"), "rb") as f:
        config = f.read()
    with open(os.path.abspath(__file__), "rb") as f:
        script = f.read()
    # The folders, not header_filter: re.escape() changes the root, so it would not be replaced.
    base = sha(version.encode() + config + script + repr(args.extra_arg).encode() +
               repr(args.dirs).encode())

    deps, memo = ninja_deps(build), {}
    os.makedirs(args.cache, exist_ok=True)
    results, todo = {}, []
    for e in entries:
        key = cache_key(e, deps, root, build, base, memo)
        path = os.path.join(args.cache, key) if key else None
        if path and os.path.exists(path):
            with open(path) as f:
                results[e["file"]] = json.load(f)
            os.utime(path)
        else:
            todo.append((e, path))

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        futures = {pool.submit(run_tidy, args.tidy, build, e, header_filter, args.extra_arg): (e, p)
                   for e, p in todo}
        for fut in concurrent.futures.as_completed(futures):
            e, path = futures[fut]
            rc, out, err = fut.result()
            result = {"rc": rc, "out": out.replace(root, ROOT_TOKEN),
                      "err": err.replace(root, ROOT_TOKEN) if rc else ""}
            results[e["file"]] = result
            # A run that failed without a diagnostic (crash, bad command line) is not kept.
            if path and (rc == 0 or any(DIAG.match(l) for l in out.splitlines())):
                with open(path + ".tmp", "w") as f:
                    json.dump(result, f)
                os.replace(path + ".tmp", path)
    print(f"clang-tidy: {len(entries)} files, {len(entries) - len(todo)} from cache, "
          f"{len(todo)} run in {time.monotonic() - started:.0f} s")

    now = time.time()
    for name in os.listdir(args.cache):
        p = os.path.join(args.cache, name)
        if now - os.path.getmtime(p) > CACHE_DAYS * 86400:
            os.remove(p)

    strict = tuple(d.rstrip("/") + "/" for d in args.strict)
    findings, failed = {}, False
    for file, r in sorted(results.items()):
        for line in r["out"].replace(ROOT_TOKEN, root).splitlines():
            m = DIAG.match(line)
            if not m:
                continue
            rel = os.path.relpath(os.path.realpath(m["path"]), root)
            findings[(rel, int(m["line"]), int(m["col"]), m["msg"])] = m["check"] or m["kind"]
        if r["rc"] != 0 and not any(DIAG.match(l) for l in r["out"].splitlines()):
            print(f"{os.path.relpath(file, root)}: clang-tidy exited {r['rc']} without a finding:\n"
                  f"{r['err'].replace(ROOT_TOKEN, root)}")
            failed = True
    known = 0
    for (rel, line, col, msg), check in sorted(findings.items()):
        if rel.startswith(strict):
            print(f"{rel}:{line}:{col}: {msg} [{check}]")
            failed = True
        else:
            print(f"known: {rel}:{line}:{col}: {msg} [{check}]")
            known += 1
    print(f"clang-tidy: {len(findings) - known} findings in checked folders "
          f"({' '.join(args.strict)}), {known} known elsewhere")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

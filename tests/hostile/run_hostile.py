#!/usr/bin/env python3
"""Runs coda on the hostile-input corpus (tests/hostile/cases.txt) and checks each case's exit
status and first line of output exactly.

    python3 tests/hostile/run_hostile.py CODA [--only NAME] [--record]

Run from the repository top (CTest does). A case in cases.txt:

    [name]                 the case's name (one line of a report)
    setup: KIND [ARG]      optional: what to prepare in the case's scratch folder {tmp} (below)
    run: ARGS              coda's arguments; {tmp} is the scratch folder, {f} the prepared input
    exit: N                the exit status expected
    first: LINE            the first line expected: of stderr when coda wrote to it, else of
                           stdout; {any} matches any text (a process id, a path in /tmp)

Setups: mode000 FILE (a copy of FILE that nobody may read; run as the user nobody when this
runs as root, since root reads any file); fifo (a named pipe nobody writes to, {f}); dir (a
folder named like a YAML file, {f}); sweep SPEC (a finished sweep of SPEC in {tmp}/sw, then
nothing), and the damaged-store kinds sweep_zeroed SPEC (8 KiB zeroed inside sweep.db),
sweep_truncated SPEC (sweep.db cut to half), sweep_text SPEC (sweep.db replaced by text);
sweep_running SPEC (a sweep of SPEC into {tmp}/sw paused after its first stored point, holding
the folder, while the case runs); readonly (a folder {tmp}/ro that nobody may write, run as
nobody when root).
Every case has 120 s; a case that runs longer is a hang and fails. --record prints each case's
actual exit status and first line in cases.txt's form instead of checking.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 120


def parse_cases(path):
    cases, case = [], None
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                case = {"name": line[1:-1], "line": number}
                cases.append(case)
                continue
            key, sep, value = line.partition(": ")
            if case is None or not sep or key not in ("setup", "run", "exit", "first"):
                sys.exit(f"{path}:{number}: expected '[name]' or 'setup|run|exit|first: value'")
            case[key] = value
    for c in cases:
        for key in ("run", "exit", "first"):
            if key not in c:
                sys.exit(f"{path}:{c['line']}: case '{c['name']}' has no '{key}:'")
    return cases


def matches(expected, actual):
    pattern = "^" + ".*".join(re.escape(p) for p in expected.split("{any}")) + "$"
    return re.match(pattern, actual, re.DOTALL) is not None


def as_nobody():
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def prefix_for(setup):
    kind = (setup or "").split(" ")[0]
    if kind in ("mode000", "readonly") and as_nobody():
        return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    return []


def run_coda(coda, args, prefix, cwd):
    p = subprocess.run(prefix + [coda] + args, cwd=cwd, capture_output=True, timeout=TIMEOUT_S)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def prepare(coda, setup, tmp, repo):
    """Returns ({f}'s value, a background process to stop afterwards or None)."""
    if not setup:
        return "", None
    kind, _, arg = setup.partition(" ")
    if kind == "mode000":
        dst = os.path.join(tmp, os.path.basename(arg))
        shutil.copy(os.path.join(repo, arg), dst)
        os.chmod(dst, 0)
        os.chmod(tmp, 0o755)
        return dst, None
    if kind == "fifo":
        f = os.path.join(tmp, "arch.yaml")
        os.mkfifo(f)
        return f, None
    if kind == "dir":
        f = os.path.join(tmp, "arch.yaml")
        os.mkdir(f)
        return f, None
    if kind == "readonly":
        ro = os.path.join(tmp, "ro")
        os.mkdir(ro)
        os.chmod(ro, 0o555)
        os.chmod(tmp, 0o755)
        return ro, None
    if kind.startswith("sweep"):
        out = os.path.join(tmp, "sw")
        if kind == "sweep_running":
            proc = subprocess.Popen([coda, "sweep", arg, "--out", out, "--test-pause-after", "1"],
                                    cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True)
            deadline = time.time() + TIMEOUT_S
            for line in proc.stdout:  # wait until it has stored a point and holds the folder
                if line.startswith("paused:") or time.time() > deadline:
                    break
            return out, proc
        code, _, err = run_coda(coda, ["sweep", arg, "--out", out], [], repo)
        if code != 0:
            raise RuntimeError(f"setup sweep failed ({code}): {err[:300]}")
        db = os.path.join(out, "sweep.db")
        if kind == "sweep_zeroed":
            with open(db, "r+b") as f:
                f.seek(8192)
                f.write(b"\0" * 8192)
        elif kind == "sweep_truncated":
            os.truncate(db, os.path.getsize(db) // 2)
        elif kind == "sweep_text":
            with open(db, "w") as f:
                f.write("this is not a database\n")
        return out, None
    raise RuntimeError(f"unknown setup '{setup}'")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("coda")
    ap.add_argument("--only")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    coda = os.path.abspath(args.coda)
    repo = os.path.abspath(os.path.join(HERE, "..", ".."))
    cases = parse_cases(os.path.join(HERE, "cases.txt"))
    failed = 0
    for c in cases:
        if args.only and c["name"] != args.only:
            continue
        tmp = tempfile.mkdtemp(prefix="coda_hostile_")
        background = None
        try:
            f, background = prepare(coda, c.get("setup"), tmp, repo)
            argv = [a.replace("{tmp}", tmp).replace("{f}", f) for a in c["run"].split(" ")]
            prefix, binary, cwd = prefix_for(c.get("setup")), coda, repo
            if prefix:
                # The user nobody may not reach this checkout (a clone under /root): it runs a
                # copy of coda from the scratch folder, with copies of tests/hostile/ and
                # configs/arch/ at the same relative paths.
                binary = os.path.join(tmp, "coda")
                shutil.copy(coda, binary)
                for folder in ("tests/hostile", "configs/arch"):
                    shutil.copytree(os.path.join(repo, folder), os.path.join(tmp, folder),
                                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))
                for root, dirs, files in os.walk(tmp):
                    for d in dirs:
                        if os.path.join(root, d) != f:  # the prepared folder keeps its mode
                            os.chmod(os.path.join(root, d), 0o755)
                    for name in files:
                        if os.path.join(root, name) != f:
                            os.chmod(os.path.join(root, name), 0o755)
                cwd = tmp
            try:
                code, out, err = run_coda(binary, argv, prefix, cwd)
            except subprocess.TimeoutExpired:
                code, out, err = "hang", "", f"ran over {TIMEOUT_S} s"
            stream = err if err.strip() else out
            first = stream.splitlines()[0] if stream.splitlines() else ""
            first = first.replace(tmp, "{tmp}")
            if args.record:
                print(f"[{c['name']}]")
                if c.get("setup"):
                    print(f"setup: {c['setup']}")
                print(f"run: {c['run']}\nexit: {code}\nfirst: {first}\n")
                continue
            ok = str(code) == c["exit"] and matches(c["first"], first)
            if not ok:
                failed += 1
                print(f"FAIL {c['name']} (cases.txt:{c['line']}): exit {code} (expected "
                      f"{c['exit']}), first line:\n  {first}\nexpected:\n  {c['first']}")
            else:
                print(f"ok   {c['name']}")
        finally:
            if background is not None:
                background.send_signal(signal.SIGTERM)
                try:
                    background.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    background.kill()
            for root, dirs, _ in os.walk(tmp):
                for d in dirs:
                    os.chmod(os.path.join(root, d), 0o755)
            shutil.rmtree(tmp, ignore_errors=True)
    if not args.record:
        print(f"{len(cases) - failed} of {len(cases)} hostile cases as expected"
              if not args.only else "")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

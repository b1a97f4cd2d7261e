"""Debian's coreutils under KLEE's kind of input, angr-ram beside stock angr (issue 81, item 6).

Each binary of :data:`BINARIES` (``/usr/bin``, Debian's own build) runs under ``angr-ram run`` in its
own process with :data:`INPUTS` (KLEE's coreutils options without the symbolic file: up to one symbolic
argument of 10 bytes, up to two of 2 bytes, 8 symbolic stdin bytes), the budget as ``--timeout``, ``--emit-tests``, then
``angr-ram replay``. Settings: angr-ram's default (the CLI's default search) and stock angr (``--engine
stock --search all``: angr's own engine and order, as a script would run it), side by side. Per
run: instruction coverage of main and its callees, finished paths, tests, replay mismatches, angr
stubs the paths called, peak RSS of the process. Two runs at a time.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BINARIES = ("base64", "basename", "cat", "cksum", "comm", "cut", "dirname", "echo", "expand", "expr", "factor",
            "fmt", "fold", "head", "join", "md5sum", "nl", "od", "paste", "pr", "printf", "seq", "sort", "sum",
            "tac", "tail", "tr", "tsort", "unexpand", "uniq", "wc")
# KLEE's coreutils inputs (--sym-args 0 1 10 --sym-args 0 2 2 --sym-files 1 8 --sym-stdin 8) scaled;
# INPUTS="..." in the environment replaces them (e.g. INPUTS="--sym-args 0 1 10 --sym-args 0 2 2 --sym-stdin 8")
INPUTS = os.environ.get("INPUTS", "--sym-args 0 1 10 --sym-args 0 2 2 --sym-stdin 8").split()
SETTINGS = {"angr-ram": [], "stock": ["--engine", "stock", "--search", "all"]}
if os.environ.get("SEARCHES"):     # SEARCHES="covnew-dives dfs": angr-ram under those orders instead (ratio: first/second)
    SETTINGS = {s: ["--search", s] for s in os.environ["SEARCHES"].split()}
FIRST, SECOND = list(SETTINGS)[:2]
# a run with no answer at this many times the budget (plus 300 s for tests and replay) is killed;
# KILL_FACTOR=1.5 for the 600 s table (stock angr's z3 calls outlast its deadline)
KILL_FACTOR = float(os.environ.get("KILL_FACTOR", "4"))
RSS_CAP_MB = float(os.environ.get("RSS_CAP_MB", "10240"))     # per run (two run side by side on 24 GiB)


def _tree_rss_mb(pid: int) -> float:
    """Resident MB of ``pid`` and its descendants (from /proc)."""
    parents = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parents[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    tree, todo = set(), [pid]
    while todo:
        q = todo.pop()
        tree.add(q)
        todo += [c for c, pp in parents.items() if pp == q and c not in tree]
    total = 0
    for q in tree:
        try:
            with open(f"/proc/{q}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    return total / 2**20


def _bounded(cmd: list, seconds: float):
    """Run ``cmd``; (CompletedProcess-like, None), or (None, why) when it ran past ``seconds`` or its
    process tree past RSS_CAP_MB (two runs side by side must not push each other into the OOM
    killer or swap: stock angr reached 22.7 GB on base64 at 600 s and stalled its neighbour)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    t0 = time.monotonic()
    while True:
        try:
            out, err = p.communicate(timeout=5)
            return subprocess.CompletedProcess(cmd, p.returncode, out, err), None
        except subprocess.TimeoutExpired:
            pass
        why = None
        if time.monotonic() - t0 > seconds:
            why = f"killed (no answer at {KILL_FACTOR:g}x the budget)"
        elif _tree_rss_mb(p.pid) > RSS_CAP_MB:
            why = f"killed (RSS over {RSS_CAP_MB / 1024:g} GB)"
        if why is not None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return None, why


def _run(binary: str, setting: str, budget: float) -> dict:
    d = tempfile.mkdtemp(prefix="angr-ram-coreutils-")
    try:
        cmd = ["/usr/bin/time", "-f", "RSS %M", sys.executable, "-m", "angr_ram.run.cli", "run", binary, *INPUTS,
               "--timeout", str(budget), "--json", "--emit-tests", d, *SETTINGS[setting]]
        p, why = _bounded(cmd, budget * KILL_FACTOR + 300)
        if why is not None:
            return {"error": why}
        rss = next((int(ln.split()[1]) // 1024 for ln in p.stderr.splitlines() if ln.startswith("RSS ")), 0)
        if p.returncode not in (0, 130) or not p.stdout.strip().startswith("{"):
            err = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("RSS ")]
            return {"error": (err or ["?"])[-1][:70], "rss": rss}
        r = json.loads(p.stdout)
        rp = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", "replay", d, binary, "--json"],
                            capture_output=True, text=True, timeout=1200)
        replays = json.loads(rp.stdout) if rp.stdout.strip().startswith("[") else []
        return {"cov": (r.get("coverage") or {}).get("percent") or 0.0, "paths": r["stats"]["paths"],
                "tests": r["tests"] or 0, "errors": len(r["errors"]),
                "mismatch": sum(1 for x in replays if x["status"] == "mismatch"),
                "stubs": len(r.get("stubs") or {}), "rss": rss}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def coreutils_table(names=None, budget: float = 60.0) -> int:
    """Print the table and the geometric mean of the coverage ratio (angr-ram / stock)."""
    names = [n for n in (names or BINARIES) if shutil.which(n)]
    ex = cf.ThreadPoolExecutor(max_workers=2)
    jobs = {(n, s): ex.submit(_run, shutil.which(n), s, budget) for n in names for s in SETTINGS}
    print(f"Debian coreutils, {' '.join(INPUTS)}, {budget:.0f} s per run")
    print(f"{'binary':<10} " + "  ".join(f"{s + ' ICov%':>14} {'paths':>5} {'tests':>5} {'mism':>4} {'stubs':>5} "
                                         f"{'MB':>5}" for s in SETTINGS) + "  ratio")
    sys.stdout.flush()          # each row as soon as its runs are done: a run cut short keeps its rows
    ratios, finished, lower = [], 0, []
    for n in names:
        cells, cov = [], {}
        for s in SETTINGS:
            r = jobs[(n, s)].result()
            if "error" in r:
                cells.append(f"{'failed: ' + r['error'][:36]:>40}")
                cov[s] = None
                continue
            cov[s] = r["cov"]
            cells.append(f"{r['cov']:>14.1f} {r['paths']:>5} {r['tests']:>5} {r['mismatch']:>4} {r['stubs']:>5} "
                         f"{r['rss']:>5}")
            if s == FIRST and r["paths"] > 0 and r["mismatch"] == 0:
                finished += 1
        ratio = ""
        if cov.get(FIRST) and cov.get(SECOND):
            q = cov[FIRST] / cov[SECOND]
            ratios.append(q)
            ratio = f"{q:.2f}"
            if q < 1:
                lower.append(n)
        print(f"{n:<10} " + "  ".join(cells) + f"  {ratio:>5}", flush=True)
    if ratios:
        g = math.exp(sum(math.log(q) for q in ratios) / len(ratios))
        print(f"\ncoverage {FIRST}/{SECOND}, geometric mean over {len(ratios)} binaries: {g:.2f}; lower on: "
              f"{', '.join(lower) or 'none'}")
    print(f"{FIRST} finished paths whose tests all replay on {finished} of {len(names)} binaries")
    ex.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(coreutils_table(sys.argv[1:] or None, budget=float(os.environ.get("BUDGET", "60"))))

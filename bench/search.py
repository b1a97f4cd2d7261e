"""Search strategies on Debian's coreutils (issue 81): which order finishes paths early and covers
the most code in a time budget.

Each binary of :data:`PROGRAMS` (Debian's own, from ``/usr/bin``) runs under ``angr-ram run`` in its
own process with 4 symbolic stdin bytes and the budget, once per search order (``all``: every
active state stepped together, angr's order, the default before issue 81). Per run: finished
paths, the seconds to the first finished path (from the coverage series, one sample a second),
instruction coverage of main and its callees, error paths, tests and their replay mismatches,
peak RSS. Two runs at a time (the machine's two cores).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
import tempfile

SEARCH_ORDERS = ("all", "dfs", "random-path", "covnew", "random-path+covnew")
# name: (binary, concrete arguments) over 4 symbolic stdin bytes
PROGRAMS = {
    "wc": ("wc", []), "od -c": ("od", ["-c"]), "fmt": ("fmt", []), "fold -w 2": ("fold", ["-w", "2"]),
    "unexpand -a": ("unexpand", ["-a"]), "pr -t": ("pr", ["-t"]), "cut -c 1-2": ("cut", ["-c", "1-2"]),
    "tr a-z A-Z": ("tr", ["a-z", "A-Z"]), "base64 -d": ("base64", ["-d"]), "sort": ("sort", []),
}


def _run(binary: str, args: list[str], search: str, budget: float, nbytes: int) -> dict:
    d = tempfile.mkdtemp(prefix="angr-ram-search-")
    try:
        cmd = [sys.executable, "-m", "angr_ram.run.cli", "run", binary, "--stdin-bytes", str(nbytes),
               "--timeout", str(budget), "--json", "--emit-tests", d]
        for a in args:
            cmd += ["--arg-str", a]
        if search != "all":
            cmd += ["--search", search]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate(timeout=budget * 3 + 120)
        if p.returncode not in (0, 130):
            return {"error": (err.strip().splitlines() or ["?"])[-1][:80]}
        r = json.loads(out)
        rp = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", "replay", d, binary, "--json"],
                            capture_output=True, text=True, timeout=600)
        replays = json.loads(rp.stdout) if rp.stdout.strip().startswith("[") else []
        series = (r.get("coverage") or {}).get("series") or []
        first = next((t for t, _, paths in series if paths > 0), None)
        return {"paths": r["stats"]["paths"], "errors": len(r["errors"]), "first": first,
                "cov": (r.get("coverage") or {}).get("percent"), "tests": r["tests"],
                "mismatch": sum(1 for x in replays if x["status"] == "mismatch"),
                "unfinished": r["unfinished"]}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def search_table(names=None, budget: float = 60.0, nbytes: int = 4, orders=SEARCH_ORDERS) -> int:
    """Print the table (``names``: keys of :data:`PROGRAMS`, default all)."""
    names = list(names or PROGRAMS)
    jobs = {}
    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        for name in names:
            binary, args = PROGRAMS[name]
            path = shutil.which(binary) or binary
            for order in orders:
                jobs[(name, order)] = ex.submit(_run, path, args, order, budget, nbytes)
    print(f"search orders on Debian coreutils: {nbytes} symbolic stdin bytes, {budget:.0f} s per run")
    print(f"{'program':<13} {'search':<19} {'paths':>6} {'first s':>7} {'ICov%':>6} {'errors':>6} "
          f"{'tests':>6} {'mismatch':>8} {'unfinished':>10}")
    for name in names:
        for order in orders:
            r = jobs[(name, order)].result()
            if "error" in r:
                print(f"{name:<13} {order:<19} failed: {r['error']}")
                continue
            first = f"{r['first']:.0f}" if r["first"] is not None else "-"
            print(f"{name:<13} {order:<19} {r['paths']:>6} {first:>7} {r['cov'] or 0:>6.1f} {r['errors']:>6} "
                  f"{r['tests']:>6} {r['mismatch']:>8} {r['unfinished']:>10}")
    return 0


if __name__ == "__main__":
    budget = float(os.environ.get("BUDGET", "60"))
    sys.exit(search_table(sys.argv[1:] or None, budget=budget))

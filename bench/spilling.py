"""Spilling (issue 81, item 4): a frontier bounded by ``--spill-states`` against the same run
without a bound, per search order, on Debian's coreutils.

Each row runs ``angr-ram run BINARY --sym-args 0 1 4 --sym-stdin 4 --search S --timeout BUDGET``
once without and once with ``--spill-states N`` (in their own processes, one at a time: their peak
RSS is their own). Per run: instruction coverage of main and its callees, finished paths, unfinished
paths, states spilled and still on disk at the end, tests written, peak RSS (``/usr/bin/time``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

INPUTS = ["--sym-args", "0", "1", "4", "--sym-stdin", "4"]
ROWS = (("wc", "bfs"), ("wc", "dfs"), ("fold", "bfs"), ("fold", "random-path"), ("od", "bfs"))


def _run(binary: str, search: str, budget: float, spill: int | None) -> dict:
    d = tempfile.mkdtemp(prefix="angr-ram-spill-bench-")
    try:
        cmd = ["/usr/bin/time", "-f", "RSS %M", sys.executable, "-m", "angr_ram.run.cli", "run", binary, *INPUTS,
               "--search", search, "--timeout", str(budget), "--json", "--emit-tests", d]
        if spill is not None:
            cmd += ["--spill-states", str(spill)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget * 4 + 300)
        rss = next((int(ln.split()[1]) // 1024 for ln in p.stderr.splitlines() if ln.startswith("RSS ")), 0)
        if not p.stdout.strip().startswith("{"):
            return {"error": ([ln for ln in p.stderr.splitlines() if ln.strip()] or ["?"])[-1][:60]}
        r = json.loads(p.stdout)
        return {"cov": (r.get("coverage") or {}).get("percent") or 0.0, "paths": r["stats"]["paths"],
                "unfinished": r["unfinished"], "spilled": r.get("spilled", 0), "left": r.get("spilled_left", 0),
                "tests": r["tests"] or 0, "rss": rss}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def spilling_table(budget: float = 60.0, spill: int = 300, rows=ROWS) -> int:
    print(f"Spilling: Debian coreutils, {' '.join(INPUTS)}, {budget:.0f} s per run, --spill-states {spill} vs none")
    print(f"{'binary':<8} {'search':<12} {'spill':>5} {'ICov%':>6} {'paths':>5} {'unfin':>5} {'spilled':>7} "
          f"{'on disk':>7} {'tests':>5} {'MB':>5}", flush=True)
    for binary, search in rows:
        for n in (None, spill):
            r = _run(shutil.which(binary), search, budget, n)
            if "error" in r:
                print(f"{binary:<8} {search:<12} {n or '-':>5} failed: {r['error']}", flush=True)
                continue
            print(f"{binary:<8} {search:<12} {n or '-':>5} {r['cov']:>6.1f} {r['paths']:>5} {r['unfinished']:>5} "
                  f"{r['spilled']:>7} {r['left']:>7} {r['tests']:>5} {r['rss']:>5}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(spilling_table(float(os.environ.get("BUDGET", "60")), int(os.environ.get("SPILL", "300"))))

"""Test-case benchmark: per program and configuration, the tests a run emits and their native replay.

For each run it prints the exploration time, the time spent choosing the tests' inputs (readable
models, one test per path and outcome), the native replay time, and the replay verdicts: ``ok``
(exit code and stdout as predicted), ``confirmed`` memory errors (native crash or ASan report) and
``wrong`` (a mismatch or a false error). Stock angr's tests are replayed the same way, so the
table also shows which of its answers are wrong.
"""

from __future__ import annotations

import time
from pathlib import Path

from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from . import sample_path

# (binary, explore keywords, ASan build or None)
PROGRAMS = (
    ("matrix40_O0", {"stdin_bytes": 2}, None),
    ("checksum_O2", {"stdin_bytes": 2}, None),
    ("usage_O2", {"stdin_bytes": 1}, None),
    ("argnum_O2", {"args": [2]}, None),
    ("fileread_O0", {"files": [("input.dat", 3)]}, None),
    ("uaf_O0", {"stdin_bytes": 1}, "uaf_asan"),
    ("lenobo_O2", {"stdin_bytes": 2}, "lenobo_asan"),
    ("memspnab6_O0", {"stdin_bytes": 7, "merge_points": ["memspn"]}, None),
)
CONFIGS = (("stock", {"engine": "stock"}), ("fork", {}), ("dsmm", {"model": "dsmm"}),
           ("fork+pat", {"merge": "pat"}))


def tests_table(samples_dir: Path | None = None, timeout: float = 300.0, jobs: int = 2) -> int:
    """Print the table (see the module docstring); ``fork+pat`` runs only where merge points are set."""
    hdr = (f"{'program':14} {'config':9} {'explore s':>9} {'tests s':>7} {'replay s':>8} {'paths':>5} "
           f"{'tests':>5} {'ok':>4} {'confirmed':>9} {'wrong':>5} {'other':>5}")
    print(hdr)
    print("-" * len(hdr))
    wrong_total = {}
    for name, kw, asan in PROGRAMS:
        for label, cfg in CONFIGS:
            if label == "fork+pat" and "merge_points" not in kw:
                continue
            opts = {k: v for k, v in kw.items() if k != "merge_points" or "merge" in cfg}
            b = sample_path(name, samples_dir)
            r = explore(b, timeout=timeout, tests=True, **cfg, **opts)
            t = time.perf_counter()
            runs = replay(r.tests, b, asan=None if asan is None else sample_path(asan, samples_dir), jobs=jobs)
            rs = time.perf_counter() - t
            count = {s: sum(x.status == s for x in runs) for s in ("ok", "confirmed")}
            wrong = sum(x.failed for x in runs)
            wrong_total[label] = wrong_total.get(label, 0) + wrong
            other = len(runs) - count["ok"] - count["confirmed"] - wrong
            print(f"{name:14} {label:9} {r.seconds:9.2f} {r.tests_seconds:7.2f} {rs:8.2f} "
                  f"{r.stats['paths']:5d} {len(runs):5d} {count['ok']:4d} {count['confirmed']:9d} {wrong:5d} "
                  f"{other:5d}" + ("  TIMEOUT" if r.timed_out else ""), flush=True)
    print("wrong tests per configuration: " + ", ".join(f"{k} {v}" for k, v in wrong_total.items()))
    return 0

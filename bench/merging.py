"""State-merging table: the memspn samples under no merging, ite, pat and pat without incremental
merging."""

from __future__ import annotations

import time
from pathlib import Path

from angr_ram.run.runner import explore
from angr_ram.solver.patches import counting

from . import child_env, run_child, sample_path
from .models import geomean

MERGE_SAMPLES = ([(f"memspn{m}_O0", m + 1) for m in (4, 8, 16, 32)] + [(f"memspnab{m}_O0", m + 1) for m in (4, 8, 16)]
                 + [(f"memspn2x{m}_O0", m + 1) for m in (4, 8, 16)] + [("memspn2x8_O2", 9), ("memspnab8_O2", 9)])
MERGE_MAX_STATES = 4096     # "ab" without merging has 2^m states: stop it before memory runs out
MERGE_MODES = (("none", None, None), ("ite", "ite", None), ("pat", "pat", None), ("pat-noinc", "pat", False))


def merge_table(timeout: float = 300.0, repeat: int = 1, samples_dir: Path | None = None) -> int:
    """Per memspn sample and merging mode (none, ite, pat with and without incremental merging):
    time, paths, z3 calls, quantified queries and how they were solved, incremental merges, and
    the largest merged path constraint (AST nodes). A run stops at ``timeout`` seconds or at
    :data:`MERGE_MAX_STATES` active states (both printed as TIMEOUT)."""
    hdr = f"{'sample':14} {'mode':9} {'time s':>8} {'paths':>6} {'z3':>6} {'q-queries':>9} " \
          f"{'strip':>6} {'dup':>5} {'repair':>6} {'forall':>6} {'incr':>5} {'merged nodes':>12}"
    print(hdr)
    print("-" * len(hdr))
    for binary, n in MERGE_SAMPLES:
        path = sample_path(binary, samples_dir)
        best: dict = {}
        for _ in range(max(repeat, 1)):
            for label, mode, inc in MERGE_MODES:
                if label in best and best[label][1].timed_out:
                    continue
                with counting() as zc:
                    t = time.perf_counter()
                    r = explore(path, n, merge=mode, merge_points=["memspn"], timeout=timeout,
                                merge_incremental=inc, max_states=MERGE_MAX_STATES)
                    secs = time.perf_counter() - t
                if label not in best or secs < best[label][0]:
                    best[label] = (secs, r, zc.count)
        for label, _, _ in MERGE_MODES:
            secs, r, z3c = best[label]
            s = r.stats
            print(f"{binary:14} {label:9} {secs:8.2f} {s['paths']:6d} {z3c:6d} {s.get('merge_solve_queries', 0):9d} "
                  f"{s.get('merge_solve_strip', 0):6d} {s.get('merge_solve_duplicate', 0):5d} "
                  f"{s.get('merge_solve_repair', 0):6d} {s.get('merge_solve_fallback', 0):6d} "
                  f"{s.get('merge_incremental', 0):5d} {s.get('merge_max_constraint_nodes', 0):12d}"
                  + ("  TIMEOUT" if r.timed_out else ""), flush=True)
        ite, pat = best["ite"], best["pat"]
        bound = ">=" if ite[1].timed_out else ""
        print(f"{binary:14} {'ite/pat':9} {bound}{ite[0] / pat[0]:.2f}x" + ("  (pat timed out)" if pat[1].timed_out else ""))
    return 0


# ---------------------------------------------------------------------------- the loop corpus
LOOPS = ("acceptwalk", "c_strspn", "c_strcspn", "c_strpbrk", "c_strtok", "c_strchr", "c_memchr", "c_atoi",
         "wordcount", "rle")
LOOP_M = (6, 8, 10, 12)
LOOP_MODES = (("stock", {"engine": "stock"}), ("ite", {"merge": "ite", "merge_points": "auto"}),
              ("pat", {"merge": "pat", "merge_points": "auto"}))
_LOOP_KEYS = ("paths", "z3_checks", "merge_incremental", "merge_merges_pat", "merge_merges_ite",
              "merge_incremental_compared", "merge_max_constraint_nodes")


LOOP_HASH_SEED = "0"   # every run's PYTHONHASHSEED (see _loop_run)


def _loop_run(binary: str, n: int, kw: dict, timeout: float, hash_seed: str = LOOP_HASH_SEED) -> dict:
    """One exploration in a subprocess killed ``timeout`` + 30 s after its start (a single z3 call
    can outlast the exploration's own timeout). The subprocess gets ``PYTHONHASHSEED=hash_seed``:
    the iteration order of sets of names changes the order of exploration and of z3's variables,
    and with it a run's time (strtok M = 10 pat: 48 to 68 s over seeds 1 to 3), so every mode and
    every rerun uses the same one."""
    import json
    import os
    import subprocess
    import sys

    t = time.perf_counter()
    cmd = [sys.executable, "-m", "bench.merging", binary, str(n), json.dumps(kw), str(timeout)]
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    try:
        out = run_child(cmd, timeout + 30, child_env(env), check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        r["outcomes"] = {tuple(o) for o in r["outcomes"]}
    except subprocess.TimeoutExpired:
        r = {"timed_out": True, "outcomes": set(), "errors": 0}
    r["seconds"] = time.perf_counter() - t
    return r


def loop_table(names=None, ms=LOOP_M, timeout: float = 120.0, samples_dir: Path | None = None) -> int:
    """Per loop-corpus program (``samples/loops``, -O0) and M: stock angr, ``ite`` and ``pat`` with
    the loops as merge points (``"auto"``): time, paths, z3 calls, merges (incremental / pattern /
    ite), live-store comparisons, the largest merged path constraint, whether the outcome set
    equals stock angr's (when that finished), errors, and the paths a finished run set aside
    undecided (``unk``: z3 gave up; such a run's outcomes may be incomplete, so it is marked ``u``
    and left out of the speed-ups; a timed-out run shows ``-``, its timeout counts as a lower
    bound). A mode that times out at one M is not run at larger M. Then the geometric-mean
    speed-up of ``pat`` over ``ite`` and over stock angr, over all runs and over the programs whose
    stock path count grows exponentially (:func:`_exponential`)."""
    hdr = (f"{'program':12} {'M':>3} {'mode':5} {'time s':>8} {'paths':>6} {'z3':>6} {'incr':>5} {'pat':>4} "
           f"{'ite':>4} {'cmp':>6} {'nodes':>6} {'outcomes':>8} {'err':>3} {'unk':>3}")
    print(f"(every run with PYTHONHASHSEED={LOOP_HASH_SEED})")
    print(hdr)
    print("-" * len(hdr))
    ratios: dict[str, list[float]] = {"ite": [], "stock": []}
    exp_names: list[str] = []
    growing: dict[str, list[float]] = {"ite": [], "stock": []}   # the exponential programs' ratios
    for name in names or LOOPS:
        dead: set[str] = set()
        mine: dict[str, list[float]] = {"ite": [], "stock": []}
        stock_paths: list[tuple[int, bool]] = []
        for m in ms:
            b = sample_path(f"{name}{m}_O0", samples_dir)
            res = {}
            for label, kw in LOOP_MODES:
                if label in dead:
                    print(f"{name:12} {m:3} {label:5} {'skipped (timed out at a smaller M)':>40}", flush=True)
                    continue
                r = res[label] = _loop_run(b, m + 1, kw, timeout)
                if r["timed_out"]:
                    dead.add(label)
                if label == "stock":
                    stock_paths.append((r.get("paths", 0), r["timed_out"]))
                undecided = 0 if r["timed_out"] else r.get("unknown", 0)   # a timeout leaves states too
                r["undecided"] = undecided
                same = "u" if undecided else "" if label == "stock" else (
                    "?" if "stock" not in res or res["stock"]["timed_out"] or r["timed_out"]
                    else "=" if r["outcomes"] == res["stock"]["outcomes"] else "DIFF")
                t = f"{r['seconds']:8.1f}" + ("+" if r["timed_out"] else " ")
                print(f"{name:12} {m:3} {label:5} {t}{r.get('paths', 0):6} {r.get('z3_checks', 0):6} "
                      f"{r.get('merge_incremental', 0):5} {r.get('merge_merges_pat', 0):4} "
                      f"{r.get('merge_merges_ite', 0):4} {r.get('merge_incremental_compared', 0):6} "
                      f"{r.get('merge_max_constraint_nodes', 0):6} {len(r['outcomes']):5} {same:>2} "
                      f"{r['errors']:3} {'-' if r['timed_out'] else undecided:>3}", flush=True)
            pat = res.get("pat")
            if pat is not None and not pat["timed_out"] and not pat["undecided"]:
                for other in ("ite", "stock"):
                    o = res.get(other)
                    if o is not None and not o["undecided"]:
                        ratios[other].append(o["seconds"] / pat["seconds"])
                        mine[other].append(o["seconds"] / pat["seconds"])
        if _exponential(stock_paths):
            exp_names.append(name)
            for other, rs in mine.items():
                growing[other] += rs
    for other, rs in ratios.items():
        if rs:
            print(f"pat speed-up over {other} (geometric mean of {len(rs)} runs; a timed-out run counts "
                  f"its timeout, so this is a lower bound): {geomean(rs):.2f}x")
    print(f"programs whose unmerged (stock) path counts grow exponentially: {', '.join(exp_names) or 'none'}")
    for other, rs in growing.items():
        if rs:
            print(f"  pat speed-up over {other} on them (geometric mean of {len(rs)} runs, a lower bound): "
                  f"{geomean(rs):.2f}x")
    return 0


def _exponential(stock_paths: list[tuple[int, bool]]) -> bool:
    """Whether stock angr's path counts (paths, timed out) at successive M grow exponentially: the
    count more than doubles from one M to the next (M grows by 2), or stock angr already timed out
    at the smallest M."""
    if stock_paths and stock_paths[0][1]:
        return True
    done = [p for p, timed_out in stock_paths if not timed_out]
    return any(b > 2 * a for a, b in zip(done, done[1:], strict=False) if a)


def _loop_one(binary: str, n: int, kw: dict, timeout: float) -> None:
    import json

    with counting() as zc:
        r = explore(binary, n, timeout=timeout, **kw)
    out = {k: r.stats.get(k, 0) for k in _LOOP_KEYS}
    out["z3_checks"] = zc.count
    out.update(timed_out=r.timed_out, errors=len(r.errors), unknown=r.unknown, outcomes=sorted((c, o.hex()) for c, o in r.outcomes))
    print(json.dumps(out))


if __name__ == "__main__":
    import json
    import sys

    _loop_one(sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), float(sys.argv[4]))

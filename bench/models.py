"""Benchmark of the multiple-resolution models and of splitting (issue: memory partitioning).

Per sample and setting: wall time, the part of it from the step of the first symbolic-pointer
resolution on ("sym s": what the models differ in; the concrete prefix before it costs every
setting the same), finished paths, solver queries, resolution queries, segments and the largest
segment. Settings run interleaved round-robin; the minimum time of ``repeat``
runs is kept. Also prints geometric-mean speed-ups of dsmm over fork and smm on the samples with
multiple resolutions, and can plot time against matrix size N (like Figure 3 of the segmented
memory model paper).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from angr_ram.core.errors import AngrRamError
from angr_ram.run.runner import explore
from angr_ram.run.technique import RelocatableMemory

from . import fastest, sample_path, with_claripy_fixes

MULTI = {"matrix40": ("matrix40_O0", 2), "twolookup": ("twolookup_O0", 2), "hashtables": ("hashtables_O0", 1),
         "ptrarray": ("ptrarray_O0", 2), "chainhash": ("chainhash_O0", 1), "poolhash": ("poolhash_O0", 1)}
MODEL_SETTINGS = [("fork", {}), ("ite", {}), ("flat", {}), ("smm", {}), ("dsmm", {}),
                  ("dsmm+noctx", {"context_resolution": False}), ("dsmm+reuse", {"reuse_segments": True})]
SPLIT_SETTINGS = [("no split", "fork", {}), ("ite", "ite", {})] + [
    (f"{m} split {n}", m, {"split": n}) for n in (32, 64, 128, 256, 512) for m in ("fork", "ite")]
MATRIX_N = (3, 10, 20, 40, 80)


class _SymbolicPhase:
    """Progress callback: when the step that made the first symbolic-pointer resolution began."""

    def __init__(self):
        self.last = time.perf_counter()
        self.start: float | None = None

    def __call__(self, simgr) -> None:
        now = time.perf_counter()
        if self.start is None:
            tech = next((t for t in simgr._techniques if isinstance(t, RelocatableMemory)), None)
            if tech is not None and tech.stats.resolutions:
                self.start = self.last
        self.last = now


def _run(binary: str, n: int, model: str, opts: dict, timeout: float) -> dict:
    t = time.perf_counter()
    phase = _SymbolicPhase()
    r = explore(binary, n, model=model.split("+")[0], timeout=timeout, progress=phase, **opts)
    end = time.perf_counter()
    s = r.stats
    return {"seconds": end - t, "symbolic": end - phase.start if phase.start else 0.0,
            "paths": s["paths"], "queries": s["solver_queries"],
            "resolution_queries": s["resolution_queries"], "segments": s["segments"], "ctx": s["context_hits"],
            "max_segment": s["max_segment_size"], "splits": s["splits"], "outcomes": len(r.outcomes),
            "timed_out": r.timed_out}


def _table(rows, title):
    print(f"\n{title}")
    hdr = f"{'sample':11} {'setting':16} {'time s':>8} {'sym s':>6} {'paths':>6} {'queries':>8} {'res.q':>6} {'ctx':>4} " \
          f"{'segs':>5} {'max seg':>8} {'splits':>6} {'outc':>5}"
    print(hdr)
    print("-" * len(hdr))
    for sample, label, r in rows:
        print(f"{sample:11} {label:16} {r['seconds']:8.2f} {r['symbolic']:6.2f} {r['paths']:6d} {r['queries']:8d} "
              f"{r['resolution_queries']:6d} {r['ctx']:4d} {r['segments']:5d} {r['max_segment']:8d} {r['splits']:6d} "
              f"{r['outcomes']:5d}" + ("  TIMEOUT" if r["timed_out"] else ""), flush=True)


def _interleaved(binary, n, settings, timeout, repeat):
    return fastest(settings, lambda _label, model, opts: _run(binary, n, model, opts, timeout), repeat)


def geomean(xs) -> float:
    """Geometric mean of positive numbers."""
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


@with_claripy_fixes
def main(timeout: float = 300.0, repeat: int = 1, plot: str | None = None, samples_dir: Path | None = None) -> int:
    """Print the model table, the split table and (optionally) write the matrix-size plot."""
    if plot:
        _plotting_available()          # before the tables' minutes, not after them
    rows, results = [], {}
    settings = [(label, label, opts) for label, opts in MODEL_SETTINGS]
    for name, (binary, n) in MULTI.items():
        res = _interleaved(sample_path(binary, samples_dir), n, settings, timeout, repeat)
        results[name] = res
        rows += [(name, label, res[label]) for label, _, _ in settings]
    _table(rows, "Multiple-resolution models")
    vs_fork = geomean(r["fork"]["seconds"] / r["dsmm"]["seconds"] for r in results.values())
    vs_smm = geomean(r["smm"]["seconds"] / r["dsmm"]["seconds"] for r in results.values())
    seg = [(r["dsmm"]["max_segment"], r["smm"]["max_segment"]) for r in results.values()]
    print(f"\ndsmm speed-up (geometric mean): over fork {vs_fork:.2f}x, over smm {vs_smm:.2f}x")
    sym_fork = geomean(max(r["fork"]["symbolic"], 1e-3) / max(r["dsmm"]["symbolic"], 1e-3) for r in results.values())
    sym_smm = geomean(max(r["smm"]["symbolic"], 1e-3) / max(r["dsmm"]["symbolic"], 1e-3) for r in results.values())
    print(f"symbolic phase only (geometric mean): over fork {sym_fork:.2f}x, over smm {sym_smm:.2f}x")
    print("max segment dsmm/smm per sample: " + ", ".join(
        f"{name} {d}/{s}" for name, (d, s) in zip(results, seg, strict=True)))

    res = _interleaved(sample_path("table512_O0", samples_dir), 2, SPLIT_SETTINGS, timeout, repeat)
    _table([("table512", label, res[label]) for label, _, _ in SPLIT_SETTINGS], "Splitting the 4 KiB table")
    base = res["no split"]["seconds"]
    best = min((r["seconds"], label) for label, r in res.items() if "split " in label)
    print(f"\nbest split setting: {best[1]} {base / best[0]:.2f}x vs no split (fork)")
    sym_base = res["no split"]["symbolic"]
    sym_best = min((r["symbolic"], label) for label, r in res.items() if "split " in label)
    print(f"symbolic phase: no split {sym_base:.2f} s of {base:.2f} s; best split setting {sym_best[1]} "
          f"{sym_best[0]:.2f} s ({sym_base / max(sym_best[0], 1e-9):.2f}x)")

    if plot:
        _plot(plot, timeout, samples_dir)
    return 0


def _plotting_available() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise AngrRamError("--plot needs matplotlib: pip install 'angr-ram[bench]' (or pip install matplotlib)") from None


def _plot(path: str, timeout: float, samples_dir: Path | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = ["fork", "ite", "flat", "smm", "dsmm"]
    times = {m: [] for m in models}
    for n in MATRIX_N:
        b = sample_path(f"matrix{n}_O0", samples_dir)
        for m in models:
            times[m].append(_run(b, 2, m, {}, timeout)["seconds"])
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in models:
        ax.plot(MATRIX_N, times[m], marker="o", label=m)
    ax.set_xlabel("matrix size N (N calloc'd rows, read at symbolic [i][j])")
    ax.set_ylabel("exploration time (s)")
    ax.set_title("angr-ram: time vs matrix size per memory model")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}: " + "; ".join(
        f"{m} " + " ".join(f"{t:.1f}" for t in times[m]) for m in models))

"""A plot of runs over time: instruction coverage and finished paths against seconds, one line per
run (``angr-ram stats DIR... --plot PNG``), from the series each run writes with its tests
(``run.json``'s ``coverage.series``, else ``coverage.csv``: a sample a second).

matplotlib comes with ``angr-ram[bench]``; without it the command is refused at once in one line.
"""

from __future__ import annotations

import csv
import importlib
import json
import os

from angr_ram.core.errors import AngrRamError


def run_series(directory: str) -> tuple[str, list[tuple[float, int, int]], int | None]:
    """``(label, [(seconds, instructions covered, paths)], instructions in all)`` of the run
    whose tests are in ``directory``."""
    report = os.path.join(directory, "run.json")
    run = {}
    if os.path.isfile(report):
        with open(report) as f:
            run = json.load(f)
    cov = run.get("coverage") or {}
    series = [tuple(x) for x in cov.get("series") or ()]
    table = os.path.join(directory, "coverage.csv")
    if not series and os.path.isfile(table):
        with open(table, newline="") as f:
            series = [(float(r["seconds"]), int(r["instructions"]), int(r["paths"])) for r in csv.DictReader(f)]
    if not series:
        raise AngrRamError(f"{directory}: no coverage series (a run with --emit-tests writes one)")
    label = os.path.basename(run.get("binary") or "") or os.path.basename(os.path.normpath(directory))
    return label, series, cov.get("instructions")


def plot_runs(directories, png: str) -> None:
    """Write ``png``: the instructions executed (as a percentage of those of main and its callees,
    or a count when the total is not known; the series counts every executed instruction, so its
    last point can lie a little above the summary's ICov%) above and finished paths below, against
    seconds, a line per directory."""
    runs = [run_series(d) for d in directories]
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        raise AngrRamError("--plot needs matplotlib: pip install 'angr-ram[bench]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")
    plt = importlib.import_module("matplotlib.pyplot")
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    percent = all(total for _, _, total in runs)
    for label, series, total in runs:
        xs = [s for s, _, _ in series]
        top.plot(xs, [100.0 * i / total if percent else i for _, i, _ in series], label=label)
        bottom.plot(xs, [p for _, _, p in series], label=label)
    top.set_ylabel("instructions executed (%)" if percent else "instructions executed")
    bottom.set_ylabel("finished paths")
    bottom.set_xlabel("seconds")
    top.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)

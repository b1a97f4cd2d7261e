"""Scripts benchmark: the corpus of angr scripts (``samples/scripts/s*.py``), each run as written
(``stock``) and with ``simgr.use_technique(angr_ram.RelocatableMemory())`` added (``ram``), side by
side, each run in a fresh child process: whether the answer is right (the native program given it
prints what the script looks for), the script's seconds (its own work: angr and angr-ram are
imported before the clock starts), and the child's peak RSS. ``ratio`` is ram/stock seconds;
the last line gives their geometric mean over the scripts both answer. The note names what
angr-ram did not honour of a script's options or settings (:mod:`angr_ram.run.user_options`)."""

from __future__ import annotations

import json
import math
import resource
import sys
import time
from pathlib import Path

from . import child_result, unknown_name

SCRIPTS_DIR = Path(__file__).resolve().parent.parent / "samples" / "scripts"
SETTINGS = ("stock", "ram")


def _harness():
    sys.path.insert(0, str(SCRIPTS_DIR))
    import harness  # noqa: PLC0415 - the corpus's own module, beside its scripts
    return harness


def _child(name: str, setting: str) -> None:
    import logging

    import angr  # noqa: F401 - imported before the clock

    import angr_ram

    logging.getLogger("angr").setLevel(logging.CRITICAL)
    harness = _harness()
    techs = []
    attach = harness.ram

    def ram(simgr):      # the user's one line, keeping the technique to read what it did not honour
        attach(simgr)
        techs.extend(t for t in simgr._techniques if isinstance(t, angr_ram.RelocatableMemory))
    harness.ram = ram
    t0 = time.perf_counter()
    try:
        answer = harness.run(name, setting == "ram")
        seconds = time.perf_counter() - t0
        ok, error = harness.native_ok(name, answer), None
    except Exception as e:  # noqa: BLE001 - a script's failure is a row of the table
        seconds, ok, error = time.perf_counter() - t0, False, f"{type(e).__name__}: {str(e)[:80]}"
    skipped = sorted({k for t in techs for k in t.stats.options_not_honoured})
    print(json.dumps({"seconds": seconds, "ok": ok, "error": error, "not_honoured": skipped,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))


def run(name: str, setting: str, timeout: float) -> dict:
    """One script in a child process, killed after ``timeout``."""
    return child_result([sys.executable, "-m", "bench.scripts", name, setting], timeout)


def scripts_table(names=None, timeout: float = 300.0) -> int:
    """Print the table (``angr-ram bench --scripts``)."""
    harness = _harness()
    every = harness.names()
    names = names or every
    if unknown_name(names, every, "script"):
        return 2
    print(__doc__.strip().splitlines()[0])
    print(f"{'script':24} {'program':20} {'stock':>14} {'ram':>14} {'ratio':>6} {'RSS MB':>11}  note")
    ratios = []
    for name in names:
        program = harness.load(name).PROGRAM
        rows = {s: run(name, s, timeout) for s in SETTINGS}

        def cell(r):
            if r.get("killed"):
                return f"{'killed':>14}"
            if "seconds" not in r:
                return f"{'failed':>14}"
            return f"{'ok' if r['ok'] else 'WRONG':>5} {r['seconds']:7.1f} s"
        st, rm = rows["stock"], rows["ram"]
        ratio = ""
        if st.get("ok") and rm.get("ok"):
            q = rm["seconds"] / max(st["seconds"], 1e-3)
            ratios.append(q)
            ratio = f"{q:.2f}"
        rss = f"{st.get('rss_mb', '-')}/{rm.get('rss_mb', '-')}"
        note = "; ".join(x for x in (st.get("error") and f"stock {st['error']}", rm.get("error") and
                                     f"ram {rm['error']}", st.get("failed"), rm.get("failed"),
                                     rm.get("not_honoured") and f"not honoured: {', '.join(rm['not_honoured'])}") if x)
        print(f"{name:24} {program:20} {cell(st)} {cell(rm)} {ratio:>6} {rss:>11}  {note}", flush=True)
    if ratios:
        gm = math.exp(sum(math.log(q) for q in ratios) / len(ratios))
        print(f"geometric mean ram/stock over {len(ratios)} scripts both answer: {gm:.2f}; "
              f"max {max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])

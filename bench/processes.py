"""Processes and libc benchmark: programs whose values travel through other processes, the
environment, the shell, shared memory, scanf's and libm's floating point (the logic-bomb
categories "covert propagation", "parallel program", "external functions", "floating point"),
driven as a user's script: ``entry_state`` with stdin one wide ``claripy.BVS`` whose bytes are in
an alphabet, angr's default options, ``simgr.run()`` under a time limit, with ``stock`` angr and
with ``RelocatableMemory()`` attached (``ram``). Each run is a child process. Per program and
setting: seconds (``+``: stopped by the limit), finished paths, native outcomes found over the
alphabet's domain, outcomes the native program never gives, error paths, tests whose native
replay contradicts them, and the stubs the paths called (angr-ram records them; stock: n/a)."""

from __future__ import annotations

import itertools
import json
import sys
import time

from . import child_result, sample_path, unknown_name
from .native import run_inputs

# name: (binary, stdin alphabet, stdin bytes, what)
PROGRAMS = {
    "children": ("children_O2", b"7a!:", 3, "fork twice, waitpid's status, a pipe, the shared stdin offset"),
    "childfile": ("childfile_O2", b"0379", 2, "a child writes a file its parent reads (argv[1])"),
    "sharedseg": ("sharedseg_O2", b"x7a", 2, "System V shared memory from a child to its parent"),
    "shellecho": ("shellecho_O2", b"71a", 2, "popen and system of echo, read back"),
    "envvars": ("envvars_O2", b"qckz", 3, "setenv, putenv, unsetenv, clearenv, getenv"),
    "floatscan": ("floatscan_O2", b"3.e\n", 3, "scanf %2f %lf, sscanf %Lg"),
    "mathparts": ("mathparts_O2", b"0259", 3, "frexp, modf, ldexp, sincos, lgamma, ilogb, lround, remquo"),
}
ARGV = {"childfile"}            # the input is argv[1], stdin empty
SETTINGS = ("stock", "ram")


def _domain(name: str) -> list[bytes]:
    _, alphabet, n, _ = PROGRAMS[name]
    return [bytes(t) for t in itertools.product(alphabet, repeat=n)]


def _child(binary: str, name: str, setting: str, timeout: float) -> None:
    import angr
    import claripy

    import angr_ram
    from angr_ram.run.outcomes import path_outcomes
    from angr_ram.run.replay import replay
    from angr_ram.run.runner import summarize

    _, alphabet, n, _ = PROGRAMS[name]
    proj = angr.Project(binary, auto_load_libs=False)
    var = claripy.BVS("input", 8 * n)
    if name in ARGV:
        st = proj.factory.entry_state(args=[binary, var], stdin=angr.SimFileStream("stdin", content=b"", size=0,
                                                                                  has_end=True))
    else:
        st = proj.factory.entry_state(stdin=angr.SimFileStream("stdin", content=var, size=n, has_end=True))
    for byte in var.chop(8):
        st.solver.add(claripy.Or(*[byte == c for c in alphabet]))
    simgr = proj.factory.simulation_manager(st)
    t0 = time.perf_counter()
    if setting == "ram":
        tech = simgr.use_technique(angr_ram.RelocatableMemory())
        with tech.guarded(timeout=timeout):
            simgr.run()
    else:
        tech = None
        while simgr.active and time.perf_counter() - t0 < timeout:
            simgr.step()
    stopped = bool(simgr.active)
    outcomes = set()
    for s in simgr.deadended:
        outcomes |= path_outcomes(s)
    seconds = time.perf_counter() - t0
    r = summarize(simgr, tech, tests=True)
    runs = replay(r.tests, binary, jobs=2)
    print(json.dumps({"seconds": seconds, "stopped": stopped, "paths": len(simgr.deadended),
                      "errors": len(r.errors) + len(simgr.errored), "tests": len(runs),
                      "mismatches": sum(x.status != "ok" for x in runs), "stubs": sorted(r.stubs),
                      "outcomes": sorted((c, o.hex()) for c, o in outcomes if c is not None)}))


def run(binary: str, name: str, setting: str, timeout: float) -> dict:
    """One run in a child process, killed 60 s after its limit."""
    return child_result([sys.executable, "-m", "bench.processes", binary, name, setting, str(timeout)],
                        timeout + 60)


def processes_table(names=None, timeout: float = 120.0, samples_dir=None) -> int:
    """Print the table (``angr-ram bench --processes``)."""
    names = names or list(PROGRAMS)
    if unknown_name(names, PROGRAMS, "program"):
        return 2
    print(__doc__.strip().splitlines()[0])
    print(f"{'program':10} {'setting':6} {'time s':>8} {'paths':>6} {'found':>7} {'wrong':>5} {'errors':>6} "
          f"{'mismatch':>8}  stubs")
    for name in names:
        binary = sample_path(PROGRAMS[name][0], samples_dir)
        truth = set(run_inputs(binary, _domain(name), target="argv1" if name in ARGV else "stdin"))
        for setting in SETTINGS:
            r = run(binary, name, setting, timeout)
            if "outcomes" not in r:
                print(f"{name:10} {setting:6} {'killed' if r.get('killed') else r.get('failed')}", flush=True)
                continue
            mark = "+" if r["stopped"] else " "
            mism = f"{r['mismatches']}/{r['tests']}"
            print(f"{name:10} {setting:6} {r['seconds']:7.1f}{mark} {r['paths']:6} "
                  f"{len(r['outcomes'] & truth):>3}/{len(truth):<3} {len(r['outcomes'] - truth):5} {r['errors']:6} "
                  f"{mism:>8}  {(','.join(r['stubs']) or '-') if setting == 'ram' else 'n/a'}", flush=True)
    print("found = native outcomes found over the alphabet's domain; wrong = outcomes the native program never "
          "gives; mismatch = tests whose native replay contradicts them / tests")
    return 0


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))

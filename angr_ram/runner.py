"""Run a binary with symbolic stdin under stock angr or angr-ram and collect what every path did."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

import angr
import claripy

from .errors import UnsupportedBinary
from .outcomes import path_outcomes
from .technique import ERROR_STASH, RelocatableMemory, stats

STATE_OPTIONS = {
    angr.options.ZERO_FILL_UNCONSTRAINED_REGISTERS,
    angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY,
}


@dataclass
class RunResult:
    """Outcomes of one exploration: (exit code, stdout) pairs, error paths and statistics."""

    outcomes: set = field(default_factory=set)
    errors: list = field(default_factory=list)       # (kind, message, stdin)
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0
    timed_out: bool = False


def load_project(binary: str) -> angr.Project:
    """Load an x86-64 ELF for analysis; raises UnsupportedBinary with a clear reason otherwise."""
    if not os.path.isfile(binary):
        raise UnsupportedBinary(f"{binary}: no such file")
    with open(binary, "rb") as f:
        magic = f.read(4)
    if magic != b"\x7fELF":
        raise UnsupportedBinary(f"{binary}: not an ELF file")
    logging.getLogger("angr").setLevel(logging.ERROR)
    logging.getLogger("cle").setLevel(logging.ERROR)
    try:
        proj = angr.Project(binary, auto_load_libs=False)
    except Exception as e:  # noqa: BLE001 - cle raises many kinds; all mean "cannot load"
        raise UnsupportedBinary(f"{binary}: cannot be loaded ({e})") from e
    if proj.arch.name != "AMD64":
        raise UnsupportedBinary(f"{binary}: angr-ram supports x86-64 binaries, this one is {proj.arch.name}")
    return proj


def make_state(proj: angr.Project, stdin_bytes: int):
    """An entry state whose stdin is ``stdin_bytes`` unconstrained symbolic bytes, one variable per
    byte (so constraints on different bytes stay independent for slicing and caching)."""
    parts = [claripy.BVS(f"stdin_{k}", 8) for k in range(stdin_bytes)]
    data = parts[0] if stdin_bytes == 1 else claripy.Concat(*parts)
    stdin = angr.SimFileStream(name="stdin", content=data, size=stdin_bytes, has_end=True)
    return proj.factory.entry_state(stdin=stdin, add_options=set(STATE_OPTIONS))


def explore(binary: str, stdin_bytes: int, engine: str = "ram", model: str = "fork",
            symbolic_bases: bool = True, timeout: float | None = None, progress=None,
            merge: str | None = None, merge_points=(), merge_validate: bool = False,
            merge_incremental: bool | None = None, max_states: int | None = None, **options) -> RunResult:
    """Explore ``binary`` completely; ``engine`` is "ram" (angr-ram) or "stock" (plain angr).

    ``merge`` (a :class:`~angr_ram.merging.QuantifiedMerging` mode) merges the states leaving the
    functions ``merge_points`` (``merge_incremental``: also inside them, section 4). The run stops
    (``timed_out``) after ``timeout`` seconds or when more than ``max_states`` states are active. ``options`` go to :class:`RelocatableMemory` (``reuse_segments``,
    ``split``, ...).
    """
    proj = load_project(binary)
    state = make_state(proj, stdin_bytes)
    simgr = proj.factory.simulation_manager(state)
    tech = None
    if engine == "ram":
        tech = simgr.use_technique(RelocatableMemory(model=model, symbolic_bases=symbolic_bases, **options))
    elif engine == "stock":
        from .plugins.libc import RamLibcStartMain
        proj.hook_symbol("__libc_start_main", RamLibcStartMain(), replace=True)
    else:
        raise ValueError(f"unknown engine {engine!r}")
    if merge is not None:
        from .merging import QuantifiedMerging
        simgr.use_technique(QuantifiedMerging(merge, merge_points, validate=merge_validate,
                                                 incremental=merge_incremental))
    t0 = time.perf_counter()
    res = RunResult()
    while simgr.active:
        simgr.step()
        if progress is not None:
            progress(simgr)
        if timeout is not None and time.perf_counter() - t0 > timeout:
            res.timed_out = True
            break
        if max_states is not None and len(simgr.active) > max_states:
            res.timed_out = True          # the run is stopped like a timeout (state explosion)
            break
    res.seconds = time.perf_counter() - t0
    if tech is not None:
        tech.close()
    for s in simgr.deadended:
        res.outcomes |= path_outcomes(s)
    for s in simgr.stashes.get(ERROR_STASH, []):
        e = s.ram.error
        res.errors.append((e.kind, e.message, e.stdin))
    for rec in simgr.errored:
        res.errors.append(("angr-error", str(rec.error), None))
    res.stats = stats(simgr)
    res.stats["paths"] = len(simgr.deadended)
    return res

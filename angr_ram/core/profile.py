"""Where a run's time goes (``RelocatableMemory(profile=True)``, ``angr-ram run --profile``).

Like klee-stats' breakdown: the time of every step is split into angr's engine and angr-ram's
layers, each counted *exclusively* (a layer's time without the time of the layers it calls):

* ``memory``: the relocatable memory layer's loads and stores (routing, faults, plans);
* ``resolution``: finding the objects a symbolic pointer may reach;
* ``store``: reads and writes of the segment-offset-plane object stores;
* ``substitution``: replacing base addresses by their hidden concrete addresses;
* ``cache``: the query cache (slicing, canonical keys, model translation);
* ``solver``: the solver frontend around z3 (claripy's own frontends included);
* ``seeding``: candidate models and let-value checks tried before z3 (:mod:`.plugins.seeding`);
* ``z3``: inside ``z3.Solver.check``;
* ``engine``: the rest of each step (angr's VEX engine, SimProcedures, successors).

The z3 time is also attributed to the *site* being stepped: the SimProcedure hooked at the state's
address, else the basic block's address. The timing wrappers are the ``profile`` patch set
(:mod:`angr_ram.run.timing`; z3's is :mod:`angr_ram.solver.z3_check`), gated on the active run's profile:
runs without ``profile=True`` pay one context-variable read per wrapped call.
"""

from __future__ import annotations

import time
from collections import defaultdict

from angr_ram.core.scope import current

SECTIONS = ("engine", "memory", "resolution", "store", "substitution", "cache", "solver", "seeding", "z3")


class Profile:
    """Exclusive seconds and calls per section, and z3 seconds per site, of one run."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.z3_by_site: dict[str, float] = defaultdict(float)
        self.z3_calls_by_site: dict[str, int] = defaultdict(int)
        self.site = "outside steps"
        self._stack: list[list] = []      # [section, seconds of its timed children]

    def enter(self, section: str) -> None:
        """Start timing ``section`` (nested in the section entered before it)."""
        self._stack.append([section, 0.0])

    def leave(self, elapsed: float) -> None:
        """Stop the innermost section, which took ``elapsed`` seconds including its children."""
        section, children = self._stack.pop()
        self.seconds[section] += elapsed - children
        self.calls[section] += 1
        if self._stack:
            self._stack[-1][1] += elapsed
        if section == "z3":
            self.z3_by_site[self.site] += elapsed
            self.z3_calls_by_site[self.site] += 1

    def as_dict(self, top: int = 10) -> dict:
        """Seconds per section, and the ``top`` sites by z3 time (seconds, calls)."""
        sites = sorted(self.z3_by_site.items(), key=lambda kv: -kv[1])[:top]
        return {"seconds": {s: round(self.seconds.get(s, 0.0), 3) for s in SECTIONS},
                "calls": {s: self.calls.get(s, 0) for s in SECTIONS},
                "z3_by_site": [(site, round(t, 3), self.z3_calls_by_site[site]) for site, t in sites]}

    def report(self, top: int = 10) -> str:
        """A printable table (:func:`report`)."""
        return report(self.as_dict(top))


def report(d: dict) -> str:
    """A printable table of a profile dict (:meth:`Profile.as_dict`): sections by exclusive time,
    then the sites by z3 time."""
    total = sum(d["seconds"].values()) or 1.0
    lines = [f"{'section':14} {'seconds':>9} {'share':>6} {'calls':>9}"]
    for s in sorted(SECTIONS, key=lambda s: -d["seconds"][s]):
        lines.append(f"{s:14} {d['seconds'][s]:9.2f} {100 * d['seconds'][s] / total:5.1f}% {d['calls'][s]:9d}")
    lines.append(f"{'top sites by z3 time':40} {'seconds':>9} {'checks':>7}")
    for site, t, n in d["z3_by_site"]:
        lines.append(f"{site:40} {t:9.2f} {n:7d}")
    return "\n".join(lines)


def active() -> Profile | None:
    """The profile of the active run, if it is being profiled."""
    scope = current()
    return scope.profile if scope is not None else None


def timed(section: str):
    """A patch replacement that times its call as ``section`` of the active profile."""
    def replacement(original, *args, **kwargs):
        prof = active()
        if prof is None:
            return original(*args, **kwargs)
        prof.enter(section)
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            prof.leave(time.perf_counter() - t0)
    replacement.__name__ = f"timed_{section}"
    return replacement


def step_site(state) -> str:
    """The site a step of ``state`` runs: the hooked SimProcedure's name, or the block's address
    and symbol."""
    proj = state.project
    addr = state.addr
    if proj is None:
        return f"block {addr:#x}"
    if proj.is_hooked(addr):
        return proj.hooked_by(addr).display_name
    where = proj.loader.describe_addr(addr).split(" in ")[0]
    return f"block {addr:#x} ({where})"


__all__ = ["SECTIONS", "Profile", "report", "step_site"]

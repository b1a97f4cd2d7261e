"""The bits of an input variable that a set of constraints reads.

A script's input is often one wide ``claripy.BVS`` (a 48-bit stdin) whose bytes the program reads
one by one: the path's constraints mention a few of them through ``Extract``, the rest are free.
Small-domain evaluation (:mod:`.enumeration`) decides such a slice by its effective bits, but a model
of the whole variable is beyond it. :func:`read_windows` gives the disjoint bit ranges the
constraints read, so that a model can be asked for those windows alone (the other bits are free:
0 in a test's input, as for any unconstrained byte).
"""

from __future__ import annotations

from angr_ram.solver.evaluator import dag_nodes

MAX_NODES = 200_000      # nodes walked per call; a larger slice is treated as reading everything


def _window_of(x, name: str) -> tuple[int, int] | None:
    """(lo, hi) when ``x`` is an ``Extract`` of the variable ``name``."""
    if x.op == "Extract" and x.args[2].op == "BVS" and x.args[2].args[0] == name:
        return x.args[1], x.args[0]
    return None


def read_windows(constraints, name: str, width: int) -> list[tuple[int, int]] | None:
    """Disjoint ``(hi, lo)`` bit ranges (high first) of the variable ``name`` (``width`` bits) that
    ``constraints`` read through ``Extract``; None when one reads it whole (or the walk is too
    large), [] when none mentions it."""
    ranges: list[tuple[int, int]] = []

    def below(x):       # not under a node that does not mention it, nor under an Extract of it
        if name not in x.variables or _window_of(x, name) is not None:
            return ()
        return [a for a in x.args if hasattr(a, "op")]

    walked = 0
    for c in constraints:
        for x in dag_nodes(c, below):
            walked += 1
            if walked > MAX_NODES:
                return None
            if x.op == "BVS" and x.args[0] == name:
                return None         # used whole (not under an Extract)
            w = _window_of(x, name)
            if w is not None:
                ranges.append(w)
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1]:       # overlapping (adjacent bytes stay apart)
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    if len(merged) == 1 and merged[0] == [0, width - 1]:
        return None
    return [(hi, lo) for lo, hi in reversed(merged)]


def window_groups(constraints, leaves: dict) -> list[tuple[list, list[tuple[str, int, int]]]] | None:
    """``constraints`` split into groups that share no window: each group with the windows
    ``(name, hi, lo)`` it reads (a variable of at most 8 bits, or one read whole, is one window).
    Bytes of one wide input that separate constraints read apart from each other (a let-bound
    table lookup per byte) are separate groups, each small enough for small-domain evaluation.
    None when a variable wider than 64 bits is read whole. ``leaves``: name -> the variable."""
    windows: dict[str, list[tuple[int, int]]] = {}
    for name, v in leaves.items():
        w = read_windows(constraints, name, v.length) if v.length > 8 else None
        if w is None:
            if v.length > 64:
                return None
            w = [(v.length - 1, 0)]
        windows[name] = w
    keys = [(n, hi, lo) for n, ws in windows.items() for hi, lo in ws]
    index = {k: i for i, k in enumerate(keys)}
    parent = list(range(len(keys)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    touched = []
    for c in constraints:
        mine = []
        for n in c.variables & windows.keys():
            ws = windows[n]
            if len(ws) == 1:
                mine.append(index[(n, *ws[0])])
                continue
            for hi, lo in read_windows([c], n, leaves[n].length) or ws:
                mine += [index[(n, whi, wlo)] for whi, wlo in ws if wlo <= lo and hi <= whi]
        for u in mine[1:]:
            parent[root(u)] = root(mine[0])
        touched.append(mine)
    groups: dict[int, tuple[list, set]] = {}
    for c, mine in zip(constraints, touched, strict=True):
        if mine:
            g = groups.setdefault(root(mine[0]), ([], set()))
            g[0].append(c)
            g[1].update(mine)
    return [(cons, [keys[u] for u in sorted(us)]) for cons, us in groups.values()]

"""Runs of a table whose entries are an affine function of their offset.

A read at a symbolic offset selects one of a table's entries: ``If(off == k0, v0, If(off == k1,
v1, ...))``, one arm per entry. Tables filled by a loop are often affine in the offset over long
runs: ``a[i] = i % 256`` over 8 KiB is ``i``'s low byte everywhere, ``a[i] = i % 251`` is ``i -
251 j`` on 33 runs, a constant fill is one run. Over such a run, the selection's arms equal one
arm ``k0 <= off <= k1 -> v0 + s * (off - k0) / d`` (entries ``d`` bytes apart, values ``s``
apart, modulo the value's width), which z3 decides without looking at 8,192 equalities (KLEE's
constant-array optimisation: a lookup into a table ``i % 256`` checked 16 times, minutes -> one
query each). The rewrite is exact: an offset inside a run's range that is not a key (not a
multiple of ``d`` past ``k0``) is excluded by the arm's condition, as the equalities excluded it.
"""

from __future__ import annotations

from typing import NamedTuple

import claripy

# runs shorter than this stay equalities (an equality per entry is what z3 solves fastest)
RUN_MIN = 8


class Run(NamedTuple):
    """Keys ``keys[i:j]`` (``d`` apart) whose values are ``v0 + s * n`` (mod ``2 ** width``)."""
    i: int
    j: int
    d: int
    v0: int
    s: int


def concrete_values(vals: list) -> list[int] | None:
    """The entries' ints if every one is a concrete bit-vector of one width, else None."""
    if not vals:
        return None
    width = vals[0].length
    out = []
    for v in vals:
        if v.op != "BVV" or v.length != width:
            return None
        out.append(v.args[0])
    return out


def affine_runs(keys: list[int], ints: list[int], width: int) -> list[Run]:
    """Maximal runs (at least :data:`RUN_MIN` keys, keys a power of two apart) over which the
    values are affine in the key, found greedily from the left."""
    mask = (1 << width) - 1
    runs, i, n = [], 0, len(keys)
    while i < n - 1:
        d = keys[i + 1] - keys[i]
        s = (ints[i + 1] - ints[i]) & mask
        j = i + 1
        if d & (d - 1) == 0:
            while j + 1 < n and keys[j + 1] - keys[j] == d and (ints[j + 1] - ints[j]) & mask == s:
                j += 1
        if j + 1 - i >= RUN_MIN and d & (d - 1) == 0:
            runs.append(Run(i, j + 1, d, ints[i], s))
            i = j + 1
        else:
            i += 1
    return runs


def run_condition(off, keys: list[int], r: Run):
    """``off`` is one of the run's keys."""
    lo, hi = keys[r.i], keys[r.j - 1]
    cond = claripy.And(claripy.UGE(off, lo), claripy.ULE(off, hi))
    if r.d > 1:
        shift = r.d.bit_length() - 1
        cond = claripy.And(cond, claripy.Extract(shift - 1, 0, off - lo) == 0)
    return cond


def run_value(off, keys: list[int], r: Run, width: int):
    """The run's entry at ``off`` (assuming :func:`run_condition`)."""
    if r.s == 0:
        return claripy.BVV(r.v0, width)
    n = off - keys[r.i]
    if r.d > 1:
        n = claripy.LShR(n, r.d.bit_length() - 1)
    if n.length > width:
        n = claripy.Extract(width - 1, 0, n)
    elif n.length < width:
        n = claripy.ZeroExt(width - n.length, n)
    return claripy.BVV(r.v0, width) + (n if r.s == 1 else claripy.BVV(r.s, width) * n)

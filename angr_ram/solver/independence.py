"""Independence slicing at byte granularity (KLEE's independent-element sets, for claripy ASTs).

A query ``SAT(constraints /\\ goals)`` only needs the constraints connected to the goals through
shared inputs; the rest is satisfiable on its own (it is a satisfiable path's constraint set) and
independent of the goals. Inputs are tracked per *byte of a variable*, not per variable: angr
scripts commonly give stdin as one wide symbol (``claripy.BVS("stdin", 16)``), and then the
constraints on its first byte (which branch of an allocation history was taken) and those on its
second byte (an index) are independent although they share a variable. A variable used other than
through an ``Extract`` of its own bits depends on all its bytes.

Base addresses (``ignore``) do not connect constraints: under substitution they are constants.
"""

from __future__ import annotations

import claripy

from angr_ram.core.dag import fold

_LEAVES = ("BVS", "BoolS", "FPS", "StringS")


class Footprints:
    """The input bytes each AST depends on: a frozenset of ``(variable, byte)`` pairs, memoized by
    node hash (the memo is cleared when it passes ``limit`` entries)."""

    def __init__(self, limit: int = 200_000):
        self._memo: dict = {}
        self._outside: dict = {}
        self.limit = limit

    def of(self, e) -> frozenset:
        """``(name, byte)`` pairs of the variable bytes ``e`` reads (byte 0 = bits 7..0)."""
        if not isinstance(e, claripy.ast.Base) or not e.variables:
            return frozenset()
        if len(self._memo) > self.limit:
            self._memo.clear()

        def shortcut(node):
            if not node.variables:
                return frozenset()
            if node.op in _LEAVES:
                return _whole(node)
            if node.op == "Extract" and node.args[2].op == "BVS":
                hi, lo, leaf = node.args
                name = leaf.args[0]
                return frozenset((name, b) for b in range(lo // 8, hi // 8 + 1))
            return None

        def combine(node, value_of):
            out = frozenset()
            for a in node.args:
                if isinstance(a, claripy.ast.Base) and a.variables:
                    out = out | value_of(a)
            return out
        return fold(e, combine, self._memo, shortcut)

    def outside(self, e, ignore) -> frozenset:
        """The footprint of ``e`` without the bytes of variables in ``ignore`` (memoized by node
        and by which of its variables are ignored: the same constraint is sliced in every query)."""
        fp = self.of(e)
        dropped = e.variables & ignore
        if not dropped:
            return fp
        key = (e.hash(), frozenset(dropped))
        out = self._outside.get(key)
        if out is None:
            if len(self._outside) > self.limit:
                self._outside.clear()
            out = self._outside[key] = frozenset(a for a in fp if a[0] not in dropped)
        return out


def _whole(leaf) -> frozenset:
    name = leaf.args[0]
    width = leaf.length if leaf.op == "BVS" and leaf.length else 8
    return frozenset((name, b) for b in range(max(1, (width + 7) // 8)))


_DEFAULT = Footprints()


def slice_constraints(constraints, goals, ignore, footprints: Footprints | None = None) -> list:
    """The constraints that share (non-``ignore``) input bytes with ``goals``, transitively."""
    fps = footprints or _DEFAULT
    if not goals:
        return list(constraints)
    want: set = set()
    for g in goals:
        want |= fps.outside(g, ignore)
    rest = [(c, fps.outside(c, ignore)) for c in constraints]
    out, changed = [], True
    while changed:
        changed = False
        keep = []
        for c, vs in rest:
            if not vs.isdisjoint(want):
                want |= vs
                out.append(c)
                changed = True
            else:
                keep.append((c, vs))
        rest = keep
    return out


def components(constraints, ignore, footprints: Footprints | None = None) -> list[list]:
    """Independent groups of constraints (no shared non-``ignore`` input byte between groups)."""
    fps = footprints or _DEFAULT
    groups: list[tuple[set, list]] = []
    for c in constraints:
        vs = set(fps.outside(c, ignore))
        merged_vars, merged = vs, [c]
        rest = []
        for gv, gc in groups:
            if not gv.isdisjoint(vs):
                merged_vars |= gv
                merged = gc + merged
            else:
                rest.append((gv, gc))
        groups = rest + [(merged_vars, merged)]
    return [gc for _, gc in groups]


__all__ = ["Footprints", "components", "slice_constraints"]

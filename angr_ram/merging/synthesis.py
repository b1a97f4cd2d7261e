"""Formula and term synthesis for pattern-based merging (section 3.3 of the quantified-merging paper).

Given instances ``psi_1 .. psi_p`` of one formula and the numbers ``d_1 .. d_p`` they belong to,
find a template ``phi(x)`` with ``phi[d_l / x]`` syntactically equal to ``psi_l``. The instances
must be equal up to *holes*: numeric constants, and variables of one indexed family (claripy
names ``<prefix>_<index>_<counter>_<bits>``, e.g. the stdin bytes ``stdin_3_..._8``). Every hole
must be a linear function ``a*x + b`` of ``d`` (a constant, or the family member at that index);
``a`` and ``b`` are solved exactly from two instances and checked on all.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import claripy

from angr_ram.core.dag import count_nodes, fold

_FAMILY = re.compile(r"^(.*)_(\d+)_(\d+)_(\d+)$")
_HOLES = itertools.count()


def family_of(name: str) -> tuple[str, int, int] | None:
    """``(prefix, index, bits)`` of a variable named ``<prefix>_<index>_<counter>_<bits>``."""
    m = _FAMILY.match(name)
    if m is None:
        return None
    return m.group(1), int(m.group(2)), int(m.group(4))


def linear_fit(ds: list[int], values: list[int], bits: int) -> tuple[int, int] | None:
    """``(a, b)`` with ``a*d + b == value (mod 2**bits)`` for every pair, or None."""
    mask = (1 << bits) - 1
    pairs = sorted(set(zip(ds, values, strict=True)))
    if len({d for d, _ in pairs}) != len(pairs):
        return None                       # one d with two values
    if len(pairs) == 1:
        return 0, pairs[0][1] & mask
    (d1, v1), (d2, v2) = pairs[0], pairs[1]
    signed = [(v if v < (1 << (bits - 1)) else v - (1 << bits)) for _, v in pairs[:2]]
    diff = signed[1] - signed[0]
    if diff % (d2 - d1):
        diff = ((v2 - v1) & mask)
        if diff % (d2 - d1):
            return None
    a = diff // (d2 - d1)
    b = (v1 - a * d1) & mask
    if all((a * d + b) & mask == v & mask for d, v in pairs):
        return a, b
    return None


@dataclass
class Hole:
    """A position where the instances differ: a constant or a family member, linear in ``x``."""

    placeholder: claripy.ast.Base      # the BVS standing for the hole in the template
    kind: str                          # "const" | "var"
    a: int
    b: int
    bits: int
    family: str | None = None          # variable prefix for kind "var"


@dataclass
class Template:
    """``phi(x)``: a claripy formula over hole placeholders."""

    body: claripy.ast.Base
    holes: list[Hole]

    def instantiate(self, d: int, members: dict[tuple[str, int, int], claripy.ast.Base]):
        """``phi[d / x]`` as a claripy formula (family members looked up in ``members``), or None
        when a member at that index is unknown."""
        repl = {}
        for h in self.holes:
            v = (h.a * d + h.b) & ((1 << h.bits) - 1) if h.kind == "const" else h.a * d + h.b
            if h.kind == "const":
                repl[h.placeholder.hash()] = claripy.BVV(v, h.bits)
            else:
                m = members.get((h.family, v, h.bits))
                if m is None:
                    return None
                repl[h.placeholder.hash()] = m
        if not repl:
            return self.body
        return rebuild(self.body, repl, {h.placeholder.args[0] for h in self.holes})

    def size(self) -> int:
        """AST nodes of the template (holes count as leaves)."""
        return count_nodes(self.body)


def rebuild(e, repl: dict, names: set):
    """``e`` with the sub-expressions whose hash is in ``repl`` replaced (only nodes that contain
    one of the variables ``names`` are rebuilt)."""
    def shortcut(node):
        r = repl.get(node.hash())
        if r is not None:
            return r
        return node if node.variables.isdisjoint(names) else None

    def combine(node, value_of):
        return node.make_like(node.op, tuple(value_of(a) if isinstance(a, claripy.ast.Base) else a
                                             for a in node.args))
    return fold(e, combine, {}, shortcut)


def synthesize(instances: list, ds: list[int]) -> Template | None:
    """A template matching ``instances[l]`` at ``ds[l]``, or None (shapes differ, or a hole is not
    linear in ``d``)."""
    if not instances:
        return None
    memo: dict[tuple, claripy.ast.Base] = {}
    holes: list[Hole] = []

    def walk(nodes):
        key = tuple(n.hash() for n in nodes)
        if key in memo:
            return memo[key]
        first = nodes[0]
        if all(n is first for n in nodes):
            memo[key] = first
            return first
        if any(n.op != first.op or n.length != first.length or len(n.args) != len(first.args) for n in nodes):
            raise _Mismatch
        if first.op == "BVV":
            vals = [n.args[0] for n in nodes]
            fit = linear_fit(ds, vals, first.length)
            if fit is None:
                raise _Mismatch
            out = _hole(holes, "const", fit, first.length, None)
        elif first.op == "BVS":
            fams = [family_of(n.args[0]) for n in nodes]
            if any(f is None for f in fams) or len({(f[0], f[2]) for f in fams}) != 1:
                raise _Mismatch
            fit = linear_fit(ds, [f[1] for f in fams], 64)
            if fit is None or fit[0] >= (1 << 63):
                raise _Mismatch
            a, b = fit
            if b >= (1 << 63):
                raise _Mismatch
            out = _hole(holes, "var", (a, b), first.length, fams[0][0])
        elif first.op in ("BoolV", "BoolS", "FPV", "FPS", "StringV", "StringS"):
            raise _Mismatch
        else:
            args = []
            for pos, a in enumerate(first.args):
                if isinstance(a, claripy.ast.Base):
                    args.append(walk([n.args[pos] for n in nodes]))
                elif any(n.args[pos] != a for n in nodes):
                    raise _Mismatch
                else:
                    args.append(a)
            out = first.make_like(first.op, tuple(args), simplify=False)
        memo[key] = out
        return out

    try:
        body = walk(list(instances))
    except _Mismatch:
        return None
    return Template(body, holes)


class _Mismatch(Exception):
    pass


def _hole(holes: list, kind: str, fit: tuple[int, int], bits: int, family: str | None):
    for h in holes:                       # the same linear term at two places: one hole
        if (h.kind, h.a, h.b, h.bits, h.family) == (kind, fit[0], fit[1], bits, family):
            return h.placeholder
    ph = claripy.BVS(f"qm_hole_{next(_HOLES)}", bits, explicit_name=True)
    holes.append(Hole(ph, kind, fit[0], fit[1], bits, family))
    return ph

"""Narrow cuts: small-domain solving for wide inputs that reach the lookups through few bits.

The small-domain layer (:mod:`.enumeration`) evaluates a slice over every assignment of its free
variables, so it handles at most :data:`~.evaluator.MAX_BITS` free input bits: two input bytes.
A user's program often folds wider inputs into a narrow index first (an 11-bit index xor-ed from
four bytes, a hash reduced modulo a table size), and the table lookups that make z3 slow see only
that index. Then the slice depends on the inputs only through a few narrow sub-expressions, a
*cut* of the expression DAG:

* every occurrence of an input variable lies inside an input-only node (one that mentions no
  let-bound symbol) reached from the slice's roots (its constraints, the lets' definitions, the
  query's expressions) through nodes that mention lets;
* of each such node, :func:`_cut_of` keeps the narrowest set of sub-nodes through which all its
  input bits flow (fewest *effective* bits: constant parts of concatenations, zero extensions and
  masks carry none).

The slice is then evaluated over the *joint image* of the cut nodes (every tuple of values they can
take together, under the constraints that mention inputs alone) instead of over the inputs. The
image is computed exactly, never sampled: nodes over disjoint variables combine by products
(``x ^ y`` over independent ``x`` and ``y`` takes every ``a ^ b``), nodes that share variables are
enumerated together over those variables when they have at most :data:`MAX_JOINT_BITS` bits.
Anything else (a component too wide to enumerate, an image over :data:`MAX_ROWS` rows) leaves the
query to z3, as before. The answers are exact: a satisfying row is a value tuple that some input
produces, so satisfiability, value sets and extrema are those of the inputs.
"""

from __future__ import annotations

import claripy

from angr_ram.core.scope import LRU, memo
from angr_ram.solver.evaluator import LET_PREFIX, dag_nodes

MAX_CUT_BITS = 16        # effective bits of the cut nodes together (rows of the evaluation, at most)
MAX_ROWS = 1 << 16       # rows of the joint image
MAX_JOINT_BITS = 22      # input bits enumerated together where nodes share variables
MAX_PRODUCT = 1 << 20    # value pairs combined when an operation's operands are independent
MAX_IMAGE = 1 << 18      # values of one node's image
MAX_PORTS = 64           # terms of a port search (:func:`_ports`)
MAX_PORT_STEPS = 512     # replacements of a port search


class NoCut(Exception):
    """The slice has no narrow cut whose image this module computes exactly."""


def _is_let(name: str) -> bool:
    return name.startswith(LET_PREFIX)


def _input_only(x) -> bool:
    v = x.variables
    return bool(v) and not any(_is_let(n) for n in v)


def effective_bits(x) -> int:
    """An upper bound of log2 of the number of values ``x`` takes: its width, less the bits that
    concatenated constants, zero extensions and constant masks fix."""
    return _eff(x, memo("narrow_cut.eff", lambda: LRU(65536)))


_COUNTED = LRU(65536)   # chains of if-then-else over constants cut as themselves: hash -> bits of their choices


def _eff(x, cache) -> int:
    if x.op in ("BoolV", "BVV"):
        return 0
    if isinstance(x, claripy.ast.Bool):
        return 1
    if x.op == "If":         # counted by :func:`_narrowest` (a function of the expression alone), else its width
        counted = _COUNTED.lookup(x.hash())
        return x.length if counted is None else counted
    h = x.hash()
    r = cache.lookup(h)
    if r is not None:
        return r
    op, n = x.op, x.length
    if op == "Concat":
        r = sum(_eff(a, cache) for a in x.args)
    elif op == "ZeroExt":
        r = _eff(x.args[1], cache)
    elif op == "SignExt":
        r = _eff(x.args[1], cache)
    elif op == "Extract":
        r = min(x.args[0] - x.args[1] + 1, _eff(x.args[2], cache))
    elif op == "__and__":
        r = n
        for a in x.args:
            r = min(r, bin(a.args[0]).count("1") if a.op == "BVV" else _eff(a, cache))
    elif op in ("__lshift__", "LShR") and x.args[1].op == "BVV":
        r = _eff(x.args[0], cache)
    elif op in ("__xor__", "__or__", "__add__", "__sub__"):
        r = sum(_eff(a, cache) for a in x.args)     # the operands' values, combined (an upper bound)
    elif op in ("__invert__", "__neg__", "Reverse"):
        r = _eff(x.args[0], cache)
    else:
        r = n
    r = min(r, n)
    cache.put(h, r)
    return r


def _choices(x, most: int = 1 << 12) -> set | None:
    """The constants an if-then-else chain over constants chooses among (None: an arm is not one,
    or the chain has more than ``most`` links and constants)."""
    out: set = set()
    for n, y in enumerate(dag_nodes(x, _links), 1):
        if y.op == "BVV":
            out.add(y.args[0])
        elif y.op != "If" or n > most:
            return None
    return out


def _links(y) -> tuple:
    return y.args[1:] if y.op == "If" else ()


def _children(x):
    return [a for a in x.args if hasattr(a, "op") and a.variables]


def _narrowest(x, cache) -> tuple[int, dict]:
    """(effective bits, nodes by hash) of the narrowest cut of the input-only node ``x``: ``x``
    itself or the union of its operands' cuts (shared sub-nodes counted once: the conditions of a
    table selection all test the same offset). A condition is cut below itself when that fits in
    :data:`MAX_CUT_BITS`: its one bit is narrow, but a selection has a condition per entry, all
    over one narrow offset. A chain of if-then-else over constants whose conditions have no narrow
    cut (a merged ``strtod`` result: one condition per text, over several bytes) is cut as itself,
    its effective bits counted from the constants it chooses among."""
    h = x.hash()
    r = cache.lookup(h)
    if r is not None:
        return r
    kids = _chain_parts(x) if x.op == "If" else _children(x) if x.op not in ("BVS", "BoolS") else []
    union: dict | None = {} if kids else None
    for k in kids:                  # (first: the operands' chains are counted before x's width is)
        union.update(_narrowest(k, cache)[1])
        if len(union) > 64:
            union = None
            break
    bits = None if union is None else sum(effective_bits(n) for n in union.values())
    if x.op == "If" and (bits is None or bits > 2 * MAX_CUT_BITS):
        leaves = _choices(x)
        if leaves is not None and (len(leaves) - 1).bit_length() < x.length:
            _COUNTED.put(h, (len(leaves) - 1).bit_length())
    r = own = (effective_bits(x), {h: x})
    if bits is not None and (bits < own[0] or (isinstance(x, claripy.ast.Bool) and bits <= MAX_CUT_BITS)):
        r = (bits, union)
    cache.put(h, r)
    return r


def _chain_parts(x, most: int = 1 << 12) -> list:
    """The conditions and the arms other than if-then-else of the chain ``x`` that mention
    variables (its operands, if the chain is longer than ``most``): a chain's inner links count no
    more than the conditions and arms they are built from."""
    parts: dict = {}
    for n, y in enumerate(dag_nodes(x, lambda y: y.args if y.op == "If" else ()), 1):
        if n > most:
            return _children(x)
        if y.op != "If" and hasattr(y, "op") and y.variables:
            parts[y.hash()] = y
    return list(parts.values())


def find_cut(roots, lets: dict) -> dict:
    """The cut nodes (hash -> node) of the slice with ``roots``; its let definitions are ``lets``.
    Input-only roots (constraints on inputs alone) are not cut: they restrict the image."""
    cache = memo("narrow_cut.narrowest", lambda: LRU(65536))
    below = memo("narrow_cut.below", lambda: LRU(65536))
    cut: dict = {}
    for x in [*roots, *lets.values()]:
        if hasattr(x, "op") and x.variables:
            cut.update(_cut_below(x, below, cache))
    return _share(cut, cache)


_NONE: dict = {}


def _cut_below(root, below, cache) -> dict:
    """The cut nodes under ``root`` (hash -> node; do not modify): the narrowest cuts of the
    input-only nodes reached through nodes that mention lets. Kept per node across queries: the
    let definitions of table lookups are selections of thousands of nodes, which every query of a
    path would otherwise walk again. Iterative (post-order), so a deep selection needs no deep
    Python recursion."""
    stack = [(root, False)]
    while stack:
        x, ready = stack.pop()
        h = x.hash()
        if below.lookup(h) is not None:
            continue
        if x.op == "BVS" and _is_let(x.args[0]):
            below.put(h, _NONE)
            continue
        if _input_only(x):
            below.put(h, _narrowest(x, cache)[1])
            continue
        kids = _children(x)
        if not ready:
            stack.append((x, True))
            stack.extend((k, False) for k in kids if below.lookup(k.hash()) is None)
            continue
        r = _NONE
        for k in kids:
            sub = below.lookup(k.hash())
            if sub is None:             # evicted meanwhile: computed again, recursively bounded by the cache
                sub = _cut_below(k, below, cache)
            if not sub or sub is r:
                continue
            if not r:
                r = sub
            elif not sub.keys() <= r.keys():
                r = {**r, **sub}
        below.put(h, r)
    return below.lookup(root.hash()) or _NONE


def _bits(nodes: dict) -> int:
    return sum(effective_bits(x) for x in nodes.values())


def _share(cut: dict, cache=None, steps: int = 256) -> dict:
    """``cut`` with nodes replaced by the cuts of their operands while that adds no bits: the
    narrowest cut of each node alone may keep both an index and the address computed from it
    (claripy flattens the index's concatenation into the address's), and one level down they meet."""
    cache = cache if cache is not None else memo("narrow_cut.narrowest", lambda: LRU(65536))
    changed = True
    while changed and steps > 0:
        changed = False
        for h in sorted(cut, key=lambda k: -cut[k].depth):
            node = cut.get(h)
            if node is None or node.op in ("BVS", "BoolS"):
                continue
            kids = _children(node)
            if not kids:
                continue
            below: dict = {}
            for k in kids:
                below.update(_narrowest(k, cache)[1])
            rest = {k: v for k, v in cut.items() if k != h}
            new = {**rest, **below}
            steps -= 1
            if h not in below and _bits(new) <= _bits(cut):
                cut = new
                changed = True
                break
            if steps <= 0:
                break
    return cut


def used_bits(x, demand: int | None = None) -> dict:
    """The input bits ``x`` depends on: variable name -> bit mask. An ``Extract`` of a variable
    uses only its bits, so the bytes of one wide ``claripy.BVS`` are as independent as separate
    variables; with ``demand`` (the bits of ``x`` that matter, all by default) constant masks,
    shifts and extractions narrow what the operands contribute."""
    cache = memo("narrow_cut.bits", lambda: LRU(65536))
    if isinstance(x, claripy.ast.Bool) or not hasattr(x, "length"):
        return _used(x, None, cache)
    full = (1 << x.length) - 1
    return _used(x, full if demand is None else demand & full, cache)


def _used(x, demand, cache) -> dict:  # noqa: C901 - one rule per operation
    if not hasattr(x, "op") or not x.variables or demand == 0:
        return {}
    if x.op in ("BVS", "BoolS"):
        m = (1 << (x.length or 1)) - 1
        return {x.args[0]: m if demand is None else m & demand}
    h = (x.hash(), demand)
    r = cache.lookup(h)
    if r is not None:
        return r
    op, args = x.op, x.args
    parts: list = []            # (operand, its demand)
    if demand is None or isinstance(x, claripy.ast.Bool):
        parts = [(a, None if isinstance(a, claripy.ast.Bool) else (1 << a.length) - 1) for a in _children(x)]
    elif op in ("__xor__", "__or__", "__and__", "__invert__"):
        d = demand
        if op == "__and__":
            for a in args:
                if not a.variables:
                    d &= a.args[0]
        parts = [(a, d) for a in _children(x)]
    elif op in ("__add__", "__sub__", "__mul__", "__neg__"):
        parts = [(a, _low(demand)) for a in _children(x)]
    elif op == "__lshift__" and args[1].op == "BVV":
        parts = [(args[0], demand >> args[1].args[0])]
    elif op == "LShR" and args[1].op == "BVV":
        parts = [(args[0], (demand << args[1].args[0]) & ((1 << x.length) - 1))]
    elif op in ("ZeroExt", "SignExt"):
        inner = args[1]
        m = (1 << inner.length) - 1
        d = demand & m
        if op == "SignExt" and demand >> inner.length:
            d |= 1 << (inner.length - 1)
        parts = [(inner, d)]
    elif op == "Extract":
        hi, lo, inner = args
        parts = [(inner, (demand << lo) & ((1 << inner.length) - 1))]
    elif op == "Concat":
        pos = x.length
        for a in args:
            pos -= a.length
            parts.append((a, (demand >> pos) & ((1 << a.length) - 1)))
    else:
        parts = [(a, None if isinstance(a, claripy.ast.Bool) else (1 << a.length) - 1) for a in _children(x)]
    r = {}
    for a, d in parts:
        for n, m in _used(a, d, cache).items():
            r[n] = r.get(n, 0) | m
    cache.put(h, r)
    return r


def _low(demand: int) -> int:
    """Every bit up to the highest one of ``demand``: what carries into the demanded bits."""
    return (1 << demand.bit_length()) - 1

"""Narrow cuts: small-domain solving for wide inputs that reach the lookups through few bits.

The small-domain layer (:mod:`.enumeration`) evaluates a slice over every assignment of its free
variables, so it handles at most :data:`~.enumeration.MAX_BITS` free input bits: two input bytes.
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

import itertools

import claripy
import numpy as np

from ..scope import LRU, memo

MAX_CUT_BITS = 16        # effective bits of the cut nodes together (rows of the evaluation, at most)
MAX_ROWS = 1 << 16       # rows of the joint image
MAX_JOINT_BITS = 22      # input bits enumerated together where nodes share variables
MAX_PRODUCT = 1 << 20    # value pairs combined when an operation's operands are independent
MAX_IMAGE = 1 << 18      # values of one node's image


class NoCut(Exception):
    """The slice has no narrow cut whose image this module computes exactly."""


def _is_let(name: str) -> bool:
    from .enumeration import is_let
    return is_let(name)


def _input_only(x) -> bool:
    v = x.variables
    return bool(v) and not any(_is_let(n) for n in v)


def effective_bits(x) -> int:
    """An upper bound of log2 of the number of values ``x`` takes: its width, less the bits that
    concatenated constants, zero extensions and constant masks fix."""
    return _eff(x, memo("narrow_cut.eff", lambda: LRU(65536)))


def _eff(x, cache) -> int:
    if x.op in ("BoolV", "BVV"):
        return 0
    if isinstance(x, claripy.ast.Bool):
        return 1
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


def _children(x):
    return [a for a in x.args if hasattr(a, "op") and a.variables]


def _narrowest(x, cache) -> tuple[int, dict]:
    """(effective bits, nodes by hash) of the narrowest cut of the input-only node ``x``: ``x``
    itself or the union of its operands' cuts (shared sub-nodes counted once: the conditions of a
    table selection all test the same offset). A condition is cut below itself when that fits in
    :data:`MAX_CUT_BITS`: its one bit is narrow, but a selection has a condition per entry, all
    over one narrow offset."""
    h = x.hash()
    r = cache.lookup(h)
    if r is not None:
        return r
    own = (effective_bits(x), {h: x})
    kids = _children(x) if x.op not in ("BVS", "BoolS") else []
    r = own
    if kids:
        union: dict = {}
        for k in kids:
            union.update(_narrowest(k, cache)[1])
            if len(union) > 64:
                break
        else:
            bits = sum(effective_bits(n) for n in union.values())
            if bits < own[0] or (isinstance(x, claripy.ast.Bool) and bits <= MAX_CUT_BITS):
                r = (bits, union)
    cache.put(h, r)
    return r


def find_cut(roots, lets: dict) -> dict:
    """The cut nodes (hash -> node) of the slice with ``roots``; its let definitions are ``lets``.
    Input-only roots (constraints on inputs alone) are not cut: they restrict the image."""
    cache = memo("narrow_cut.narrowest", lambda: LRU(65536))
    cut: dict = {}
    seen: set = set()
    todo = list(roots) + list(lets.values())
    while todo:
        x = todo.pop()
        if not hasattr(x, "op") or not x.variables:
            continue
        h = x.hash()
        if h in seen:
            continue
        seen.add(h)
        if x.op == "BVS" and _is_let(x.args[0]):
            continue
        if _input_only(x):
            cut.update(_narrowest(x, cache)[1])
            continue
        todo.extend(_children(x))
    return _share(cut, cache)


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


def _overlap(a: dict, b: dict) -> bool:
    return any(n in b and m & b[n] for n, m in a.items())


def _width(bits: dict) -> int:
    return sum(bin(m).count("1") for m in bits.values())


def _merged(nodes) -> dict:
    out: dict = {}
    for x in nodes:
        for n, m in used_bits(x).items():
            out[n] = out.get(n, 0) | m
    return out


def _components(nodes: list, filters: list) -> list[tuple[list, list]]:
    """``nodes`` and ``filters`` grouped by shared input bits: (nodes, filters) per group."""
    items = [(x, False) for x in nodes] + [(c, True) for c in filters]
    groups: list[tuple[dict, list]] = []
    for x, is_filter in items:
        bits = dict(used_bits(x))
        joined = [g for g in groups if _overlap(g[0], bits)]
        groups = [g for g in groups if not _overlap(g[0], bits)]
        members = [(x, is_filter)]
        for g in joined:
            for n, m in g[0].items():
                bits[n] = bits.get(n, 0) | m
            members += g[1]
        groups.append((bits, members))
    return [([x for x, f in m if not f], [x for x, f in m if f]) for _, m in groups]


def _columns(bits: dict, variables: dict):
    """Every assignment of the input bits ``bits`` (others zero): (number of rows, variable name
    -> column of its values)."""
    total = _width(bits)
    idx = np.arange(1 << total, dtype=np.uint64)
    cols = {}
    j = 0
    for n in sorted(bits):
        m, col, p = bits[n], np.zeros(1 << total, dtype=np.uint64), 0
        while m:
            if m & 1:
                col |= ((idx >> np.uint64(j)) & np.uint64(1)) << np.uint64(p)
                j += 1
            m >>= 1
            p += 1
        cols[n] = col
    return 1 << total, cols


def _enumerate_together(nodes: list, filters: list) -> np.ndarray:
    """Rows (one column per node) of the values ``nodes`` take together over every assignment of
    the input bits they use that satisfies ``filters``."""
    from .enumeration import Evaluator, _leaves
    leaves = _leaves([*nodes, *filters])
    if any(v.op != "BVS" or v.length > 64 for v in leaves.values()):
        raise NoCut("an input that is not a bit-vector variable")
    bits = _merged([*nodes, *filters])
    if _width(bits) > MAX_JOINT_BITS:
        raise NoCut("a component too wide to enumerate")
    size, cols = _columns(bits, leaves)
    ev = Evaluator.over(cols, size, {}, shared=False)
    mask = np.ones(size, dtype=bool)
    for c in filters:
        mask &= np.broadcast_to(ev.bool(c), mask.shape)
    out = [np.broadcast_to(np.asarray(ev.ev(x), dtype=np.uint64), mask.shape)[mask] for x in nodes]
    if not out:
        return np.zeros((1 if mask.any() else 0, 0), dtype=np.uint64)
    return np.unique(np.stack(out, axis=1), axis=0)


def image(x, demand: int | None = None) -> np.ndarray:
    """Every value the input-only node ``x`` takes (sorted, unique), computed exactly; with
    ``demand``, every value of ``x & demand`` (the bits a consumer reads: ``(a ^ b) & 0x7ff`` needs
    eleven bits of ``a`` and ``b``, not all of them)."""
    full = 1 if isinstance(x, claripy.ast.Bool) else (1 << x.length) - 1
    demand = full if demand is None else demand & full
    cache = memo("narrow_cut.image", lambda: LRU(128))    # at most 2 MiB each
    key = (x.hash(), demand)
    r = cache.lookup(key)
    if r is None:
        r = _image(x, demand, full)
        if len(r) > MAX_IMAGE:
            r = False               # more values than any cut could use (and than a memo should keep)
        cache.put(key, r)
    if r is False:
        raise NoCut("image too large")
    return r


def _low(demand: int) -> int:
    """Every bit up to the highest one of ``demand``: what carries into the demanded bits."""
    return (1 << demand.bit_length()) - 1


def _fold(op, images: list, demand: int) -> np.ndarray:
    from .enumeration import _BIN
    acc = images[0]
    for im in images[1:]:
        if len(acc) * len(im) > MAX_PRODUCT:
            raise NoCut("operand images too large")
        a, b = np.meshgrid(acc, im, indexing="ij")
        acc = np.unique(_BIN[op](a.reshape(-1), b.reshape(-1)) & np.uint64(demand))
    return np.unique(acc & np.uint64(demand))


def _image(x, demand: int, full: int) -> np.ndarray:  # noqa: C901 - one rule per operation
    from .enumeration import MAX_BITS, Evaluator
    kids = _children(x) if x.op not in ("BVS", "BoolS") else []
    width = _width(used_bits(x))
    d = np.uint64(demand)
    if width <= MAX_BITS or not kids:
        return np.unique(_enumerate_together([x], [])[:, 0] & d)
    if demand == 0:
        return np.zeros(1, dtype=np.uint64)
    var_sets = [used_bits(k) for k in kids]
    independent = not any(_overlap(a, b) for a, b in itertools.combinations(var_sets, 2))
    op, args = x.op, x.args
    if independent and not isinstance(x, claripy.ast.Bool):
        consts = [a for a in args if not (hasattr(a, "op") and a.variables)]
        if op in ("__xor__", "__or__", "__and__"):
            if op == "__and__":
                for c in consts:
                    demand &= c.args[0]
            ims = [image(k, demand) for k in kids]
            for c in consts:
                ims.append(np.array([c.args[0] & demand], dtype=np.uint64))
            return _fold(op, ims, demand)
        if op in ("__add__", "__mul__") and len(args) >= 2:
            low = _low(demand)
            ims = [image(k, low) for k in kids] + [np.array([c.args[0] & low], dtype=np.uint64) for c in consts]
            return _fold(op, ims, demand)
        if op == "__lshift__" and len(kids) == 1 and args[1].op == "BVV":
            c = args[1].args[0]
            if c >= x.length:
                return np.zeros(1, dtype=np.uint64)
            return np.unique((image(args[0], demand >> c) << np.uint64(c)) & d)
        if op == "LShR" and len(kids) == 1 and args[1].op == "BVV":
            c = args[1].args[0]
            if c >= x.length:
                return np.zeros(1, dtype=np.uint64)
            return np.unique((image(args[0], (demand << c) & full) >> np.uint64(c)) & d)
        if op == "ZeroExt":
            return image(args[1], demand & ((1 << args[1].length) - 1))
        if op == "Extract":
            hi, lo, inner = args
            return np.unique((image(inner, (demand << lo) & ((1 << inner.length) - 1)) >> np.uint64(lo)) & d)
        if op == "Concat" and x.length <= 64:
            ims, pos = [], x.length
            for a in args:
                pos -= a.length
                part = (demand >> pos) & ((1 << a.length) - 1)
                if hasattr(a, "op") and a.variables:
                    ims.append(image(a, part) << np.uint64(pos))
                else:
                    ims.append(np.array([(a.args[0] & part) << pos], dtype=np.uint64))
            return _fold("__or__", ims, demand)
    if not independent:
        if width <= MAX_JOINT_BITS:
            return np.unique(_enumerate_together([x], [])[:, 0] & d)
        raise NoCut("operands share variables")
    images = [image(k) for k in kids]
    total = 1
    for im in images:
        total *= len(im)
    if total > MAX_PRODUCT:
        raise NoCut("operand images too large")
    grids = np.meshgrid(*images, indexing="ij")
    ev = Evaluator.over({}, total, {}, shared=False)
    ev.cuts = {k.hash(): column(k, g.reshape(-1)) for k, g in zip(kids, grids, strict=True)}
    return np.unique(np.broadcast_to(np.asarray(ev.ev(x), dtype=np.uint64), (total,)) & d)


def column(node, values: np.ndarray) -> np.ndarray:
    """``values`` of ``node`` as the evaluator holds them (booleans for a Bool node)."""
    return values.astype(bool) if isinstance(node, claripy.ast.Bool) else values


def joint_image(nodes: list, filters: list) -> np.ndarray:
    """Rows (one column per node, in order) of the values ``nodes`` take together under the
    input-only constraints ``filters``; raises :class:`NoCut` when that is not computed exactly."""
    blocks = []
    order = []
    for group, fs in _components(nodes, filters):
        if len(group) == 1 and not fs:
            rows = image(group[0])[:, None]
        else:
            rows = _enumerate_together(group, fs)
        if not len(rows):
            return np.zeros((0, len(nodes)), dtype=np.uint64)
        blocks.append(rows)
        order += group
    total = 1
    for b in blocks:
        total *= len(b)
    if total > MAX_ROWS:
        raise NoCut("joint image too large")
    idx = np.meshgrid(*[np.arange(len(b)) for b in blocks], indexing="ij")
    cols = [b[i.reshape(-1)] for b, i in zip(blocks, idx, strict=True)]
    table = np.concatenate(cols, axis=1) if cols else np.zeros((1, 0), dtype=np.uint64)
    pos = {x.hash(): k for k, x in enumerate(order)}
    return table[:, [pos[x.hash()] for x in nodes]]

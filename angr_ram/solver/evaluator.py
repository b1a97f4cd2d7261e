"""The vectorised evaluator of claripy expressions: one expression over many input assignments at
once (numpy columns, one row per assignment), with the helpers every user of it shares (let-bound
symbols, table selections, leaves, distinct rows, deep recursion).

Used by small-domain solving (:mod:`.enumeration`), narrow cuts (:mod:`.narrow_cut`), seeding and
neighbour models; :func:`column` is how a cut's rows become the evaluator's node values. What
each operation computes is the vector form of :mod:`.semantics` (the model evaluator,
:mod:`.model_eval`, uses its scalar form); this module walks the expression (let-bound symbols,
table selections as one gather, values wider than 64 bits read in slices).
"""


from __future__ import annotations

import contextlib
import hashlib
import sys

import numpy as np
from claripy.ast import Base

from angr_ram.core.scope import LRU, memo
from angr_ram.solver.columns import WideColumn, _new_value_cache, _OwnValues, _ValueCache, column, mask
from angr_ram.solver.float_semantics import FP_OPS, fpv_bits
from angr_ram.solver.selections import table_of
from angr_ram.solver.semantics import COMPARISONS, OPS, VECTOR, Unsupported

LET_PREFIX = "ram_let"
MAX_BITS = 16
MAX_NODES = 50_000

DEEP_RECURSION = 8000    # Python frames allowed while evaluating (two per level of an expression)
CONSTRAINT_MASKS = 2048   # constraints whose truth over the rows is kept apart from the node values


_U64 = np.uint64


_Unsupported = Unsupported       # the slice uses something the vectorised evaluator does not model
_WIDE_BITWISE = {"__and__": np.bitwise_and, "__or__": np.bitwise_or, "__xor__": np.bitwise_xor}
_LOW_ARITHMETIC = ("__add__", "__sub__", "__mul__", "__neg__")


class _Low64:
    """Stands for an operation's expression when its low 64 bits are computed (the result width)."""

    length = 64
_signed = VECTOR.signed


def is_let(name: str) -> bool:
    """True for the names of let-bound symbols."""
    return name.startswith(LET_PREFIX)


class Evaluator:
    """Vectorized evaluation of claripy expressions over every assignment of the free variables."""

    def __init__(self, free: list, lets: dict):
        self.lets = lets                    # let name -> defining expression
        total = sum(v.length for v in free)
        self.size = 1 << total
        idx = np.arange(self.size, dtype=_U64)
        self.vars = {}
        self.layout = tuple((v.args[0], v.length) for v in free)
        self._fps: dict = {}
        shift = 0
        for v in free:
            self.vars[v.args[0]] = (idx >> _U64(shift)) & mask(v.length)
            shift += v.length
        self.nodes = 0
        self.cuts = {}                      # node hash -> its values (a narrow cut's nodes)
        self.values = memo("enumeration.values", _new_value_cache)

    @classmethod
    def over(cls, columns: dict, size: int, lets: dict, shared: bool = True) -> Evaluator:
        """An evaluator over ``size`` explicit assignments: ``columns`` maps each free variable to
        an array of its ``size`` values (the seeded candidates of :mod:`.seeding`). With
        ``shared`` false the node values stay with this evaluator (rows evaluated once)."""
        self = cls.__new__(cls)
        self.lets = lets
        self.size = size
        self.vars = dict(columns)
        self._fps = {}
        self.nodes = 0
        self.cuts = {}
        if not shared:
            self.layout = ("own", size)
            self.values = _OwnValues()
            return self
        h = hashlib.blake2b(digest_size=16)
        for n, c in sorted(columns.items()):
            h.update(n.encode())
            h.update(c.tobytes())
        digest = h.digest()
        self.layout = ("rows", size, digest)
        self.values = memo("enumeration.values", _new_value_cache)
        return self

    @classmethod
    def over_cut(cls, nodes: list, rows: np.ndarray, lets: dict) -> Evaluator:
        """An evaluator over the rows of a narrow cut's joint image (:mod:`.narrow_cut`): each
        node of ``nodes`` takes the values of its column of ``rows``."""
        self = cls.__new__(cls)
        self.lets = lets
        self.size = len(rows)
        self.vars = {}
        self._fps = {}
        self.nodes = 0
        self.cuts = {x.hash(): column(x, np.ascontiguousarray(rows[:, k])) for k, x in enumerate(nodes)}
        self.cut_nodes = list(nodes)
        h = hashlib.blake2b(digest_size=16)
        for x in nodes:
            h.update(str(x.hash()).encode())
        h.update(np.ascontiguousarray(rows).tobytes())
        self.layout = ("cut", self.size, h.digest())
        self.values = memo("enumeration.values", _new_value_cache)
        return self

    # ------------------------------------------------------------------ entry points
    def bool(self, e):
        """Boolean array (or scalar) of ``e``."""
        return self.ev(e)

    def constraint(self, c):
        """Boolean array (or scalar) of the path constraint ``c``, kept per constraint (one bit per
        row) apart from the node values. A merged state's constraint has tens of thousands of
        nodes, whose values over 65536 rows outgrow the node-value cache: without this, every
        query of that state evaluated all of them again (uthash under merging, 6 s a query)."""
        if not isinstance(self.values, _ValueCache):
            return self.bool(c)
        key = (self.layout, c.hash(), self._defs_of(c))
        masks = memo("enumeration.masks", lambda: LRU(CONSTRAINT_MASKS))
        hit = masks.lookup(key)
        if hit is not None:
            return hit if not isinstance(hit, np.ndarray) else np.unpackbits(hit, count=self.size).view(np.bool_)
        m = self.bool(c)
        if isinstance(m, np.ndarray) and m.shape == (self.size,):
            masks.put(key, np.packbits(m))
        elif not isinstance(m, np.ndarray):
            masks.put(key, m)
        return m

    def bits(self, e, hi: int, lo: int):
        """Bits ``[hi:lo]`` of ``e`` (which may be wider than 64 bits), at most 64 of them."""
        if e.length <= 64:
            v = self.ev(e)
            return (v >> _U64(lo)) & mask(hi - lo + 1)
        op = e.op
        if op == "Concat":
            out = None
            pos = e.length
            for a in e.args:
                a_hi, a_lo = pos - 1, pos - a.length
                pos = a_lo
                if a_lo > hi or a_hi < lo:
                    continue
                h, lw = min(hi, a_hi), max(lo, a_lo)
                part = self.bits(a, h - a_lo, lw - a_lo) << _U64(lw - lo)
                out = part if out is None else out | part
            return out
        if op == "If":
            return np.where(self.ev(e.args[0]), self.bits(e.args[1], hi, lo), self.bits(e.args[2], hi, lo))
        if op == "BVV":
            return _U64((e.args[0] >> lo) & ((1 << (hi - lo + 1)) - 1))
        if op == "BVS":
            v = self.vars.get(e.args[0])
            if isinstance(v, WideColumn):
                return v.bits(hi, lo)
            d = self.lets.get(e.args[0])
            if d is None:
                raise _Unsupported(f"unbound {e.args[0]}")
            return self.bits(d, hi, lo)
        if op == "Extract":
            return self.bits(e.args[2], hi + e.args[1], lo + e.args[1])
        if op == "ZeroExt":
            inner = e.args[1]
            if lo >= inner.length:
                return _U64(0)
            return self.bits(inner, min(hi, inner.length - 1), lo)
        if op in _WIDE_BITWISE:
            f = _WIDE_BITWISE[op]
            out = self.bits(e.args[0], hi, lo)
            for a in e.args[1:]:
                out = f(out, self.bits(a, hi, lo))
            return out
        if op == "__invert__":
            return ~self.bits(e.args[0], hi, lo) & mask(hi - lo + 1)
        if op in _LOW_ARITHMETIC and hi < 64:
            # the low 64 bits of a sum, difference or product are those of the operands' low 64 bits
            v = OPS[op](VECTOR, [self.bits(a, 63, 0) for a in e.args], _Low64)
            return (v >> _U64(lo)) & mask(hi - lo + 1)
        if op in ("LShR", "__lshift__"):
            return self._wide_shift(e, hi, lo)
        raise _Unsupported(op)

    def _wide_shift(self, e, hi: int, lo: int):
        """Bits ``[hi:lo]`` of a logical shift of a value wider than 64 bits (the amount per row):
        a window of the value's 64-bit limbs (zero outside them) starting at ``lo + amount``
        (right) or ``lo - amount`` (left)."""
        x, s = e.args
        n = x.length
        amount = self.bits(s, 63, 0)
        for j in range(64, n, 64):
            amount = np.where(self.bits(s, min(j + 63, n - 1), j) != 0, _U64(n), amount)
        amount = np.minimum(amount, _U64(n)).astype(np.int64)
        start = lo + amount if e.op == "LShR" else lo - amount
        limbs = [_U64(0), *(self.bits(x, min(j + 63, n - 1), j) for j in range(0, n, 64)), _U64(0), _U64(0)]
        size = max((np.size(v) for v in (*limbs, start)), default=1)
        table = np.stack([np.broadcast_to(v, (size,)) for v in limbs])
        p = np.broadcast_to(np.clip(start, -64, n) + 64, (size,))
        q, r = p // 64, (p % 64).astype(_U64)
        rows = np.arange(size)
        low = table[q, rows] >> r
        high = np.where(r == 0, _U64(0), table[q + 1, rows] << ((_U64(64) - r) & _U64(63)))
        out = (low | high) & mask(hi - lo + 1)
        return out if any(np.ndim(v) for v in (*limbs, start)) else out[0]

    # ------------------------------------------------------------------ evaluation
    def ev(self, e):
        op = e.op
        if self.cuts:
            c = self.cuts.get(e.hash())
            if c is not None:
                return c
        if op == "BVV" or op == "BoolV" or op == "BVS":
            # a let symbol's value is its definition's (cached under the definition, which a
            # relocation changes while the symbol stays the same)
            return self._ev(e)
        key = (self.layout, e.hash(), self._defs_of(e))
        values = self.values
        r = values.get(key)
        if r is not None:
            return r
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _Unsupported("too many nodes")
        try:
            r = self._ev(e)
        except RecursionError:      # the innermost level turns it into "leave it to z3"
            raise _Unsupported("expression too deep") from None
        values.put(key, r)
        return r

    def _ev(self, e):
        op = e.op
        if op == "BVV":
            if e.length > 64:
                raise _Unsupported("wide constant")
            return _U64(e.args[0])
        if op == "BoolV":
            return np.bool_(e.args[0])
        if op == "FPV":
            return _U64(fpv_bits(e))
        if op == "BVS":
            name = e.args[0]
            v = self.vars.get(name)
            if v is not None:
                if isinstance(v, WideColumn):
                    raise _Unsupported("wide value")   # read through bits() only
                return v
            d = self.lets.get(name)
            if d is None:
                raise _Unsupported(f"unbound {name}")
            return self.ev(d)
        if e.length is not None and e.length > 64 and op not in ("__eq__", "__ne__"):
            raise _Unsupported("wide value")
        if op == "If":
            table = table_of(e)
            if table is not None:
                return self._lookup(table)
            return np.where(self.ev(e.args[0]), self.ev(e.args[1]), self.ev(e.args[2]))
        a = e.args
        if op == "Extract" and a[2].length > 64:
            return self.bits(a[2], a[0], a[1])
        if op in COMPARISONS and a[0].length is not None and a[0].length > 64:
            if op in ("__eq__", "__ne__"):
                return self._wide_eq(a[0], a[1], op == "__ne__")
            raise _Unsupported(f"{op} of values wider than 64 bits")
        fn = OPS.get(op) or FP_OPS.get(op)
        if fn is None:
            raise _Unsupported(op)
        return fn(VECTOR, [self.ev(x) if isinstance(x, Base) else x for x in a], e)

    def _defs_of(self, e) -> tuple:
        """The definitions of the let symbols ``e`` uses: its value depends on them too."""
        lets = self.lets
        if not lets:
            return ()
        names = [n for n in e.variables if n in lets]
        if not names:
            return ()
        return tuple(sorted(self._fingerprint(n) for n in names))

    def _fingerprint(self, name: str) -> tuple:
        """A let's definition and, transitively, those of the lets it uses."""
        fp = self._fps.get(name)
        if fp is None:
            d = self.lets[name]
            self._fps[name] = (name, d.hash())        # a placeholder breaks (impossible) cycles
            fp = self._fps[name] = (name, d.hash(), self._defs_of(d))
        return fp

    def _wide_eq(self, x, y, negate: bool):
        acc = np.bool_(True)
        for lo in range(0, x.length, 64):
            hi = min(x.length, lo + 64) - 1
            acc = acc & (self.bits(x, hi, lo) == self.bits(y, hi, lo))
        return ~acc if negate else acc

    def _lookup(self, table):
        off_e, pieces, dense = table
        off = self.ev(off_e)
        if dense is not None:
            kmin, vals, bounds, defaults = dense
            span = len(vals)
            rel = off - _U64(kmin)            # wraps around below kmin: out of the span
            inside = rel < _U64(span)
            v = vals[np.where(inside, rel, _U64(0)).astype(np.int64)]
            if bounds is None:
                return v
            d = defaults[np.searchsorted(bounds, off, side="right") - 1]
            return np.where(inside, v, d)
        out = None
        for lo, hi, keys, vals, default in pieces:
            d = self.ev(default)
            if len(keys):
                pos = np.minimum(np.searchsorted(keys, off), len(keys) - 1)
                hit = keys[pos] == off
                v = np.where(hit, vals[pos], d)
            else:
                v = np.broadcast_to(d, np.shape(off)) if np.ndim(off) else d
            if out is None:
                out = v
                continue
            inside = np.bool_(True)
            if lo > 0:
                inside = inside & (off >= _U64(lo))
            if hi < 1 << 64:
                inside = inside & (off < _U64(hi))
            out = np.where(inside, v, out)
        return out


# ---------------------------------------------------------------------- slicing and answering
def dag_nodes(e, children):
    """Each distinct node of the expression DAG under ``e`` once (by hash), depth first;
    ``children(x)`` gives the nodes to visit below ``x``."""
    seen: set = set()
    todo = [e]
    while todo:
        x = todo.pop()
        h = x.hash()
        if h in seen:
            continue
        seen.add(h)
        yield x
        todo.extend(children(x))


def _symbolic_children(x):
    if x.op in ("BVS", "BoolS") or x.depth <= 1:
        return ()
    return [a for a in x.args if hasattr(a, "op") and a.variables]


def _leaves_of(e) -> dict:
    key = e.hash()
    leaf_memo = memo("enumeration.leaves", lambda: LRU(8192))
    r = leaf_memo.lookup(key)
    if r is None:
        r = {x.args[0]: x for x in dag_nodes(e, _symbolic_children) if x.op in ("BVS", "BoolS")}
        leaf_memo.put(key, r)
    return r


def uses_float(e) -> bool:
    """Whether a symbolic part of ``e`` computes with floating point (memoised per expression)."""
    if not e.symbolic:
        return False
    float_memo = memo("enumeration.floats", lambda: LRU(1 << 16))
    r = float_memo.lookup(e.hash())
    if r is not None:
        return r
    # per node, children first; a node already known (an expression built on an earlier one) is
    # not walked again, so a chain of growing expressions costs its new nodes only
    local: dict = {}

    def known(x):
        h = x.hash()
        v = local.get(h)
        return float_memo.lookup(h) if v is None else v

    todo = [(e, False)]
    while todo:
        x, expanded = todo.pop()
        h = x.hash()
        if h in local:
            continue
        if x.op in FP_OPS:
            local[h] = True
            continue
        kids = _symbolic_children(x)
        if not expanded:
            v = float_memo.lookup(h)
            if v is not None:
                local[h] = v
                continue
            todo.append((x, True))
            todo.extend((k, False) for k in kids if known(k) is None)
            continue
        local[h] = any(known(k) for k in kids)
    for h, v in local.items():
        float_memo.put(h, v)
    return local[e.hash()]


def _leaves(exprs) -> dict:
    out = {}
    for e in exprs:
        out.update(_leaves_of(e))
    return out


def _definition(c):
    """``(name, expression)`` when ``c`` is a let-binding ``ram_let_* == expression``."""
    if c.op == "__eq__":
        x, y = c.args
        if x.op == "BVS" and is_let(x.args[0]):
            return x.args[0], y
    return None


def split_lets(constraints) -> tuple[dict, list]:
    """The let definitions among ``constraints`` (name -> defining expression, the first one of
    each name) and the other constraints."""
    lets, rest = {}, []
    for c in constraints:
        d = _definition(c)
        if d is not None and d[0] not in lets:
            lets[d[0]] = d[1]
        else:
            rest.append(c)
    return lets, rest


@contextlib.contextmanager
def deep_recursion():
    """Let the (recursive) evaluation go :data:`DEEP_RECURSION` Python frames deep inside the block:
    if-then-else merging makes expressions hundreds of levels deep (strtok under ``ite`` at
    M = 8: 454), and Python's default limit of 1000 frames ended such a path with a
    RecursionError. Python 3.11 runs Python-to-Python calls without growing the C stack. An
    expression deeper still is left to z3 (:class:`_Unsupported`). Bit-vector arithmetic wraps
    around, so numpy's overflow warnings (raised on scalar values, such as a constant stored
    compactly) are silenced inside the block too."""
    old = sys.getrecursionlimit()
    if old < DEEP_RECURSION:
        sys.setrecursionlimit(DEEP_RECURSION)
    try:
        with np.errstate(over="ignore"):
            yield
    finally:
        if old < DEEP_RECURSION:
            sys.setrecursionlimit(old)



"""Table selections: an if-then-else chain over concrete keys with concrete values (the shape
:func:`angr_ram.memory.object_store.select` builds for a symbolic-offset read) recognised once, so
that the evaluator reads it as one lookup (a gather over a dense array where the keys allow)."""

from __future__ import annotations

import numpy as np

from angr_ram.core.scope import current

_U64 = np.uint64
MIN_TABLE = 8          # an if-then-else selection with fewer entries is evaluated arm by arm


def table_of(e):
    """``(offset, pieces)`` when ``e`` is a selection over concrete keys with concrete values (the
    shape :func:`angr_ram.memory.object_store.select` builds), else None. Each piece covers the
    offsets ``[lo, hi)``: sorted keys, their values, and the expression for the other offsets."""
    key = e.hash()
    scope = current()
    tables = scope.tables if scope is not None else None
    if tables is not None and key in tables:
        return tables.lookup(key)
    off = _selection_offset(e)
    res = None
    if off is not None:
        pieces = _pieces(e, off, 0, 1 << 64)
        if pieces is not None and sum(len(p[2]) for p in pieces) >= MIN_TABLE:
            res = (off, pieces, _dense(pieces))
    if tables is not None:
        tables.put(key, res)
    return res


DENSE_SPAN = 1 << 20


def _dense(pieces):
    """``(kmin, values over [kmin, kmax], piece bounds, piece defaults)`` when every piece's other
    offsets take a constant and the keys span at most DENSE_SPAN: a lookup is then one gather."""
    if any(p[4].op != "BVV" or p[4].length > 64 for p in pieces):
        return None
    keys = [k for p in pieces for k in p[2].tolist()]
    if not keys:
        return None
    kmin, kmax = min(keys), max(keys)
    if kmax - kmin >= DENSE_SPAN:
        return None
    vals = np.empty(kmax - kmin + 1, dtype=_U64)
    for lo, hi, ks, vs, default in pieces:
        a, b = max(lo, kmin), min(hi, kmax + 1)
        if a < b:
            vals[a - kmin:b - kmin] = default.args[0]
        if len(ks):
            vals[(ks - _U64(kmin)).astype(np.int64)] = vs
    if len(pieces) == 1:
        lo, hi, _, _, default = pieces[0]
        if lo == 0 and hi >= 1 << 64:
            bounds = np.array([0], dtype=_U64)
            return kmin, vals, bounds, np.array([default.args[0]], dtype=_U64)
    bounds = np.array([p[0] for p in pieces], dtype=_U64)
    defaults = np.array([p[4].args[0] for p in pieces], dtype=_U64)
    return kmin, vals, bounds, defaults


def _same(a, b) -> bool:
    return a is b or a.hash() == b.hash()


def _key_of(c, off):
    """``k`` when ``c`` is ``off == k`` for a concrete ``k``."""
    if c.op != "__eq__":
        return None
    x, y = c.args
    if y.op == "BVV" and _same(x, off):
        return y.args[0]
    if x.op == "BVV" and _same(y, off):
        return x.args[0]
    return None


def _selection_offset(e):
    c = e.args[0]
    if c.op == "ULT" and c.args[1].op == "BVV":
        return c.args[0]
    if c.op == "__eq__":
        x, y = c.args
        if y.op == "BVV":
            return x
        if x.op == "BVV":
            return y
    return None


def _pieces(e, off, lo: int, hi: int):
    if e.op == "If":
        c = e.args[0]
        if c.op == "ULT" and _same(c.args[0], off) and c.args[1].op == "BVV":
            m = c.args[1].args[0]
            left = _pieces(e.args[1], off, lo, min(hi, m))
            right = _pieces(e.args[2], off, max(lo, m), hi)
            if left is None or right is None:
                return None
            return left + right
    entries: dict = {}
    node = e
    while node.op == "If":
        k = _key_of(node.args[0], off)
        if k is None or node.args[1].op != "BVV" or node.args[1].length > 64:
            break
        if lo <= k < hi and k not in entries:
            entries[k] = node.args[1].args[0]
        node = node.args[2]
    keys = np.array(sorted(entries), dtype=_U64)
    vals = np.array([entries[k] for k in sorted(entries)], dtype=_U64)
    return [(lo, hi, keys, vals, node)]

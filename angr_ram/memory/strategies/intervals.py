"""The unsigned interval an expression's value lies in, read off its structure (no solver).

A symbolic address is mostly a constant base plus an index built from input bytes: ``0x404040 +
SignExt(32, ZeroExt(24, byte))`` lies in ``[0x404040, 0x40413f]`` whatever the path constraint
says. Resolution asks the solver for the least and greatest values of such an address inside a
region; knowing this interval first, a bound that the value can take is confirmed by one check
instead of a search over the whole region (:meth:`angr_ram.memory.relocatable.RelocatableMixin.
_region_candidates`). The interval is sound for every assignment of the variables (wrap-around
gives the whole range); it ignores the constraints, so it may be wider than the values the path
allows.
"""

from __future__ import annotations

import claripy

from angr_ram.core.scope import LRU, memo


def unsigned_range(e) -> tuple[int, int]:
    """``(lo, hi)`` with ``lo <= e <= hi`` (unsigned) for every assignment of ``e``'s variables."""
    if not isinstance(e, claripy.ast.BV):
        raise TypeError("unsigned_range takes a bit-vector")
    try:
        return _range(e, memo("intervals.range", lambda: LRU(65536)))
    except RecursionError:
        return 0, (1 << e.length) - 1


def _full(n: int) -> tuple[int, int]:
    return 0, (1 << n) - 1


def _range(x, cache) -> tuple[int, int]:  # noqa: C901 - one dispatch over claripy's operations
    op, n = x.op, x.length
    if op == "BVV":
        return x.args[0], x.args[0]
    if op == "BVS":
        return _full(n)
    h = x.hash()
    r = cache.lookup(h)
    if r is not None:
        return r
    top = (1 << n) - 1
    args = x.args
    if op == "ZeroExt":
        r = _range(args[1], cache)
    elif op == "SignExt":
        inner = args[1]
        lo, hi = _range(inner, cache)
        r = (lo, hi) if hi < 1 << (inner.length - 1) else _full(n)
    elif op == "Extract":
        hi_bit, lo_bit, inner = args
        lo, hi = _range(inner, cache)
        r = (lo >> lo_bit, hi >> lo_bit) if hi < 1 << (hi_bit + 1) else _full(n)
    elif op == "Concat":
        lo = hi = 0
        for a in args:
            a_lo, a_hi = _range(a, cache)
            lo, hi = (lo << a.length) | a_lo, (hi << a.length) | a_hi
        r = (lo, hi)
    elif op == "__add__":
        rs = [_range(a, cache) for a in args]
        lo, hi = sum(a for a, _ in rs), sum(b for _, b in rs)
        r = (lo, hi) if hi <= top else _full(n)
    elif op == "__sub__" and len(args) == 2:
        (a_lo, a_hi), (b_lo, b_hi) = _range(args[0], cache), _range(args[1], cache)
        r = (a_lo - b_hi, a_hi - b_lo) if a_lo >= b_hi else _full(n)
    elif op == "__mul__":
        lo = hi = 1
        for a in args:
            a_lo, a_hi = _range(a, cache)
            lo, hi = lo * a_lo, hi * a_hi
        r = (lo, hi) if hi <= top else _full(n)
    elif op == "__and__":
        r = (0, min(_range(a, cache)[1] for a in args))
    elif op in ("__or__", "__xor__"):
        rs = [_range(a, cache) for a in args]
        hi = (1 << max(b for _, b in rs).bit_length()) - 1
        r = (max(a for a, _ in rs) if op == "__or__" else 0, hi)
    elif op == "LShR" and args[1].op == "BVV":
        lo, hi = _range(args[0], cache)
        s = args[1].args[0]
        r = (lo >> s, hi >> s) if s < n else (0, 0)
    elif op == "__lshift__" and args[1].op == "BVV":
        lo, hi = _range(args[0], cache)
        s = args[1].args[0]
        r = (lo << s, hi << s) if s < n and hi << s <= top else _full(n)
    elif op == "If":
        (a_lo, a_hi), (b_lo, b_hi) = _range(args[1], cache), _range(args[2], cache)
        r = (min(a_lo, b_lo), max(a_hi, b_hi))
    else:
        r = _full(n)
    cache.put(h, r)
    return r

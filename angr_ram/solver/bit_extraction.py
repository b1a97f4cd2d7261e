"""Bit ranges of expressions rewritten to the sub-terms they come from, for the joint images of
narrow cuts (:mod:`.joint_image`): an extraction pushed through concatenations, extensions,
constant shifts and bitwise operations, and a low mask rewritten as an extraction.
"""

from __future__ import annotations

import functools
import operator

import claripy


def canonical(x):
    """``x`` with a low mask pushed inside: ``E & (2**k - 1)`` becomes ``ZeroExt(Extract(k - 1, 0,
    E))`` (the same value), which claripy distributes over concatenations and bitwise operations.
    gcc -O2 keeps an index as ``(hi .. lo) & 0x7ff`` and its top bits as an extraction elsewhere:
    after the rewrite both mention the same sub-terms."""
    if x.op == "__and__" and len(x.args) == 2 and not isinstance(x, claripy.ast.Bool):
        for a, b in (x.args, x.args[::-1]):
            if a.op == "BVV" and b.variables:
                m = a.args[0]
                k = m.bit_length()
                if m == (1 << k) - 1 and 0 < k < x.length:
                    return claripy.ZeroExt(x.length - k, bits_of(b, k - 1, 0, 64))
    return x


_BITWISE = {"__xor__": operator.xor, "__or__": operator.or_, "__and__": operator.and_}


def bits_of(x, hi: int, lo: int, fuel: int):  # noqa: C901 - one rule per operation
    """``Extract(hi, lo, x)`` with the extraction pushed through concatenations, extensions,
    constant shifts and bitwise operations (claripy stops at shifts), at most ``fuel`` levels."""
    n = x.length
    if hi == n - 1 and lo == 0:
        return x
    op, args = x.op, x.args
    width = hi - lo + 1
    if fuel <= 0 or op in ("BVS",):
        return claripy.Extract(hi, lo, x)
    if op == "BVV":
        return claripy.BVV((args[0] >> lo) & ((1 << width) - 1), width)
    if op == "Extract":
        return bits_of(args[2], hi + args[1], lo + args[1], fuel - 1)
    if op == "ZeroExt":
        m = args[1].length
        if lo >= m:
            return claripy.BVV(0, width)
        if hi < m:
            return bits_of(args[1], hi, lo, fuel - 1)
        return claripy.Concat(claripy.BVV(0, hi - m + 1), bits_of(args[1], m - 1, lo, fuel - 1))
    if op == "Concat":
        parts, pos = [], n
        for a in args:
            a_hi, a_lo = pos - 1, pos - a.length
            pos = a_lo
            if a_lo > hi or a_hi < lo:
                continue
            parts.append(bits_of(a, min(hi, a_hi) - a_lo, max(lo, a_lo) - a_lo, fuel - 1))
        return parts[0] if len(parts) == 1 else claripy.Concat(*parts)
    if op in ("__lshift__", "LShR") and args[1].op == "BVV":
        c = args[1].args[0]
        if op == "LShR":
            if lo + c >= n:
                return claripy.BVV(0, width)
            if hi + c < n:
                return bits_of(args[0], hi + c, lo + c, fuel - 1)
            return claripy.Concat(claripy.BVV(0, hi + c - n + 1), bits_of(args[0], n - 1, lo + c, fuel - 1))
        if hi < c:
            return claripy.BVV(0, width)
        if lo >= c:
            return bits_of(args[0], hi - c, lo - c, fuel - 1)
        return claripy.Concat(bits_of(args[0], hi - c, 0, fuel - 1), claripy.BVV(0, c - lo))
    if op in _BITWISE:
        return functools.reduce(_BITWISE[op], [bits_of(a, hi, lo, fuel - 1) for a in args])
    if op == "__invert__":
        return ~bits_of(args[0], hi, lo, fuel - 1)
    if op == "If":
        return claripy.If(args[0], bits_of(args[1], hi, lo, fuel - 1), bits_of(args[2], hi, lo, fuel - 1))
    return claripy.Extract(hi, lo, x)

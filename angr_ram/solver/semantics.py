"""claripy's bit-vector and boolean operations on concrete values, each defined once.

angr-ram evaluates expressions without z3 in three places: under one cached model
(:mod:`.model_eval`, Python integers), over many assignments at once (:mod:`.evaluator`, numpy
``uint64`` columns, one row per assignment: small-domain solving, narrow cuts, seeding,
neighbour models), and over finite sets of values (:mod:`angr_ram.memory.strategies.value_sets`,
Python integers again). Each walks the expression its own way (the taken branch of an
if-then-else only, a table selection as one gather, the product of the operands' sets), but
what an operation computes is :data:`OPS`: ``OPS[op](form, values, node)``, the value of
``node`` given its operands' ``values`` (the operands that are not expressions, such as an
extraction's bounds, as they are). A *form* is the number representation: :data:`SCALAR`
(arbitrary widths) or :data:`VECTOR` (at most 64 bits); it supplies the few primitives in which
the two differ (masks, if-then-else, signed views, logical connectives, and what a division by
zero does).

The semantics are claripy's concrete backend's, which are z3's: arithmetic modulo ``2**n``,
shifts by at least the width give 0 (or the sign bits), ``SDiv``/``SMod`` round towards zero
with the remainder taking the dividend's sign, rotations are by ``y mod n``. A division by zero
raises :class:`claripy.errors.ClaripyZeroDivisionError` in the scalar form (as claripy's eager
evaluation does) and :class:`Unsupported` in the vector form (left to z3). ``tests/test_semantics_forms.py``
checks both forms against claripy on random expressions.
"""

from __future__ import annotations

import claripy
import numpy as np

from angr_ram.solver.columns import mask as column_mask

_U64 = np.uint64


class Unsupported(Exception):
    """An operation or value this form does not evaluate (the caller leaves it to z3)."""


class ScalarForm:
    """Python integers (unsigned, any width) and bools."""

    name = "scalar"
    zero = 0

    @staticmethod
    def mask(n: int) -> int:
        return (1 << n) - 1

    @staticmethod
    def const(k: int) -> int:
        return k

    @staticmethod
    def where(c, x, y):
        return x if c else y

    @staticmethod
    def signed(v: int, n: int) -> int:
        return v - (1 << n) if v >> (n - 1) else v

    @staticmethod
    def unsigned(sv: int, n: int) -> int:
        return sv & ((1 << n) - 1)

    @staticmethod
    def clamp(s: int, k: int) -> int:
        """``min(s, k)``, usable as the count of a signed shift."""
        return s if s < k else k

    @staticmethod
    def conj(vs) -> bool:
        return all(vs)

    @staticmethod
    def disj(vs) -> bool:
        return any(vs)

    @staticmethod
    def lnot(v) -> bool:
        return not v

    @staticmethod
    def divisor(y) -> None:
        if y == 0:
            raise claripy.errors.ClaripyZeroDivisionError

    @staticmethod
    def signed_operands(sx, sy, n: int) -> None:
        """Python integers do not overflow: nothing to refuse."""

    abs = staticmethod(abs)


class VectorForm:
    """numpy ``uint64`` columns (or scalars) and bool columns; widths up to 64 bits."""

    name = "vector"
    zero = _U64(0)

    mask = staticmethod(column_mask)

    @staticmethod
    def const(k: int):
        return _U64(k)

    @staticmethod
    def where(c, x, y):
        return np.where(c, x, y)

    @staticmethod
    def signed(a, n: int):
        a = np.asarray(a, dtype=_U64)
        if n == 64:
            return a.view(np.int64)
        s = a.astype(np.int64)
        return np.where(s >= (1 << (n - 1)), s - (1 << n), s)

    @staticmethod
    def unsigned(sa, n: int):
        return np.asarray(sa).astype(np.int64).view(_U64) & VectorForm.mask(n)

    @staticmethod
    def clamp(s, k: int):
        return np.minimum(s, _U64(k)).astype(np.int64)

    @staticmethod
    def conj(vs):
        acc = vs[0]
        for v in vs[1:]:
            acc = acc & v
        return acc

    @staticmethod
    def disj(vs):
        acc = vs[0]
        for v in vs[1:]:
            acc = acc | v
        return acc

    @staticmethod
    def lnot(v):
        return ~v

    @staticmethod
    def divisor(y) -> None:
        if np.any(np.asarray(y) == 0):
            raise Unsupported("division by zero")

    @staticmethod
    def signed_operands(sx, sy, n: int) -> None:
        if n >= 64 and (np.any(sx == np.iinfo(np.int64).min) or np.any(sy == np.iinfo(np.int64).min)):
            raise Unsupported("64-bit signed division of the smallest value")

    abs = staticmethod(np.abs)


SCALAR = ScalarForm()
VECTOR = VectorForm()


def _fold(fn, v):
    acc = v[0]
    for x in v[1:]:
        acc = fn(acc, x)
    return acc


# the n-ary operations pairwise, before reduction modulo 2**n (the same in both forms)
PAIRWISE = {
    "__add__": lambda a, b: a + b,
    "__sub__": lambda a, b: a - b,
    "__mul__": lambda a, b: a * b,
    "__and__": lambda a, b: a & b,
    "__or__": lambda a, b: a | b,
    "__xor__": lambda a, b: a ^ b,
}


def _wrapping(op: str):
    """An n-ary operation whose result is reduced modulo ``2**n``."""
    fn = PAIRWISE[op]
    return lambda f, v, e: _fold(fn, v) & f.mask(e.length)


def _bitwise(op: str):
    """An n-ary bitwise operation (its result has the operands' width)."""
    fn = PAIRWISE[op]
    return lambda f, v, e: _fold(fn, v)


def _unsigned_division(remainder: bool):
    def op(f, v, e):
        acc = v[0]
        for y in v[1:]:
            f.divisor(y)
            acc = acc % y if remainder else acc // y
        return acc
    return op


def _signed_division(remainder: bool):
    def op(f, v, e):
        if len(v) != 2:
            raise Unsupported(e.op)
        n = e.length
        f.divisor(v[1])
        sx, sy = f.signed(v[0], n), f.signed(v[1], n)
        f.signed_operands(sx, sy, n)
        q = f.abs(sx) // f.abs(sy)
        q = f.where((sx < 0) != (sy < 0), -q, q)
        return f.unsigned(sx - q * sy if remainder else q, n)
    return op


def _shift_left(f, v, e):
    x, s = v
    n = e.length
    big = s >= n
    return f.where(big, f.zero, (x << f.where(big, f.zero, s)) & f.mask(n))


def _shift_right(f, v, e):
    x, s = v
    big = s >= e.length
    return f.where(big, f.zero, x >> f.where(big, f.zero, s))


def _shift_right_signed(f, v, e):
    x, s = v
    n = e.length
    return f.unsigned(f.signed(x, n) >> f.clamp(s, n - 1), n)


def _rotate(left: bool):
    def op(f, v, e):
        x, n = v[0], e.length
        s = v[1] % f.const(n)
        if not left:
            s = (f.const(n) - s) % f.const(n)
        back = f.where(s == 0, f.const(1), f.const(n) - s)       # (unused where s == 0)
        return f.where(s == 0, x, ((x << s) | (x >> back)) & f.mask(n))
    return op


def _signed_compare(fn):
    def op(f, v, e):
        n = e.args[0].length
        return fn(f.signed(v[0], n), f.signed(v[1], n))
    return op


def _concat(f, v, e):
    acc = f.zero
    for a, x in zip(e.args, v, strict=True):
        acc = (acc << f.const(a.length)) | x
    return acc


def _reverse(f, v, e):
    n = e.length
    if n % 8:
        raise Unsupported("Reverse of a width that is not whole bytes")
    x, acc, byte = v[0], f.zero, f.mask(8)
    for k in range(n // 8):
        acc = (acc << f.const(8)) | ((x >> f.const(8 * k)) & byte)
    return acc


# op -> definition(form, values, node); bit-vector values are unsigned, booleans bools
OPS = {
    "__add__": _wrapping("__add__"),
    "__sub__": _wrapping("__sub__"),
    "__mul__": _wrapping("__mul__"),
    "__and__": _bitwise("__and__"),
    "__or__": _bitwise("__or__"),
    "__xor__": _bitwise("__xor__"),
    "__floordiv__": _unsigned_division(False),
    "__mod__": _unsigned_division(True),
    "SDiv": _signed_division(False),
    "SMod": _signed_division(True),
    "__lshift__": _shift_left,
    "LShR": _shift_right,
    "__rshift__": _shift_right_signed,
    "RotateLeft": _rotate(True),
    "RotateRight": _rotate(False),
    "__invert__": lambda f, v, e: v[0] ^ f.mask(e.length),
    "__neg__": lambda f, v, e: (f.zero - v[0]) & f.mask(e.length),
    "__eq__": lambda f, v, e: v[0] == v[1],
    "__ne__": lambda f, v, e: v[0] != v[1],
    "ULT": lambda f, v, e: v[0] < v[1],
    "ULE": lambda f, v, e: v[0] <= v[1],
    "UGT": lambda f, v, e: v[0] > v[1],
    "UGE": lambda f, v, e: v[0] >= v[1],
    "SLT": _signed_compare(lambda a, b: a < b),
    "SLE": _signed_compare(lambda a, b: a <= b),
    "SGT": _signed_compare(lambda a, b: a > b),
    "SGE": _signed_compare(lambda a, b: a >= b),
    "And": lambda f, v, e: f.conj(v),
    "Or": lambda f, v, e: f.disj(v),
    "Not": lambda f, v, e: f.lnot(v[0]),
    "Extract": lambda f, v, e: (v[2] >> f.const(v[1])) & f.mask(v[0] - v[1] + 1),
    "ZeroExt": lambda f, v, e: v[1],
    "SignExt": lambda f, v, e: f.unsigned(f.signed(v[1], e.args[1].length), e.length),
    "Concat": _concat,
    "Reverse": _reverse,
}
COMPARISONS = ("__eq__", "__ne__", "ULT", "ULE", "UGT", "UGE", "SLT", "SLE", "SGT", "SGE")

"""claripy's floating-point operations on numpy columns (the vector form of :mod:`.semantics`).

A floating-point value is held as its IEEE-754 bits in a ``uint64`` column (a ``float`` in the low
32 bits), the form registers and memory hold it in; each operation views the bits as ``float64``
or ``float32``, computes with numpy (IEEE arithmetic, rounding to nearest, ties to even, as the
processor does and as z3's ``RNE`` is defined) and gives bits back. So a query whose floating
point is computed from a few input bits is decided by evaluating every assignment of those bits
(:mod:`.enumeration`), where z3's floating-point theory needs seconds per check.

Only what is exact is evaluated; anything else raises :class:`~.semantics.Unsupported` and the
query goes to z3: a rounding mode other than to-nearest-even where the result may be inexact, a
conversion to an integer of a value out of its range or not a number (z3 leaves that result
unspecified), a sort other than ``float`` and ``double``, and the scalar form (the model
evaluator leaves floating point to claripy's backend). A NaN's bits are the processor's (z3 may
pick any NaN): the evaluation answers for the native program.
"""

from __future__ import annotations

import struct

import claripy
import numpy as np

from angr_ram.solver.semantics import VECTOR, Unsupported

_U64 = np.uint64
_RNE = claripy.fp.RM.RM_NearestTiesEven
_ROUND_TO_INTEGER = {
    claripy.fp.RM.RM_NearestTiesEven: np.rint,
    claripy.fp.RM.RM_TowardsZero: np.trunc,
    claripy.fp.RM.RM_TowardsPositiveInf: np.ceil,
    claripy.fp.RM.RM_TowardsNegativeInf: np.floor,
}
_EXACT_INTEGERS = {64: 1 << 53, 32: 1 << 24}      # integers of at most this magnitude convert exactly


def _sort_bits(sort) -> int:
    n = sort.length
    if n not in (32, 64) or (sort.exp, sort.mantissa) != ((8, 24) if n == 32 else (11, 53)):
        raise Unsupported(f"floating-point sort {sort}")
    return n


def _floats(v, n: int):
    """The column of bits ``v`` viewed as floats of ``n`` bits."""
    a = np.asarray(v, dtype=_U64)
    return a.view(np.float64) if n == 64 else a.astype(np.uint32).view(np.float32)


def _bits(x, n: int):
    """Floats of ``n`` bits as a column of bits."""
    if n == 64:
        return np.asarray(x, dtype=np.float64).view(_U64)
    return np.asarray(x, dtype=np.float32).view(np.uint32).astype(_U64)


def fpv_bits(e) -> int:
    """The bits of the constant ``FPV(value, sort)``."""
    value, sort = e.args
    n = _sort_bits(sort)
    return int.from_bytes(struct.pack("<d" if n == 64 else "<f", value), "little")


def _vector_only(fn):
    def op(f, v, e):
        if f is not VECTOR:
            raise Unsupported(f"{e.op} outside the vector form")
        with np.errstate(all="ignore"):
            return fn(v, e)
    return op


def _rne(rm) -> None:
    if rm != _RNE:
        raise Unsupported(f"rounding mode {rm}")


def _arithmetic(fn):
    def op(v, e):
        _rne(v[0])
        n = _sort_bits(e.sort)
        return _bits(fn(*[_floats(x, n) for x in v[1:]]), n)
    return _vector_only(op)


def _compare(fn):
    def op(v, e):
        n = _sort_bits(e.args[0].sort)
        return np.asarray(fn(_floats(v[0], n), _floats(v[1], n)))
    return _vector_only(op)


def _predicate(fn):
    def op(v, e):
        return np.asarray(fn(_floats(v[0], _sort_bits(e.args[0].sort))))
    return _vector_only(op)


def _to_fp(v, e):
    """``fpToFP``: (bits, sort) reinterprets; (rm, int, sort) converts a signed integer; (rm, fp,
    sort) converts between sorts."""
    n = _sort_bits(e.sort)
    if len(v) == 2:
        return np.asarray(v[0], dtype=_U64) & VECTOR.mask(n)
    rm, x = v[0], v[1]
    src = e.args[1]
    if isinstance(src, claripy.ast.FP):
        m = _sort_bits(src.sort)
        if m > n:
            _rne(rm)
        return _bits(_floats(x, m).astype(np.float64 if n == 64 else np.float32), n)
    return _from_integer(rm, VECTOR.signed(x, src.length), n)


def _to_fp_unsigned(v, e):
    n = _sort_bits(e.sort)
    return _from_integer(v[0], np.asarray(v[1], dtype=_U64), n)


def _from_integer(rm, ints, n: int):
    if rm != _RNE and np.any(np.abs(ints.astype(np.float64)) >= _EXACT_INTEGERS[n]):
        raise Unsupported(f"inexact conversion under {rm}")
    return _bits(ints.astype(np.float64 if n == 64 else np.float32), n)


def _to_integer(signed: bool):
    def op(v, e):
        rm, x, width = v[0], v[1], e.length
        rounding = _ROUND_TO_INTEGER.get(rm)
        if rounding is None:
            raise Unsupported(f"rounding mode {rm}")
        r = rounding(_floats(x, _sort_bits(e.args[1].sort)).astype(np.float64))
        lo, hi = (-float(1 << (width - 1)), float(1 << (width - 1))) if signed else (0.0, float(1 << min(width, 63)))
        if not np.all((r >= lo) & (r < hi)):          # NaN fails both: z3 leaves these unspecified
            raise Unsupported("conversion of a value outside the integer's range")
        return VECTOR.unsigned(r.astype(np.int64), width) if signed else r.astype(_U64)
    return _vector_only(op)


def _to_ieee_bits(v, e):
    return np.asarray(v[0], dtype=_U64)


def _sign(flip: bool):
    def op(v, e):
        top = _U64(1 << (_sort_bits(e.sort) - 1))
        x = np.asarray(v[0], dtype=_U64)
        return x ^ top if flip else x & ~top
    return _vector_only(op)


def _from_fields(v, e):
    _sort_bits(e.sort)
    acc = _U64(0)
    for a, x in zip(e.args, v, strict=True):
        acc = (acc << _U64(a.length)) | np.asarray(x, dtype=_U64)
    return acc


# op -> definition(form, values, node), as semantics.OPS; floating-point values are their bits
FP_OPS = {
    "fpAdd": _arithmetic(np.add),
    "fpSub": _arithmetic(np.subtract),
    "fpMul": _arithmetic(np.multiply),
    "fpDiv": _arithmetic(np.divide),
    "fpSqrt": _arithmetic(np.sqrt),
    "fpNeg": _sign(True),
    "fpAbs": _sign(False),
    "fpLT": _compare(np.less),
    "fpLEQ": _compare(np.less_equal),
    "fpGT": _compare(np.greater),
    "fpGEQ": _compare(np.greater_equal),
    "fpEQ": _compare(np.equal),
    "fpNEQ": _compare(np.not_equal),
    "fpIsNaN": _predicate(np.isnan),
    "fpIsInf": _predicate(np.isinf),
    "fpToFP": _vector_only(_to_fp),
    "fpToFPUnsigned": _vector_only(_to_fp_unsigned),
    "fpToSBV": _to_integer(True),
    "fpToUBV": _to_integer(False),
    "fpToIEEEBV": _vector_only(_to_ieee_bits),
    "fpFP": _vector_only(_from_fields),
}
FLOAT_OPS = frozenset(FP_OPS) | {"FPV", "FPS"}

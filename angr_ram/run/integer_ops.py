"""VEX operations on Python ints, as angr computes them on constants.

:func:`int_op` gives the integer function of the common integer operations (arithmetic, shifts,
comparisons, widening and narrowing, halves, ``Not``, bitwise ``V128``) on unsigned ints of the
operation's argument widths; each is checked against angr's own operation code
(``angr.engines.vex.claripy.irop``) on edge and random arguments. :func:`angr_op` computes any other
operation with angr's code on constants, so it means what it means in angr. :func:`value_of` is the
int of a constant claripy value (a symbolic one stays a claripy value); :func:`concrete` raises
:class:`Fallback` for a symbolic one.
"""

from __future__ import annotations

import re

import claripy
import pyvex
from angr.engines.vex.claripy import irop


class Fallback(Exception):
    """The value or operation needs angr's claripy path."""


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) else v


_ARITH = re.compile(r"Iop_(Add|Sub|Mul|And|Or|Xor|Shl|Shr|Sar)(8|16|32|64)$")
_CMP = re.compile(r"Iop_(?:Cas)?Cmp(EQ|NE|LT|LE)(8|16|32|64)(S|U)?$")
_WIDEN = re.compile(r"Iop_(1|8|16|32|64)(U|S)to(8|16|32|64|V128)$")
_NARROW = re.compile(r"Iop_(8|16|32|64|128|V128)to(1|8|16|32|64)$")
_HI = re.compile(r"Iop_(16|32|64|128|V128)HIto(8|16|32|64)$")
_HL = re.compile(r"Iop_(8|16|32|64)HLto(16|32|64|128|V128)$")
_NOT = re.compile(r"Iop_Not(1|8|16|32|64|V128)$")
_BITWISE_V128 = re.compile(r"Iop_(And|Or|Xor)V128$")


def _bits(s: str) -> int:
    return 128 if s == "V128" else int(s)


def _arith(name: str, bits: int):
    m = (1 << bits) - 1
    return {
        "Add": lambda a, b: (a + b) & m,
        "Sub": lambda a, b: (a - b) & m,
        "Mul": lambda a, b: (a * b) & m,
        "And": lambda a, b: a & b,
        "Or": lambda a, b: a | b,
        "Xor": lambda a, b: a ^ b,
        # angr widens the 8-bit amount and shifts as claripy does: past the width, 0 or the sign
        "Shl": lambda a, b: (a << b) & m if b < bits else 0,
        "Shr": lambda a, b: a >> b,
        "Sar": lambda a, b: (_signed(a, bits) >> min(b, bits - 1)) & m,
    }[name]


def _compare(name: str, bits: int, sign: str | None):
    if name == "EQ":
        return lambda a, b: int(a == b)
    if name == "NE":
        return lambda a, b: int(a != b)
    if sign is None:
        return None
    if sign == "S":
        if name == "LT":
            return lambda a, b: int(_signed(a, bits) < _signed(b, bits))
        return lambda a, b: int(_signed(a, bits) <= _signed(b, bits))
    return (lambda a, b: int(a < b)) if name == "LT" else (lambda a, b: int(a <= b))


def int_op(op: str):
    """The integer function of VEX operation ``op`` on unsigned ints of its argument widths, or None
    (the operation is then computed by angr's own code)."""
    if m := _ARITH.match(op):
        return _arith(m.group(1), int(m.group(2)))
    if m := _CMP.match(op):
        return _compare(m.group(1), int(m.group(2)), m.group(3))
    if m := _WIDEN.match(op):
        frm, sign, to = int(m.group(1)), m.group(2), _bits(m.group(3))
        if sign == "U" or frm == to:
            return lambda a: a
        mask = (1 << to) - 1
        return lambda a: _signed(a, frm) & mask
    if m := _NARROW.match(op):
        mask = (1 << int(m.group(2))) - 1
        return lambda a: a & mask
    if m := _HI.match(op):
        half, mask = _bits(m.group(1)) // 2, (1 << int(m.group(2))) - 1
        return lambda a: (a >> half) & mask
    if m := _HL.match(op):
        half = int(m.group(1))
        return lambda a, b: (a << half) | b
    if m := _NOT.match(op):
        mask = (1 << _bits(m.group(1))) - 1
        return lambda a: ~a & mask
    if m := _BITWISE_V128.match(op):
        return _arith(m.group(1), 128)
    return None


INT_CONSTS = frozenset({"Ity_I1", "Ity_I8", "Ity_I16", "Ity_I32", "Ity_I64", "Ity_I128",
                        "Ity_V128", "Ity_V256"})
_INT_OPS: dict[str, object] = {}
_ANGR_OPS: dict[tuple, object] = {}


def angr_value(v, ty: str):
    """``v`` (an int, or a claripy bit-vector) as angr's engine holds a value of type ``ty``."""
    a = claripy.BVV(v, pyvex.get_type_size(ty)) if type(v) is int else v
    return a.raw_to_fp() if ty.startswith("Ity_F") else a


def value_of(ast):
    """A claripy value as this module holds it: the int of a constant (floats: their bits), else
    the bit-vector itself."""
    if isinstance(ast, claripy.ast.FP):
        ast = ast.raw_to_bv()
    return ast if ast.symbolic else ast.concrete_value


def concrete(ast) -> int:
    """The int of a constant claripy value (floats: their bits); Fallback if it is symbolic."""
    if ast.symbolic:
        raise Fallback
    if isinstance(ast, claripy.ast.FP):
        ast = ast.raw_to_bv()
    return ast.concrete_value


def cached_int_op(op: str):
    """:func:`int_op`, computed once per operation name."""
    f = _INT_OPS.get(op, False)
    if f is False:
        f = _INT_OPS[op] = int_op(op)
    return f


def angr_op(op: str, extended: bool, fp: bool):
    """angr's ``SimIROp`` for ``op`` under the state options ``EXTENDED_IROP_SUPPORT`` and
    ``SUPPORT_FLOATING_POINT``, made once."""
    key = (op, extended, fp)
    simop = _ANGR_OPS.get(key)
    if simop is None:
        simop = _ANGR_OPS[key] = irop.vexop_to_simop(op, extended=extended, fp=fp)
    return simop

"""``strtol`` and its family as C defines them (C11 7.22.1.4), over symbolic bytes, without forking.

angr's ``strtol`` (and ``atoi``, ``strtoul`` built on it) does not skip leading white space, reads
at most ``max_strtol_len`` = 11 bytes, accepts the digit equal to the base for bases under 10,
clamps a negative overflow to ``LONG_MAX``, sets no ``errno`` and adds a constraint on a fresh
``num_bytes`` symbol to the path. A path it calls "no digits" can then hold an input such as
``" 7"`` that the native program reads as 7: its test does not replay, and a native outcome that
needs white space or a long number is missed.

These procedures read the string's bytes through the relocatable memory (as the string models of
:mod:`angr_ram.procedures.strings` do) up to the first byte that ends the number for sure, and run
the standard's automaton over them as if-then-else expressions: white space, an optional sign, the
``0x``/``0X`` prefix for base 16 and base 0 (and ``0b``/``0B`` for C23's ``__isoc23_`` forms with
base 2 or 0), base 0's octal or decimal choice, digits up to the base, saturation to
``LONG_MIN``/``LONG_MAX`` (``ULONG_MAX``) with ``errno = ERANGE``, and ``*endptr`` = ``nptr`` when
there is no digit. The path gets no new constraint and no new symbol: a branch on the result forks
as the program's own code decides. A pointer that selects among many strings, or a string whose
end is not in reach, goes to angr's procedure (counted as a fallback).
"""

from __future__ import annotations

import angr
import claripy

from angr_ram.procedures.byte_scan import Bytes, by_cases, count_answer
from angr_ram.procedures.libc import set_errno

ERANGE, EINVAL = 34, 22
(WS, SIGNED, ZERO, PREFIX_X, PREFIX_B, DIGITS, DONE) = range(7)
_PHASE_BITS = 3
_INVALID = 36            # digit value of a byte that is no digit in any base


def _phase(p: int):
    return claripy.BVV(p, _PHASE_BITS)


def _digit(c):
    """The value of byte ``c`` as a digit of base 36 (``'0'``-``'9'``, ``'a'``-``'z'``, ``'A'``-``'Z'``),
    36 for any other byte; an 8-bit expression."""
    if not c.symbolic:
        v = c.concrete_value
        d = (v - 48 if 48 <= v <= 57 else v - 87 if 97 <= v <= 122 else v - 55 if 65 <= v <= 90 else _INVALID)
        return claripy.BVV(d, 8)
    return claripy.If(claripy.And(c >= 48, c <= 57), c - 48,
                      claripy.If(claripy.And(c >= 97, c <= 122), c - 87,
                                 claripy.If(claripy.And(c >= 65, c <= 90), c - 55, claripy.BVV(_INVALID, 8))))


def _is(c, *chars):
    return claripy.Or(*[c == ch for ch in chars]) if len(chars) > 1 else c == chars[0]


def _below(d, kind, kinds):
    """``d < kind`` (a digit of the current base), decided without the solver where ``d`` is concrete."""
    if kind.symbolic and not d.symbolic:
        ks = [k for k in sorted(kinds) if d.concrete_value < k]
        if not ks:
            return claripy.false()
        if len(ks) == len(kinds):
            return claripy.true()
        return claripy.Or(*[kind == k for k in ks]) if len(ks) > 1 else kind == ks[0]
    return claripy.ULT(d, kind)


def _times(mag, kind, kinds):
    """``mag * kind`` for a 72-bit ``mag`` and an 8-bit ``kind`` among ``kinds`` (shifts where it can)."""
    if not kind.symbolic:
        return mag * kind.concrete_value
    out = mag * min(kinds)
    for k in sorted(kinds)[1:]:
        out = claripy.If(kind == k, mag * k, out)
    return out


class ParsedNumber:
    """What the automaton found: ``neg`` (a minus sign), ``mag`` (the digits' value, modulo 2**64),
    ``over`` (the digits' value exceeds 2**64 - 1) and ``end`` (the offset after the last digit,
    0 when there is none: ``*endptr = nptr``)."""

    def __init__(self, neg, mag, over, end):
        self.neg, self.mag, self.over, self.end = neg, mag, over, end

    def as_signed(self):
        """``(value, erange)`` of ``strtol``: saturated to ``LONG_MIN``/``LONG_MAX``."""
        limit = 1 << 63
        erange = claripy.Or(self.over, claripy.If(self.neg, self.mag.UGT(limit), self.mag.UGE(limit)))
        clamp = claripy.If(self.neg, claripy.BVV(limit, 64), claripy.BVV(limit - 1, 64))
        return claripy.If(erange, clamp, claripy.If(self.neg, -self.mag, self.mag)), erange

    def as_unsigned(self):
        """``(value, erange)`` of ``strtoul``: a minus sign negates in the unsigned type."""
        value = claripy.If(self.neg, -self.mag, self.mag)
        return claripy.If(self.over, claripy.BVV(2**64 - 1, 64), value), self.over


# the phases each phase can move to on one byte
_NEXT = {WS: {WS, SIGNED, ZERO, DIGITS, DONE}, SIGNED: {ZERO, DIGITS, DONE},
         ZERO: {PREFIX_X, PREFIX_B, DIGITS, DONE}, PREFIX_X: {DIGITS, DONE}, PREFIX_B: {DIGITS, DONE},
         DIGITS: {DIGITS, DONE}, DONE: {DONE}}


def parse_number(state, ptr, readable: int, base: int, c23: bool = False) -> ParsedNumber | None:
    """Run ``strtol``'s automaton over the bytes at ``ptr`` (at most ``readable`` of them) for a
    concrete ``base`` (0 or 2..36); None when the number may go on past the readable bytes."""
    return parse_digits(Bytes(state, ptr, readable), base, c23)


def parse_digits(s, base: int, c23: bool = False) -> ParsedNumber | None:
    """:func:`parse_number` over ``s``: ``s[i]`` is byte ``i`` (an 8-bit expression) or None past
    the bytes there are (a number that may go on there: None)."""
    hex_prefix = base in (0, 16)
    bin_prefix = c23 and base in (0, 2)
    zero_kind = 8 if base == 0 else base          # the base after a leading '0' with no prefix letter
    first_kind = 10 if base == 0 else base
    kinds = ({8, 10, 16, 2} if c23 else {8, 10, 16}) if base == 0 else {base}
    phase, possible = _phase(WS), {WS}
    neg, over = claripy.false(), claripy.false()
    mag = claripy.BVV(0, 72)
    end = claripy.BVV(0, 64)
    kind = claripy.BVV(first_kind, 8)
    i = 0
    while possible != {DONE}:
        c = s[i]
        if c is None:
            return None
        d = _digit(c)
        after = claripy.BVV(i + 1, 64)
        keep = (mag, over, end, kind, neg)
        arms = {DONE: (_phase(DONE), *keep)}
        if possible & {WS, SIGNED}:
            # the first byte after the white space and the sign: a '0' that may start a prefix,
            # a digit, or the end with no digit
            first = claripy.ULT(d, first_kind)
            p0 = claripy.If(first, _phase(DIGITS), _phase(DONE))
            m0 = claripy.If(first, d.zero_extend(64), mag)
            e0 = claripy.If(first, after, end)
            if hex_prefix or bin_prefix:
                p0 = claripy.If(c == 48, _phase(ZERO), p0)
                e0 = claripy.If(c == 48, after, e0)
                k0 = claripy.If(c == 48, claripy.BVV(zero_kind, 8), kind)
            else:
                k0 = kind
            arms[SIGNED] = (p0, m0, over, e0, k0, neg)
            space = claripy.Or(c == 0x20, claripy.And(c >= 9, c <= 13))
            sign = _is(c, 43, 45)
            skip = claripy.Or(space, sign)
            arms[WS] = (claripy.If(space, _phase(WS), claripy.If(sign, _phase(SIGNED), p0)),
                        claripy.If(skip, mag, m0), over, claripy.If(skip, end, e0),
                        claripy.If(skip, kind, k0), claripy.If(sign, c == 45, neg))
        if ZERO in possible:
            # a '0' was read (a digit: end is past it); 'x' or 'b' may follow, else more digits
            letter_x = _is(c, 120, 88) if hex_prefix else claripy.false()
            letter_b = _is(c, 98, 66) if bin_prefix else claripy.false()
            letter = claripy.Or(letter_x, letter_b)
            more = claripy.ULT(d, zero_kind)
            arms[ZERO] = (claripy.If(letter_x, _phase(PREFIX_X),
                                     claripy.If(letter_b, _phase(PREFIX_B),
                                                claripy.If(more, _phase(DIGITS), _phase(DONE)))),
                          claripy.If(claripy.And(claripy.Not(letter), more), d.zero_extend(64), mag), over,
                          claripy.If(claripy.And(claripy.Not(letter), more), after, end),
                          claripy.If(letter_x, claripy.BVV(16, 8),
                                     claripy.If(letter_b, claripy.BVV(2, 8), claripy.BVV(zero_kind, 8))), neg)
        for ph, k in ((PREFIX_X, 16), (PREFIX_B, 2)):
            if ph in possible:
                # after "0x" ("0b"): a digit of that base goes on; else the number was the "0"
                ok = claripy.ULT(d, k)
                arms[ph] = (claripy.If(ok, _phase(DIGITS), _phase(DONE)), claripy.If(ok, d.zero_extend(64), mag),
                            over, claripy.If(ok, after, end), claripy.BVV(k, 8), neg)
        if DIGITS in possible:
            ok = _below(d, kind, kinds)
            wide = _times(mag, kind, kinds) + d.zero_extend(64)
            arms[DIGITS] = (claripy.If(ok, _phase(DIGITS), _phase(DONE)),
                            claripy.If(ok, claripy.ZeroExt(8, wide[63:0]), mag),
                            claripy.If(ok, claripy.Or(over, wide[71:64] != 0), over),
                            claripy.If(ok, after, end), kind, neg)
        phase, mag, over, end, kind, neg = _select(phase, possible, arms)
        possible = ({phase.concrete_value} if not phase.symbolic
                    else set().union(*(_NEXT[p] for p in possible)))
        i += 1
    return ParsedNumber(neg, mag[63:0], over, end)


def _same(a, b) -> bool:
    """The same expression (claripy's structural hash; ``identical`` ignores variable names); two
    constants are the same when their values are (annotations of the bytes they came from aside)."""
    if a is b:
        return True
    if not a.symbolic and not b.symbolic:
        return a.op == b.op and a.args == b.args
    return a.hash() == b.hash()


def _select(phase, possible, arms):
    """The fields of the arm of ``phase`` (an if-then-else over the ``possible`` phases when it is
    symbolic)."""
    if not phase.symbolic:
        return arms[phase.concrete_value]
    order = sorted(possible)
    fields = []
    for k in range(len(arms[order[0]])):
        values = [arms[p][k] for p in order]
        out = values[-1]
        if not all(_same(v, out) for v in values):       # one value for every phase: no if-then-else
            for p, v in zip(reversed(order[:-1]), reversed(values[:-1]), strict=True):
                out = out if _same(v, out) else claripy.If(phase == p, v, out)
        fields.append(out)
    return tuple(fields)


class _Strto(angr.SimProcedure):
    """``strtol(nptr, endptr, base)``: the value, ``*endptr`` and ``errno`` (angr's procedure when
    the string's end is not in reach or the pointer selects among too many strings)."""

    UNSIGNED = False
    C23 = False
    ANGR = "strtol"

    def run(self, nptr, endptr, base):  # pylint: disable=arguments-differ
        r = self.parse(nptr, endptr, base)
        return r if r is not None else self.inline_call(angr.SIM_PROCEDURES["libc"][self.ANGR],
                                                        nptr, endptr, base).ret_expr

    def parse(self, nptr, endptr, base):
        """The value as a 64-bit expression, or None (nothing done) for angr's procedure."""
        state = self.state
        if base.symbolic:
            vals = state.solver.eval_upto(base, 2)
            if len(vals) != 1:
                return None
            base = claripy.BVV(vals[0], base.length)
        b = base.concrete_value & 0xFFFFFFFF
        if b >= 1 << 31:
            b -= 1 << 32
        if b < 0 or b == 1 or b > 36:        # glibc: EINVAL, 0, *endptr untouched
            set_errno(state, EINVAL)
            return claripy.BVV(0, 64)
        unsigned, c23 = self.UNSIGNED, self.C23

        def one(p, n):
            r = parse_number(state, p, n, b, c23)
            if r is None:
                return None
            value, erange = r.as_unsigned() if unsigned else r.as_signed()
            end = claripy.If(r.end == 0, p, p + r.end)
            return claripy.Concat(value, end, claripy.If(erange, claripy.BVV(1, 8), claripy.BVV(0, 8)))

        packed = by_cases(state, [nptr], one)
        count_answer(state, packed is not None)
        if packed is None:
            return None
        value, end, erange = packed[135:72], packed[71:8], packed[7:0] != 0
        if endptr.symbolic or endptr.concrete_value != 0:
            state.memory.store(endptr, end, endness=state.arch.memory_endness)
        set_errno(state, ERANGE, erange)
        return value

class _Strtoul(_Strto):
    UNSIGNED = True
    ANGR = "strtoul"


class _Isoc23Strtol(_Strto):
    C23 = True


class _Isoc23Strtoul(_Strtoul):
    C23 = True


class _StrtolInternal(_Strto):
    """glibc's ``__strtol_internal(nptr, endptr, base, group)``: ``strtol`` (no grouping in C)."""

    def run(self, nptr, endptr, base, group):  # pylint: disable=arguments-differ,unused-argument
        return super().run(nptr, endptr, base)


class _StrtoulInternal(_StrtolInternal):
    UNSIGNED = True
    ANGR = "strtoul"


class _Atoi(_Strto):
    """``atoi(s)`` = ``(int) strtol(s, NULL, 10)`` (glibc; ``atol``/``atoll``: ``INT_BITS`` = 64)."""

    INT_BITS = 32

    def run(self, s):  # pylint: disable=arguments-differ
        r = self.parse(s, claripy.BVV(0, 64), claripy.BVV(10, 32))
        if r is None:
            return self.inline_call(angr.SIM_PROCEDURES["libc"]["atoi"], s).ret_expr
        return r if self.INT_BITS == 64 else r[31:0].sign_extend(32)


class _Atol(_Atoi):
    INT_BITS = 64


NUMBER_PROCEDURES = {
    "strtol": _Strto, "strtoll": _Strto, "strtoq": _Strto, "strtoimax": _Strto,
    "strtoul": _Strtoul, "strtoull": _Strtoul, "strtouq": _Strtoul, "strtoumax": _Strtoul,
    "__isoc23_strtol": _Isoc23Strtol, "__isoc23_strtoll": _Isoc23Strtol, "__isoc23_strtoimax": _Isoc23Strtol,
    "__isoc23_strtoul": _Isoc23Strtoul, "__isoc23_strtoull": _Isoc23Strtoul, "__isoc23_strtoumax": _Isoc23Strtoul,
    "__strtol_internal": _StrtolInternal, "__strtoll_internal": _StrtolInternal,
    "__strtoul_internal": _StrtoulInternal, "__strtoull_internal": _StrtoulInternal,
    "atoi": _Atoi, "atol": _Atol, "atoll": _Atol,
}

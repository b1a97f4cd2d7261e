"""printf's text of a symbolic integer with too many values to fork on: symbolic digits.

``cksum`` prints the CRC of its input with ``%u``: 2^32 values, so forking once per value (what
:func:`angr_ram.procedures.libc.complete_format_replace` does up to ``MAX_FORMAT_VALUES``) cannot
work, and picking one value (stock angr) prints text the path contradicts. A conversion of a base
(``%d %i %u``: 10, ``%x %X``: 16, ``%o``: 8) has a text whose length is its number of digits (and a
sign): the path forks once per feasible length (at most 20 digits, twice with a sign), and within
one length every digit is an expression of the value: ``(v / base^k) % base``. The text is exact
for every value the path allows; a test's model fixes it.
"""

from __future__ import annotations

import claripy

BASES = {b"d": 10, b"i": 10, b"u": 10, b"x": 16, b"X": 16, b"o": 8}


def base_of(spec) -> int | None:
    """The base of an integer conversion (``spec.string``'s last character; angr lower-cases
    ``spec_type``), or None for others (``%c``, ``%p``, ...)."""
    return BASES.get(spec.string[-1:])


def _digits(v: int, base: int) -> int:
    n = 1
    while v >= base:
        v //= base
        n += 1
    return n


def class_constraint(v, signed: bool, base: int, negative: bool, ndigits: int):
    """The constraint that ``v``'s text has a sign (``negative``) and ``ndigits`` digits."""
    width = v.size()
    neg = claripy.SLT(v, 0) if signed else claripy.false()
    mag = claripy.If(neg, -v, v) if signed else v
    low = base ** (ndigits - 1) if ndigits > 1 else 0
    top = min(base ** ndigits - 1, (1 << width) - 1)
    return claripy.And(neg if negative else claripy.Not(neg), claripy.UGE(mag, claripy.BVV(low, width)),
                       claripy.ULE(mag, claripy.BVV(top, width)))


def _classes(v, signed: bool, base: int):
    width = v.size()
    for negative in ((False, True) if signed else (False,)):
        biggest = (1 << (width - 1)) if negative else (1 << (width - int(signed))) - 1
        for n in range(1, _digits(biggest, base) + 1):
            yield (negative, n)


def class_on_path(state, v, signed: bool, base: int):
    """The (class, constraint) among the path's constraints (a fork of this conversion re-running
    its step), or None; no query."""
    present = {c.hash() for c in state.solver.constraints}
    for k in _classes(v, signed, base):
        c = class_constraint(v, signed, base, *k)
        if c.hash() in present:
            return k, c
    return None


def length_classes(state, v, signed: bool, base: int) -> list:
    """The feasible (negative, digits) classes of ``v``'s text with their constraints, in order.

    A class the path already constrains to (a fork of this conversion re-running its step) is
    found among the path's constraints without a query; otherwise one model gives a feasible class
    and each other class is one satisfiability check."""
    known = class_on_path(state, v, signed, base)
    if known is not None:
        return [known]
    classes = [(k, class_constraint(v, signed, base, *k)) for k in _classes(v, signed, base)]
    x = state.solver.eval(v)
    if signed and x >> (v.size() - 1):
        x -= 1 << v.size()
    seen = (x < 0, _digits(abs(x), base))
    return [(k, c) for k, c in classes if k == seen or state.solver.satisfiable(extra_constraints=[c])]


def symbolic_text(spec, v, negative: bool, ndigits: int, upper: bool):
    """The text of ``spec`` for ``v`` on a path where ``v`` is ``negative`` or not and has ``ndigits``
    digits (the path's constraint): a bit-vector of the sign, the digits and the field width's
    padding. The digits divide only as many bits as the class's largest value needs (a CRC in a
    64-bit register, 10 digits: 34 bits)."""
    base = base_of(spec)
    mag = -v if negative else v
    bits = max(8, min(mag.size(), (base ** ndigits - 1).bit_length()))
    mag = mag[bits - 1:0] if bits < mag.size() else mag
    width = mag.size()
    digits = []
    for k in range(ndigits - 1, -1, -1):
        q = mag if k == 0 else mag // claripy.BVV(base ** k, width)
        d = (q % claripy.BVV(base, width))[7:0]
        if base == 16:
            a = ord("A") if upper else ord("a")
            digits.append(claripy.If(claripy.ULT(d, 10), d + ord("0"), d + (a - 10)))
        else:
            digits.append(d + ord("0"))
    sign = [claripy.BVV(b"-")] if negative else []
    pad = spec.length_spec - ndigits - len(sign) if isinstance(spec.length_spec, int) else 0
    if pad > 0 and spec.pad_chr == "0":
        parts = sign + [claripy.BVV(b"0" * pad)] + digits
    elif pad > 0:
        parts = [claripy.BVV(spec.pad_chr.encode("latin-1") * pad)] + sign + digits
    else:
        parts = sign + digits
    return claripy.Concat(*parts) if len(parts) > 1 else parts[0]

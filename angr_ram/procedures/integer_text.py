"""printf's text of a symbolic integer with too many values to fork on: symbolic digits.

``cksum`` prints the CRC of its input with ``%u``: 2^32 values, so forking once per value (what
:func:`angr_ram.procedures.libc.complete_format_replace` does up to ``MAX_FORMAT_VALUES``) cannot
work, and picking one value (stock angr) prints text the path contradicts. A conversion of a base
(``%d %i %u``: 10, ``%x %X``: 16, ``%o``: 8) has a text whose length is its number of digits (and a
sign): the path forks once per feasible length (at most 20 digits, twice with a sign), and within
one length every digit is an expression of the value: ``(v / base^k) % base``. The text is exact
for every value the path allows; a test's model fixes it.

A conversion padded with zeros to a fixed number of digits (``%02x``, ``%03o``, ``%.8u``) prints
every value of at most that many digits in the same length: when the value's bits say it fits
(a byte zero-extended for ``%02x``), :func:`fixed_digits` gives the text with no fork and no query
(``md5sum``'s hex digest of a symbolic input would otherwise ask z3 about MD5's output bits).
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


def known_max(v) -> int:
    """The largest unsigned value ``v`` can take by its structure alone (zero-extensions, a
    concatenation under zero bits, a mask); no query."""
    if v.op == "ZeroExt":
        return (1 << v.args[1].size()) - 1
    if v.op == "Concat" and not v.args[0].symbolic and v.args[0].concrete_value == 0:
        return (1 << (v.size() - v.args[0].size())) - 1
    if v.op == "__and__":
        masks = [a.concrete_value for a in v.args if not a.symbolic]
        if masks:
            return min(masks)
    return (1 << v.size()) - 1


def padded_digits(spec) -> int | None:
    """How many digits conversion ``spec`` always prints for a non-negative value that has at most
    that many (a precision, or the ``0`` flag's width less a sign), or None (``#``: 0 prints
    otherwise; no padding; ``-``: spaces after)."""
    flags, width, precision = layout(spec)
    if b"#" in flags:
        return None
    if precision is not None:
        return precision if isinstance(precision, int) and precision >= 1 else None
    if b"0" not in flags or b"-" in flags or not isinstance(width, int):
        return None
    sign = 1 if spec.string[-1:] in (b"d", b"i") and (b"+" in flags or b" " in flags) else 0
    return width - sign if width - sign >= 1 else None


def fixed_digits(spec, v, signed: bool):
    """The text of ``spec`` for ``v`` when its padding gives every value ``v`` can take (by its
    bits: :func:`known_max`) the same number of digits, else None."""
    base, n = base_of(spec), padded_digits(spec)
    if base is None or n is None:
        return None
    top = known_max(v)
    if signed and top >> (v.size() - 1):
        return None                       # it may be negative
    if top > base ** n - 1:
        return None
    return symbolic_text(spec, v, False, n)


def layout(spec):
    """(flags, width, precision) of conversion ``spec``: a :class:`RamSpec`'s own (resolved: ints or
    None), or angr's ``FormatSpecifier``'s width and ``0`` padding."""
    flags = getattr(spec, "flags", None)
    if flags is not None:
        return flags, spec.width, spec.precision
    width = spec.length_spec if isinstance(spec.length_spec, int) else None
    return (b"0" if spec.pad_chr == "0" else b""), width, None


def zero_differs(spec) -> bool:
    """Whether 0 prints otherwise than the other one-digit values: ``#`` (no ``0x``) or precision 0
    (no digit at all)."""
    flags, _, precision = layout(spec)
    return b"#" in flags or precision == 0


def compose(spec, negative: bool, digits: list, ndigits: int, zero: bool):
    """C99's text of integer conversion ``spec`` (7.19.6.1) from the value's ``ndigits`` digits
    (``digits``: bytes and bit-vectors): zeros up to the precision (none at all for 0 and precision
    0), the sign (``-``; ``+`` or a space for ``%d %i`` with those flags), ``#``'s ``0x`` (not for 0)
    or the leading ``0`` of ``%o``, then the width's padding: spaces after with ``-``, zeros after
    the sign with ``0`` and no precision, else spaces before."""
    conv = spec.string[-1:]
    flags, width, precision = layout(spec)
    if zero and precision == 0:
        digits, ndigits = [], 0
    leading_zero = zero and ndigits > 0
    if precision is not None and precision > ndigits:
        digits, ndigits, leading_zero = [b"0" * (precision - ndigits)] + digits, precision, True
    prefix = b"-" if negative else b""
    if not negative and conv in (b"d", b"i"):
        prefix = b"+" if b"+" in flags else b" " if b" " in flags else b""
    if b"#" in flags and conv == b"o" and not leading_zero:
        digits, ndigits = [b"0"] + digits, ndigits + 1
    elif b"#" in flags and conv in (b"x", b"X") and not zero:
        prefix = b"0" + conv
    pad = width - len(prefix) - ndigits if width else 0
    if pad <= 0:
        parts = [prefix, *digits]
    elif b"-" in flags:
        parts = [prefix, *digits, b" " * pad]
    elif b"0" in flags and precision is None:
        parts = [prefix, b"0" * pad, *digits]
    else:
        parts = [b" " * pad, prefix, *digits]
    return concat(parts)


def concat(parts: list):
    """One bit-vector of ``parts`` (bytes and bit-vectors; empty ones left out)."""
    bvs = [claripy.BVV(p) if isinstance(p, bytes) else p for p in parts if not isinstance(p, bytes) or p]
    if not bvs:
        return claripy.BVV(b"")
    return claripy.Concat(*bvs) if len(bvs) > 1 else bvs[0]


def symbolic_text(spec, v, negative: bool, ndigits: int, zero: bool = False):
    """The text of ``spec`` for ``v`` on a path where ``v`` is ``negative`` or not and has ``ndigits``
    digits (the path's constraint; ``zero``: it is 0): a bit-vector of the sign, the digits and the
    field width's padding (:func:`compose`). The digits divide only as many bits as the class's
    largest value needs (a CRC in a 64-bit register, 10 digits: 34 bits)."""
    base = base_of(spec)
    upper = spec.string[-1:] == b"X"
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
    return compose(spec, negative, digits, ndigits, zero)

"""printf conversion specifications as C99 writes them: ``%[flags][width][.precision][length]conversion``.

angr's ``FormatParser._match_spec`` knows a digit width, ``.*`` and a leading ``0``, nothing else:
``%*s`` (a width taken from the arguments, as Debian's ``nl`` prints its numbers), ``%-10s`` or
``%.3s`` are not conversions to it, so it printed them as text and gave their arguments to the
conversions after them (a ``%s`` read the string at the address 6, the width). :func:`match_spec`
parses the whole syntax into a :class:`RamSpec`, which angr's code reads as before (``length_spec``
the width or ``b".*"``, ``pad_chr``) and angr-ram's ``printf`` (:mod:`.libc`) reads in full:
the flags, a width or precision of ``*`` taken from the arguments, the precision of ``%s``.

A format byte that is symbolic and not one value (GNU ``printf`` builds ``%j`` + the user's
conversion byte, known only to be one of ``o u x X``) is text to angr's parser, even where it may
be ``%`` or is the conversion of a ``%`` before it: ``printf %u`` was predicted to print ``%u``
(natively ``0``). :func:`deciding_targets` names the fork that decides such a byte: ``%`` or not
for a byte of text, one fork per value (up to :data:`SPEC_FORK_VALUES`, else one per character
a conversion can hold and one for none of them) for a byte inside a conversion.
"""

from __future__ import annotations

import re

import claripy
from angr.errors import SimProcedureError
from angr.procedures.stubs.format_parser import FormatSpecifier

_SPEC = re.compile(rb"([-+ #0]*)(\*|[0-9]+)?(?:\.(\*|[0-9]*))?")
PERCENT = 0x25
SPEC_FORK_VALUES = 16
# every character a conversion specification can hold (flags, width, precision, length, conversion)
SPEC_CHARS = b"-+ #0123456789.*hlLqjzt" + b"diouxXeEfFgGaAcspn%"


class RamSpec(FormatSpecifier):
    """A conversion with its flags, width (an int, ``"*"`` or None) and precision (likewise)."""

    __slots__ = ("flags", "precision", "width")

    def __init__(self, sss, ty, flags: bytes, width, precision):
        left = b"-" in flags
        pad = "0" if b"0" in flags and not left else " "
        length_spec = width if isinstance(width, int) else (b".*" if precision == "*" and width is None else None)
        super().__init__(sss, length_spec, pad, ty)
        self.flags, self.width, self.precision = flags, width, precision


def match_spec(parser, nugget: bytes):
    """The :class:`RamSpec` at the start of ``nugget`` (the bytes after a ``%``), or None."""
    m = _SPEC.match(nugget)
    flags, width, precision = m.group(1), m.group(2), m.group(3)
    rest = nugget[m.end():]
    for spec in _longest_first(parser._all_spec):    # pylint: disable=protected-access
        if rest.startswith(spec):
            try:
                ty = parser._all_spec[spec].with_arch(parser.arch)    # pylint: disable=protected-access
            except Exception as err:  # noqa: BLE001 - angr's own message for an unknown type
                raise SimProcedureError(f"format specifier uses unknown type {parser._all_spec[spec]!r}") from err
            return RamSpec(nugget[:m.end() + len(spec)], ty, flags, _number(width), _number(precision))
    if rest[:1] == b"L" and rest[1:2] and rest[1] in b"eEfFgGaA":       # long double: not in angr's table
        ty = parser._all_spec[rest[1:2]].with_arch(parser.arch)    # pylint: disable=protected-access
        return RamSpec(nugget[:m.end() + 2], ty, flags, _number(width), _number(precision))
    return None


_SORTED: dict[int, tuple] = {}


def _longest_first(all_spec: dict) -> tuple:
    """angr's conversions (one class-wide table), longest first: sorted once."""
    key = id(all_spec)
    if key not in _SORTED or len(_SORTED[key]) != len(all_spec):
        _SORTED[key] = tuple(sorted(all_spec, key=len, reverse=True))
    return _SORTED[key]


def _number(text):
    if text is None:
        return None
    if text == b"*":
        return "*"
    return int(text) if text else 0


def deciding_targets(parser, fmt: list):
    """``(targets, what)`` of the fork that decides the first symbolic byte of ``fmt`` (angr's list
    of one-byte ``bytes`` and 8-bit ASTs) whose value changes how the format parses, or None."""
    solver = parser.state.solver
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if type(c) is not bytes:
            if solver.satisfiable(extra_constraints=[c == PERCENT]):
                return [c == PERCENT, c != PERCENT], "printf format byte that may be %"
            i += 1
            continue
        if c != b"%":
            i += 1
            continue
        j = i + 1
        while j < len(fmt) and type(fmt[j]) is bytes:
            j += 1
        spec = parser._match_spec(b"".join(fmt[i + 1:j]))    # pylint: disable=protected-access
        if spec is not None:
            i += 1 + len(spec)
        elif j < len(fmt):
            return _value_cases(solver, fmt[j]), "printf conversion byte"
        else:
            i += 2
    return None


def _value_cases(solver, c) -> list:
    vals = solver.eval_upto(c, SPEC_FORK_VALUES + 1)
    if len(vals) <= SPEC_FORK_VALUES:
        return [c == v for v in sorted(vals)]
    cases = [c == v for v in SPEC_CHARS if solver.satisfiable(extra_constraints=[c == v])]
    return [*cases, claripy.And(*(c != v for v in SPEC_CHARS))]

"""scanf's format strings as C99 (7.19.6.2) and glibc read them: white space (one directive, any
amount), ordinary bytes, ``%%`` and conversions ``%[*][width][length]conv`` with ``%[...]``'s scan
set. What :mod:`.scanning` leaves to angr's procedure parses to None."""

from __future__ import annotations

from dataclasses import dataclass

SPACES = b" \t\n\v\f\r"
FLOAT_CONVERSIONS = b"aAeEfFgG"
FLOAT_SIZES = {b"": 4, b"l": 8, b"L": 10}       # bytes stored: float, double, x87 long double
SIZES = {b"hh": 1, b"h": 2, b"": 4, b"l": 8, b"ll": 8, b"q": 8, b"L": 8, b"j": 8, b"z": 8, b"t": 8}
BASES = {b"d": 10, b"i": 0, b"u": 10, b"o": 8, b"x": 16, b"X": 16, b"p": 16}


@dataclass(frozen=True)
class Directive:
    """One directive: ``space``, a ``literal`` byte (``%%``: one that skips white space first) or a
    ``conversion`` (``d i u o x X p s c [ n``, floating point ``a e f g A E F G``) with its ``*``,
    width, size (bytes stored), ``%[``'s set and length modifier."""

    kind: str
    char: int = 0
    conv: bytes = b""
    suppress: bool = False
    width: int | None = None
    size: int = 4
    accept: frozenset = frozenset()
    length: bytes = b""


def parse_format(fmt: bytes, c23: bool = False) -> list[Directive] | None:
    """The directives of ``fmt``, or None for what these models leave to angr (wide characters, ``%m``, positional ``$`` arguments, a malformed conversion); ``c23``: C23's
    ``%b``."""
    out: list[Directive] = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c in SPACES:
            if not out or out[-1].kind != "space":
                out.append(Directive("space"))
            i += 1
            continue
        if c != 0x25:
            out.append(Directive("literal", char=c))
            i += 1
            continue
        i += 1
        if fmt[i:i + 1] == b"%":
            out.append(Directive("literal", char=0x25, conv=b"%"))
            i += 1
            continue
        suppress = fmt[i:i + 1] == b"*"
        i += suppress
        j = i
        while i < len(fmt) and 0x30 <= fmt[i] <= 0x39:
            i += 1
        width = int(fmt[j:i]) if i > j else None
        if fmt[i:i + 1] in (b"m", b"$") or width == 0:
            return None
        length = next((m for m in (b"hh", b"ll", b"h", b"l", b"q", b"L", b"j", b"z", b"t") if fmt.startswith(m, i)), b"")
        i += len(length)
        conv = fmt[i:i + 1]
        i += 1
        if conv in (b"s", b"c", b"[") and length:
            return None                      # %ls, %lc, %l[: wide characters
        if conv and conv in FLOAT_CONVERSIONS:
            if length not in FLOAT_SIZES:
                return None
            out.append(Directive("conversion", conv=conv, suppress=suppress, width=width, size=FLOAT_SIZES[length],
                                 length=length))
            continue
        accept: frozenset = frozenset()
        if conv == b"[":
            accept, i = _scan_set(fmt, i)
            if accept is None:
                return None
        elif conv not in BASES and conv not in (b"s", b"c", b"n") and not (c23 and conv == b"b"):
            return None
        size = 8 if conv == b"p" else SIZES[length]
        out.append(Directive("conversion", conv=conv, suppress=suppress, width=width, size=size, accept=accept))
    return out


def _scan_set(fmt: bytes, i: int):
    """The bytes ``%[...]`` accepts (from ``fmt[i]``, after the ``[``) and the index after its ``]``
    (glibc: a ``]`` first is a member, ``a-z`` a range unless ``-`` is first or last)."""
    negate = fmt[i:i + 1] == b"^"
    i += negate
    members = set()
    first = True
    while i < len(fmt) and (first or fmt[i] != 0x5D):
        c = fmt[i]
        if c == 0x2D and not first and i + 1 < len(fmt) and fmt[i + 1] != 0x5D and fmt[i - 1] <= fmt[i + 1]:
            members.update(range(fmt[i - 1], fmt[i + 1] + 1))
            i += 2
        else:
            members.add(c)
            i += 1
        first = False
    if i >= len(fmt):
        return None, i
    return frozenset(set(range(256)) - members if negate else members - {0}), i + 1   # a stream's NUL is a byte



"""Multibyte and wide characters in the C locale, the locale angr-ram's runs and replays give the
program (``setlocale`` answers "C", :mod:`.startup`; replays run with ``LC_ALL=C``).

angr models none of these: ``mbrtowc`` (139 of ``/usr/bin``'s programs import it: gnulib's
``quotearg`` and ``mbslen`` run it over file names and messages), ``iswprint`` (131), ``mbsinit``
(125), ``wcwidth`` (52)... were stubs returning any value. glibc 2.36's C locale, read off the
native functions: the charset is ASCII; ``mbrtowc`` of a byte below 0x80 converts it (1, or 0 for
NUL), of a byte at or above 0x80 fails with ``EILSEQ`` (-1, ``*pwc`` untouched); ``mbsinit`` is 1 (the
conversion has no shift state); the ``isw*`` classes and ``tow*`` mappings are ASCII's; ``wcwidth`` is
0 for L'\\0', 1 for a printable character (0x20..0x7e), else -1; ``btowc``/``wctob`` map ASCII and
refuse the rest (``WEOF``/``EOF``). Each answer is an if-then-else over a symbolic byte: no fork, no
new symbol."""

from __future__ import annotations

import angr
import claripy

from angr_ram.core.named_classes import module_class
from angr_ram.procedures.libc import set_errno, single_value
from angr_ram.procedures.strings import concrete_string

EILSEQ = 84
WEOF = 0xFFFFFFFF
INCOMPLETE = (1 << 64) - 2      # (size_t) -2
INVALID = (1 << 64) - 1         # (size_t) -1


def _null(v) -> bool:
    return not v.symbolic and v.concrete_value == 0


def convert_byte(proc, pwc, s, n, incomplete_on_empty: bool):
    """``mbrtowc(pwc, s, n, ps)`` in the C locale (``mbtowc`` with ``incomplete_on_empty=False``: -1
    for ``n == 0``); the result as 64 bits."""
    state = proc.state
    if _null(s):
        return claripy.BVV(0, 64)
    k = single_value(state, n)
    if k == 0:
        return claripy.BVV(INCOMPLETE if incomplete_on_empty else INVALID, 64)
    b = state.memory.load(s, 1)
    ascii_ = claripy.ULT(b, 0x80)
    if not _null(pwc):
        old = state.memory.load(pwc, 4, endness=state.arch.memory_endness)
        state.memory.store(pwc, claripy.If(ascii_, b.zero_extend(24), old), endness=state.arch.memory_endness)
    set_errno(state, EILSEQ, claripy.Not(ascii_))
    r = claripy.If(b == 0, claripy.BVV(0, 64), claripy.If(ascii_, claripy.BVV(1, 64), claripy.BVV(INVALID, 64)))
    if k is None:       # a symbolic n: 0 bytes available is -2 (mbtowc: -1)
        r = claripy.If(n == 0, claripy.BVV(INCOMPLETE if incomplete_on_empty else INVALID, 64), r)
    return r


class Mbrtowc(angr.SimProcedure):
    """``mbrtowc(pwc, s, n, ps)``."""

    def run(self, pwc, s, n, ps):  # pylint: disable=arguments-differ,unused-argument
        return convert_byte(self, pwc, s, n, True)


class Mbrlen(angr.SimProcedure):
    """``mbrlen(s, n, ps)``: ``mbrtowc(NULL, s, n, ps)``."""

    def run(self, s, n, ps):  # pylint: disable=arguments-differ,unused-argument
        return convert_byte(self, claripy.BVV(0, 64), s, n, True)


class Mbtowc(angr.SimProcedure):
    """``mbtowc(pwc, s, n)``: as ``mbrtowc`` but -1 for ``n == 0``; 0 for ``s == NULL`` (no shift state)."""

    def run(self, pwc, s, n):  # pylint: disable=arguments-differ
        return convert_byte(self, pwc, s, n, False)[31:0]


class Mbsinit(angr.SimProcedure):
    """``mbsinit(ps)``: 1, the C locale has no shift state."""

    def run(self, ps):  # pylint: disable=arguments-differ,unused-argument
        return claripy.BVV(1, 32)


def _in(c, lo: int, hi: int):
    return claripy.And(claripy.UGE(c, lo), claripy.ULE(c, hi))


def _upper(c):
    return _in(c, ord("A"), ord("Z"))


def _lower(c):
    return _in(c, ord("a"), ord("z"))


def _digit(c):
    return _in(c, ord("0"), ord("9"))


CLASSES = {
    "iswprint": lambda c: _in(c, 0x20, 0x7E),
    "iswgraph": lambda c: _in(c, 0x21, 0x7E),
    "iswalpha": lambda c: claripy.Or(_upper(c), _lower(c)),
    "iswupper": _upper,
    "iswlower": _lower,
    "iswdigit": _digit,
    "iswxdigit": lambda c: claripy.Or(_digit(c), _in(c, ord("a"), ord("f")), _in(c, ord("A"), ord("F"))),
    "iswalnum": lambda c: claripy.Or(_upper(c), _lower(c), _digit(c)),
    "iswspace": lambda c: claripy.Or(_in(c, 0x09, 0x0D), c == 0x20),
    "iswblank": lambda c: claripy.Or(c == 0x09, c == 0x20),
    "iswcntrl": lambda c: claripy.Or(claripy.ULT(c, 0x20), c == 0x7F),
    "iswpunct": lambda c: claripy.And(_in(c, 0x21, 0x7E), claripy.Not(claripy.Or(_upper(c), _lower(c), _digit(c)))),
}


class _Class(angr.SimProcedure):
    """An ``isw*`` class test: non-zero (1) for a member."""

    test = staticmethod(lambda c: claripy.false)

    def run(self, wc):  # pylint: disable=arguments-differ
        return claripy.If(self.test(wc[31:0]), claripy.BVV(1, 32), claripy.BVV(0, 32))


class Towlower(angr.SimProcedure):
    """``towlower(wc)``: ASCII's mapping."""

    def run(self, wc):  # pylint: disable=arguments-differ
        c = wc[31:0]
        return claripy.If(_upper(c), c + 0x20, c)


class Towupper(angr.SimProcedure):
    """``towupper(wc)``: ASCII's mapping."""

    def run(self, wc):  # pylint: disable=arguments-differ
        c = wc[31:0]
        return claripy.If(_lower(c), c - 0x20, c)


class Wcwidth(angr.SimProcedure):
    """``wcwidth(wc)``: 0 for L'\\0', 1 for a printable character, else -1."""

    def run(self, wc):  # pylint: disable=arguments-differ
        c = wc[31:0]
        return claripy.If(c == 0, claripy.BVV(0, 32), claripy.If(_in(c, 0x20, 0x7E), claripy.BVV(1, 32),
                                                                  claripy.BVV(-1 & 0xFFFFFFFF, 32)))


class Btowc(angr.SimProcedure):
    """``btowc(c)``: ASCII's byte as itself, anything else (``EOF`` too) ``WEOF``."""

    def run(self, c):  # pylint: disable=arguments-differ
        v = c[31:0]
        return claripy.If(claripy.ULT(v, 0x80), v, claripy.BVV(WEOF, 32))


class Wctob(angr.SimProcedure):
    """``wctob(wc)``: an ASCII character as its byte, anything else ``EOF``."""

    def run(self, wc):  # pylint: disable=arguments-differ
        v = wc[31:0]
        return claripy.If(claripy.ULT(v, 0x80), v, claripy.BVV(-1 & 0xFFFFFFFF, 32))


CLASS_NAMES = tuple(sorted(name[3:] for name in CLASSES))     # wctype's names: "alnum", "alpha", ...
MAX_NAME_PLACES = 32        # addresses a name pointer may have for which wctype answers each


class Wctype(angr.SimProcedure):
    """``wctype(name)``: a handle of the class ``name`` ("alpha", "digit", ...: 1 + its place in
    :data:`CLASS_NAMES`), 0 for a name that is none; a name that varies on the path gets a handle
    :class:`Iswctype` still answers for (any value)."""

    def run(self, name):  # pylint: disable=arguments-differ
        # a name picked from a table is a pointer of a few values (an if-then-else): one handle each
        places = self.state.solver.eval_upto(name, MAX_NAME_PLACES + 1) if name.symbolic else [name.concrete_value]
        if len(places) > MAX_NAME_PLACES:
            return claripy.BVS("wctype", self.arch.bits)
        out = None
        for p in places:
            text = concrete_string(self, claripy.BVV(p, self.arch.bits), 16)
            if text is None:
                return claripy.BVS("wctype", self.arch.bits)
            word = text.decode("latin-1")
            k = claripy.BVV(CLASS_NAMES.index(word) + 1 if word in CLASS_NAMES else 0, self.arch.bits)
            out = k if out is None else claripy.If(name == p, k, out)
        return out


class Iswctype(angr.SimProcedure):
    """``iswctype(wc, desc)``: whether ``wc`` is in the class :class:`Wctype` gave ``desc`` for
    (0 for a handle of no class)."""

    def run(self, wc, desc):  # pylint: disable=arguments-differ
        c = wc[31:0]
        out = claripy.BVV(0, 32)
        for k, name in enumerate(CLASS_NAMES, start=1):
            member = claripy.If(CLASSES["isw" + name](c), claripy.BVV(1, 32), claripy.BVV(0, 32))
            if not desc.symbolic:
                if desc.concrete_value == k:
                    return member
                continue
            out = claripy.If(desc == k, member, out)
        return out


WIDE_CHAR_PROCEDURES = {
    "wctype": Wctype, "wctype_l": Wctype, "__wctype_l": Wctype, "iswctype": Iswctype, "__iswctype": Iswctype,
    "iswctype_l": Iswctype, "__iswctype_l": Iswctype,
    "mbrtowc": Mbrtowc, "__mbrtowc": Mbrtowc, "mbrlen": Mbrlen, "__mbrlen": Mbrlen, "mbtowc": Mbtowc,
    "mbsinit": Mbsinit, "towlower": Towlower, "towupper": Towupper, "wcwidth": Wcwidth, "btowc": Btowc,
    "wctob": Wctob,
    **{name: module_class(globals(), name.capitalize(), (_Class,),
                        {"test": staticmethod(test), "__doc__": f"``{name}(wc)``."})
       for name, test in CLASSES.items()},
}

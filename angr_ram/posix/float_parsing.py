"""``strtod``, ``strtof``, ``atof`` (C11 7.22.1.3) and ``strtod_l``/``strtof_l`` over symbolic bytes: one path per text read.

angr has no model (stubs: an unconstrained result, ``*endptr`` untouched): a program that compares
the number it read took paths no input reaches (a probe reading 3 bytes got 491 outcomes the native
program never gives, 513 of its 514 tests mismatching). Converting decimal text to the nearest
double needs arbitrary precision, which the solver has no theory of, so here the text is made
concrete instead: the bytes at ``nptr`` are walked with the solver, extending a text byte by byte
while it can still grow into one ``strtod`` reads (white space, a sign, decimal or hexadecimal
digits with a point and an exponent, ``inf``/``infinity``, ``nan`` and ``nan(chars)``: a
*viable* prefix), and ending it where the next byte may be one that stops the number. Each text
is then read by this machine's C library (``strtod_l`` in the C locale: the glibc a replay runs
with), which gives the value, the bytes it took (``*endptr``) and ``ERANGE``. Several texts do not
fork the path: the value, ``*endptr`` and ``errno`` are if-then-else chains over the texts'
constraints (which partition the path), one arm per distinct reading, and the path forks only
where the program's own branches and outputs tell the readings apart. An interpreter that reads
a number and compares it (``mawk`` with ``$1 > 2.5``) takes a path per outcome instead of one per
text; the small-domain layer decides such floating-point comparisons by evaluation. Up to
``MAX_TEXTS`` texts in one call; with more (a 10-byte symbolic argument of ``seq``) the call forks
on the text's first symbolic byte instead, one fork per byte that extends the number and one for a
byte that ends it, and each fork reads again (:func:`undecided_lead`). A number that may run past the readable bytes, or a string at
a pointer of several values outside a forking step, is a named error, never a guess."""

from __future__ import annotations

import ctypes
import functools
import re
import struct

import angr
import claripy

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.pointers import pointer_cases
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.procedures.byte_scan import Bytes
from angr_ram.procedures.host_libc import C_LOCALE
from angr_ram.procedures.libc import _fault, set_errno

MAX_TEXT = 4096                 # the most bytes read at nptr (a pointer with no object behind it)
MAX_TEXTS = 1024                # the most texts one call forks into
MAX_WALK_QUERIES = 16 * MAX_TEXTS  # the most solver calls one call's walk over its texts makes
# a text with more symbolic bytes before its first concrete end is not walked whole (its texts are
# too many: a walk that stops at MAX_TEXTS costs thousands of solver calls) but forked byte by byte
WALK_SYMBOLIC_BYTES = 6
ERANGE = 34

_HEX = "[0-9a-f]"
_VIABLE = re.compile(  # every prefix of a text strtod reads in the C locale (case-insensitively)
    r"[ \t\n\v\f\r]*[+-]?("
    r"\d*|\d*\.\d*|(\d+\.?\d*|\.\d+)e[+-]?\d*"                                  # decimal
    rf"|0x({_HEX}*|{_HEX}*\.{_HEX}*|({_HEX}+\.?{_HEX}*|\.{_HEX}+)p[+-]?\d*)"    # hexadecimal
    r"|i(n(f(i(n(i(t(y)?)?)?)?)?)?)?"                                             # inf, infinity
    r"|n(a(n(\([0-9a-z_]*\)?)?)?)?)",                                           # nan, nan(chars)
    re.IGNORECASE | re.ASCII)
_CANDIDATES = b" \t\n\v\f\r+-.()_" + bytes(range(48, 58)) + bytes(range(65, 91)) + bytes(range(97, 123))

_LIBC = ctypes.CDLL(None, use_errno=True)


class _LongDouble(ctypes.c_longdouble):
    """A ``long double`` result kept as its bytes (ctypes turns the plain type into a Python float)."""


for _name, _type in (("strtod_l", ctypes.c_double), ("strtof_l", ctypes.c_float), ("strtold_l", _LongDouble)):
    getattr(_LIBC, _name).restype = _type
    getattr(_LIBC, _name).argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p]


@functools.lru_cache(maxsize=1 << 14)
def viable(prefix: bytes) -> bool:
    """Whether ``prefix`` can be the start of a text ``strtod`` reads (so the next byte may extend it)."""
    return _VIABLE.fullmatch(prefix.decode("latin-1")) is not None


@functools.lru_cache(maxsize=1 << 12)
def continuations(prefix: bytes) -> tuple[int, ...]:
    """The bytes that keep ``prefix`` viable."""
    return tuple(c for c in _CANDIDATES if viable(prefix + bytes([c])))


def read_number(text: bytes, bits: int = 64) -> tuple[int, int, bool]:
    """``(value's bits, bytes read, ERANGE)`` of glibc's ``strtod`` (``bits`` 32: ``strtof``) of ``text``
    in the C locale."""
    buf = ctypes.create_string_buffer(text)
    end = ctypes.c_char_p()
    ctypes.set_errno(0)
    v = (_LIBC.strtod_l if bits == 64 else _LIBC.strtof_l)(buf, ctypes.byref(end), C_LOCALE)
    erange = ctypes.get_errno() == ERANGE
    used = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buf)
    raw = struct.unpack("<Q", struct.pack("<d", v))[0] if bits == 64 else struct.unpack("<I", struct.pack("<f", v))[0]
    return raw, used, erange


def double_holds_long(text: bytes) -> bool:
    """Whether glibc's ``strtold`` of ``text`` (C locale) gives exactly the ``double`` ``strtod`` gives."""
    buf = ctypes.create_string_buffer(text)
    long_value = _LIBC.strtold_l(buf, None, C_LOCALE)
    double_value = struct.unpack("<d", struct.pack("<Q", read_number(text)[0]))[0]
    return bytes(long_value)[:10] == bytes(ctypes.c_longdouble(double_value))[:10]


def texts(state, s, most: int = MAX_TEXTS) -> list[tuple[bytes, list]] | None:
    """The texts ``strtod`` can read from the bytes ``s`` on this path, each with its constraint
    (its bytes, then a byte that stops it): at most ``most``, None for more. Raises when a text may
    run past the readable bytes or the walk needs more than ``MAX_WALK_QUERIES`` solver calls."""
    sub = state.ram.substitute if state.has_plugin("ram") else (lambda e: e)
    out, todo, asked = [], [(b"", [], ())], 0      # a prefix, its constraints, and them substituted
    while todo:
        prefix, conds, subbed = todo.pop()
        c = s[len(prefix)]
        if c is None:
            raise angr.errors.SimProcedureError(f"strtod of a number that may go on past the {len(prefix)} readable bytes")
        grow = continuations(prefix)
        if not c.symbolic:
            if c.concrete_value in grow:
                todo.append((prefix + bytes([c.concrete_value]), conds, subbed))
            else:
                out.append((prefix, conds))
            continue
        asked += 2
        if asked > MAX_WALK_QUERIES:
            raise _fault(f"strtod of a text whose values took more than {MAX_WALK_QUERIES} solver calls to walk")
        sc = sub(c)
        for v in _values(state, sc, grow, subbed):
            todo.append((prefix + bytes([v]), [*conds, c == v], (*subbed, sc == v)))
        stop = claripy.And(*[c != g for g in grow]) if grow else claripy.true()
        if not grow or state.solver.satisfiable(extra_constraints=(*subbed, sub(stop))):
            out.append((prefix, [*conds, stop]))
        if len(out) + len(todo) > most:      # each pending prefix ends in one text at least
            return None
    return out


def undecided_lead(state, s) -> tuple[int, list]:
    """``(n, cases)``: ``n`` the symbolic bytes at ``s`` from its first undecided one (a byte of more
    than one way: extending the number by different bytes, or ending it) to the first concrete byte
    that cannot be in a number, at most ``WALK_SYMBOLIC_BYTES + 1`` counted; ``cases`` the ways of that
    first undecided byte (none when every byte is decided). Bytes before it that are symbolic but of
    one way (a fork's own) are read as that byte, so each fork of the byte by byte reading decides
    one more byte and the reading ends."""
    prefix, sub = b"", (state.ram.substitute if state.has_plugin("ram") else (lambda e: e))
    while True:
        c = s[len(prefix)]
        if c is None:
            return 0, []
        grow = continuations(prefix)
        if not c.symbolic:
            if c.concrete_value not in grow:
                return 0, []
            prefix += bytes([c.concrete_value])
            continue
        sc = sub(c)
        vals = _values(state, sc, grow, ())
        ends = bool(grow) and state.solver.satisfiable(extra_constraints=(claripy.And(*[sc != g for g in grow]),))
        if len(vals) + ends > 1:
            break
        if not vals:
            return 0, []
        prefix += bytes([vals[0]])
    cases = [c == v for v in vals] + ([claripy.And(*[c != g for g in grow])] if ends else [])
    return _symbolic_count(s, len(prefix)), cases


def _symbolic_count(s, start: int) -> int:
    """The symbolic bytes of ``s`` from ``start`` to its first concrete byte that cannot be in a
    number (at most ``WALK_SYMBOLIC_BYTES + 1`` counted): no solver call."""
    n, i = 0, start
    while n <= WALK_SYMBOLIC_BYTES:
        b = s[i]
        if b is None or (not b.symbolic and b.concrete_value not in _CANDIDATES):
            break
        n += b.symbolic
        i += 1
    return n


def _values(state, c, among: tuple[int, ...], conds: tuple) -> list[int]:
    """The values of byte ``c`` among ``among`` under ``conds`` (none when they cannot hold)."""
    if not among:
        return []
    try:
        return sorted(state.solver.eval_upto(c, len(among) + 1, extra_constraints=(*conds, claripy.Or(*[c == g for g in among]))))
    except angr.errors.SimUnsatError:
        return []


class Strtod(angr.SimProcedure):
    """``strtod(nptr, endptr)``: see the module doc."""

    BITS = 64
    PARAMETERS = "char *, char **"

    def __init__(self, **kwargs):
        ret = "double" if self.BITS == 64 else "float"
        super().__init__(prototype=angr.types.parse_signature(f"{ret} f({self.PARAMETERS})"), **kwargs)

    def run(self, nptr, endptr):  # pylint: disable=arguments-differ
        return self.reading(nptr, endptr, self.BITS)

    def reading(self, nptr, endptr, bits: int, exact=None):
        """The value read at ``nptr`` (``bits`` wide), ``*endptr`` and ``errno`` set; with
        ``exact(text)``, the texts for which it is false end as an error path."""
        state = self.state
        cases = pointer_cases(state, nptr, MAX_TEXT)
        if cases is not None and len(cases) > 1:
            if not value_forking_enabled():
                raise angr.errors.SimProcedureError("strtod of a pointer into several strings outside a forking step")
            raise ForkRequest([Target(cond, "value") for cond, _, _ in cases], "strtod pointer")
        readable = cases[0][2] if cases else MAX_TEXT
        data = Bytes(state, nptr, readable)
        forking = value_forking_enabled()
        # the solver is asked which bytes are undecided only when the bytes alone leave it open
        lead, cases = undecided_lead(state, data) if forking and _symbolic_count(data, 0) > WALK_SYMBOLIC_BYTES \
            else (0, None)
        found = texts(state, data) if lead <= WALK_SYMBOLIC_BYTES else None
        if found is None:           # too many texts for one call: fork on the first undecided byte
            if cases is None:
                cases = undecided_lead(state, data)[1] if forking else []
            if not cases:
                raise _fault(f"strtod of a text with more than {MAX_TEXTS} values")
            raise ForkRequest([Target(c, "value") for c in cases], "strtod text byte")
        if exact is not None:
            found = _exact_texts(found, exact)
        arms: dict[tuple, list] = {}            # a reading (value's bits, bytes read, ERANGE): its texts
        for text, conds in found:
            arms.setdefault(read_number(text, bits), []).append(claripy.And(*conds))
        readings = sorted(arms.items(), key=lambda kv: len(kv[1]))   # the most texts: the default arm
        (raw, n, _), _ = readings[-1]
        value, used = claripy.BVV(raw, bits), claripy.BVV(n, 64)
        for (raw, n, _), conds in reversed(readings[:-1]):
            cond = claripy.Or(*conds)
            value, used = claripy.If(cond, claripy.BVV(raw, bits), value), claripy.If(cond, claripy.BVV(n, 64), used)
        if endptr.symbolic or endptr.concrete_value != 0:
            state.memory.store(endptr, nptr + used, endness=state.arch.memory_endness)
        ranged = [c for (_, _, erange), conds in readings for c in conds if erange]
        if ranged:
            set_errno(state, ERANGE, True if len(readings) == 1 else claripy.Or(*ranged))
        return value


class Strtof(Strtod):
    """``strtof(nptr, endptr)``."""

    BITS = 32


class StrtodL(Strtod):
    """``strtod_l(nptr, endptr, locale)``: the C locale's (gnulib's ``c_strtod`` passes one)."""

    PARAMETERS = "char *, char **, void *"

    def run(self, nptr, endptr, locale):  # pylint: disable=arguments-differ,unused-argument
        return super().run(nptr, endptr)


class StrtofL(StrtodL):
    BITS = 32


class Strtold(Strtod):
    """``strtold(nptr, endptr)``: the value in x87's ``st(0)``. VEX holds an x87 register as a
    ``double``, so a text whose ``long double`` is not exactly a ``double`` (``0.1``, ``1e400``) ends
    its path as a ``symbolic-format-argument`` error rather than a value the native run would not
    have; the other texts read as ``strtod`` reads them (GNU ``printf``'s float conversions, ``seq``
    and ``sort -g`` read their numbers so: angr's stub left ``*endptr`` unset, a NULL dereference)."""

    def __init__(self, **kwargs):
        angr.SimProcedure.__init__(self, prototype=angr.types.parse_signature(f"void f({self.PARAMETERS})"), **kwargs)

    def run(self, nptr, endptr):  # pylint: disable=arguments-differ
        push_x87(self.state, self.reading(nptr, endptr, 64, double_holds_long))


class StrtoldL(Strtold):
    """``strtold_l(nptr, endptr, locale)``: the C locale's."""

    PARAMETERS = "char *, char **, void *"

    def run(self, nptr, endptr, locale):  # pylint: disable=arguments-differ,unused-argument
        push_x87(self.state, self.reading(nptr, endptr, 64, double_holds_long))


def push_x87(state, value) -> None:
    """Push the 64-bit ``value`` (a ``double``'s bits) on the x87 stack, as a ``long double`` is
    returned: ``ftop`` one down, its register and tag set."""
    top = (state.regs.ftop - 1) & 7
    state.regs.ftop = top
    slot = state.solver.eval_one(top)
    base = state.arch.registers["fpreg"][0]
    state.registers.store(base + 8 * slot, value, endness=state.arch.register_endness)
    state.registers.store(state.arch.registers["fptag"][0] + slot, claripy.BVV(1, 8))


def _exact_texts(found: list, exact) -> list:
    """``found`` without the texts ``exact`` refuses; when it refuses some, those end as an error
    path (a fork), when it refuses all, the path does."""
    holds = [exact(text) for text, _ in found]
    if all(holds):
        return found
    kept = [f for f, ok in zip(found, holds, strict=True) if ok]
    message = "strtold of a text whose long double is not a double (angr holds x87 registers as doubles)"
    if not kept or not value_forking_enabled():
        raise _fault(message)
    refused = claripy.Or(*(claripy.And(*conds) for (_, conds), ok in zip(found, holds, strict=True) if not ok))
    raise ForkRequest([Target(claripy.Or(*(claripy.And(*c) for _, c in kept)), "value"),
                       Target(refused, "error", "symbolic-format-argument", message)], "strtold text")


class Atof(Strtod):
    """``atof(s)`` = ``strtod(s, NULL)``."""

    PARAMETERS = "char *"

    def run(self, s):  # pylint: disable=arguments-differ
        return super().run(s, claripy.BVV(0, 64))


FLOAT_PARSING_PROCEDURES = {"strtod": Strtod, "__strtod_internal": Strtod, "strtof": Strtof,
                            "__strtof_internal": Strtof, "strtod_l": StrtodL, "__strtod_l": StrtodL,
                            "strtof_l": StrtofL, "__strtof_l": StrtofL, "atof": Atof,
                            "strtold": Strtold, "__strtold_internal": Strtold, "strtold_l": StrtoldL,
                            "__strtold_l": StrtoldL}

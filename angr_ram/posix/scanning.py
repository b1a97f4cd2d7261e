"""The ``scanf`` family as C99 (7.19.6.2) and glibc define it, over symbolic input.

angr's ``sscanf``/``scanf``/``fscanf`` skip the format's ordinary characters and white space without
matching them, know no ``*`` (``%*c`` is text to them), no ``%[...]``, no ``%n``, no ``%i``/``%o``,
return the number of conversions even after a matching failure, and a ``%x`` at the end of a short
input raised a claripy error (no path). These models run glibc's ``__vfscanf_internal`` directive by
directive: white space in the format skips any white space; an ordinary character must match (else
the call returns); a conversion skips white space (not ``%c``, ``%[``, ``%n``), reads at most its
width, converts (integers with :mod:`.number_parsing`'s ``strtol`` automaton, glibc's
consumption of a lone ``0x`` or sign), and stores unless ``*`` suppresses it. The call returns
the number of assignments, or ``EOF`` when the input ends before the first one. ``sscanf``'s input
ends at its NUL, a stream's at the file's end (the position moves past what was consumed).

The text's structure is decided by forking: how many white-space bytes, whether a character
matches, how long a number or a string is, each a ``ForkRequest`` whose forks re-run the call
with the choice in their constraints (so a path's stores are exact; a number's value stays an
expression of its digits). Floating-point conversions are read by :mod:`.float_scan`. Wide
characters and ``%m`` are angr's procedure, as is every call while no angr-ram technique steps the
state.
"""

from __future__ import annotations

import angr
import claripy
from cle.backends.externs.simdata.io_file import io_file_data_for_arch

from angr_ram.core.errors import ForkRequest, MemoryFault, Target
from angr_ram.core.named_classes import module_class
from angr_ram.memory.pointers import pointer_cases, readable_at
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.posix.float_scan import choose, readings
from angr_ram.posix.number_parsing import parse_digits
from angr_ram.posix.scanf_formats import BASES, FLOAT_CONVERSIONS, Directive, parse_format
from angr_ram.posix.varargs import VaList
from angr_ram.procedures.byte_scan import Bytes
from angr_ram.procedures.libc import single_value

MAX_FORMAT = 4096       # bytes of a format string read
MAX_SCAN = 4096         # input bytes one directive looks at
MAX_CHOICES = 256       # feasible lengths of one directive (more: an error path that names it)
def _space(b):
    return claripy.Or(b == 0x20, claripy.And(b >= 9, b <= 13))


def _member(b, accept: frozenset):
    if not b.symbolic:
        return claripy.BoolV(b.concrete_value in accept)
    runs, lo = [], None
    for v in range(257):
        if v in accept and lo is None:
            lo = v
        elif v not in accept and lo is not None:
            runs.append(b == lo if v - 1 == lo else claripy.And(claripy.UGE(b, lo), claripy.ULE(b, v - 1)))
            lo = None
    return claripy.Or(*runs) if runs else claripy.false()


class _Input:
    """Input bytes from ``start``: ``byte(i)`` and ``end(i)`` (the input ends before byte ``i``)."""

    def byte(self, i: int):
        raise NotImplementedError

    def end(self, i: int):
        raise NotImplementedError

    def number_byte(self, i):
        """Byte ``i`` as a number reads it: a NUL where the input has ended."""
        e = self.end(i)
        return claripy.BVV(0, 8) if e.is_true() else self.byte(i) if e.is_false() else \
            claripy.If(e, claripy.BVV(0, 8), self.byte(i))

    def consume(self, n: int) -> None:
        """The call consumed ``n`` bytes (a stream moves its position)."""


class _Text(_Input):
    """``sscanf``'s string: its bytes up to the NUL (readable bytes of its object at most)."""

    def __init__(self, state, ptr, readable: int):
        self.data = Bytes(state, ptr, min(readable, MAX_SCAN))

    def byte(self, i):
        b = self.data[i]
        return claripy.BVV(0, 8) if b is None else b

    def end(self, i):
        return self.byte(i) == 0

    def number_byte(self, i):
        return self.byte(i)


class _Stream(_Input):
    """A stream's file (a ``SimFileStream``) from its position to its size."""

    def __init__(self, state, simfd, file, pos: int):
        self.state, self.simfd, self.file, self.pos = state, simfd, file, pos
        size = self.file.size
        self.size = size
        self.top = state.solver.max(size) if size.symbolic else size.concrete_value

    def byte(self, i):
        if self.pos + i >= self.top:
            return claripy.BVV(0, 8)
        return self.file.load(self.pos + i, 1)

    def end(self, i):
        if self.pos + i >= self.top:
            return claripy.true()
        return claripy.UGE(claripy.BVV(self.pos + i, self.size.size()), self.size) if self.size.symbolic \
            else claripy.false()

    def consume(self, n):
        if n:
            self.simfd.read_data(n)


class _Window:
    """The bytes a conversion may read: the input's from ``start``, a NUL from ``width`` on."""

    def __init__(self, src, start: int, width: int | None):
        self.src, self.start, self.width = src, start, width

    def __getitem__(self, i):
        if self.width is not None and i >= self.width:
            return claripy.BVV(0, 8)
        return None if i >= MAX_SCAN else self.src.number_byte(self.start + i)


class _InputFailure(Exception):  # noqa: N818 - the input ended: the call returns
    pass


class _MatchingFailure(Exception):  # noqa: N818 - a byte did not match: the call returns
    pass


class _Scan:
    """One call's run over ``directives``: ``pos`` the bytes consumed, ``done`` the assignments."""

    def __init__(self, state, src: _Input, va_arg, c23: bool):
        self.state, self.src, self.va_arg, self.c23 = state, src, va_arg, c23
        self.pos = self.done = 0
        self.known = _decided(state)

    def run(self, directives) -> int:
        """The call's return value (the input consumed is ``pos``)."""
        skip = False
        try:
            for d in directives:
                if d.kind == "space":
                    skip = True
                elif d.kind == "literal" and not d.conv:     # glibc reads a byte, then skips
                    self._not_at_end()
                    if skip:
                        self._skip_space()
                        self._not_at_end()
                    self._match(d.char)
                    skip = False
                else:
                    if skip or d.conv not in (b"c", b"[", b"n"):
                        self._skip_space()
                    skip = False
                    self._convert(d)
            if skip:
                self._skip_space()
        except _InputFailure:
            return self.done if self.done else -1
        except _MatchingFailure:
            pass
        return self.done

    def _convert(self, d: Directive) -> None:
        if d.conv == b"%":
            self._not_at_end()
            self._match(0x25)
        elif d.conv == b"n":
            if not d.suppress:
                self._store_int(claripy.BVV(self.pos, 64), d.size)
        elif d.conv == b"c":
            self._not_at_end()
            n = self._count(lambda i: claripy.Not(self.src.end(self.pos + i)), d.width or 1, "length")
            self._store_text(n, d, nul=False)
        elif d.conv in (b"s", b"["):
            self._not_at_end()
            if d.conv == b"s":
                def ok(i):
                    return claripy.And(claripy.Not(self.src.end(self.pos + i)), claripy.Not(_space(self.src.byte(self.pos + i))))
            else:
                def ok(i):
                    return claripy.And(claripy.Not(self.src.end(self.pos + i)), _member(self.src.byte(self.pos + i), d.accept))
            n = self._count(ok, d.width or MAX_SCAN, "length")
            if n == 0:
                raise _MatchingFailure
            self._store_text(n, d, nul=True)
        elif d.conv in FLOAT_CONVERSIONS:
            self._not_at_end()
            self._float(d)
        else:
            self._not_at_end()
            self._number(d)

    def _float(self, d: Directive) -> None:
        """A floating-point conversion (:mod:`.float_scan`): fork on the bytes consumed and on
        success; the value is an if-then-else over the texts' readings."""
        spec = b"%" + (b"%d" % d.width if d.width else b"") + d.length + d.conv
        arms = readings(self.state, _Window(self.src, self.pos, d.width), lambda i: self.src.end(self.pos + i),
                        spec, d.size)
        used = self._value(choose(arms, lambda k: claripy.BVV(k[2], 32)), "number length")
        arms = [(k, c) for k, c in arms if k[2] == used]
        ok = [(k, c) for k, c in arms if k[0] == 1]
        if not ok or (len(ok) < len(arms) and not self._holds(claripy.Or(*[c for _, c in ok]))):
            self.pos += used
            if all(k[0] == -1 for k, _ in arms):
                raise _InputFailure
            raise _MatchingFailure
        if not d.suppress:
            value = choose(ok, lambda k: claripy.BVV(k[1]))
            self.state.memory.store(self.va_arg("void*"), value)
            self.done += 1
        self.pos += used

    def _number(self, d: Directive) -> None:
        base = 2 if d.conv == b"b" else BASES[d.conv]
        view = _Window(self.src, self.pos, d.width)
        r = parse_digits(view, base, self.c23)
        if r is None:
            raise MemoryFault("symbolic-format-argument", f"scanf number longer than {MAX_SCAN} bytes")
        b0, b1, b2 = view[0], view[1], view[2]
        sign = claripy.Or(b0 == 0x2B, b0 == 0x2D)
        if not self._holds(r.end != 0):       # no digit: the sign alone is consumed
            self.pos += int(self._holds(sign))
            raise _MatchingFailure
        end = r.end
        if base in (0, 16):     # glibc consumes the 'x' after a lone "0" (the number is the 0)
            lone = claripy.Or(claripy.And(end == 1, b0 == 0x30), claripy.And(end == 2, sign, b1 == 0x30))
            after = claripy.If(end == 1, b1, b2)
            end = claripy.If(claripy.And(lone, claripy.Or(after == 0x78, after == 0x58)), end + 1, end)
        used = self._value(end, "number length")
        value, _ = r.as_signed() if d.conv in (b"d", b"i") else r.as_unsigned()
        if not d.suppress:
            self._store_int(value, d.size)
            self.done += 1
        self.pos += used

    # decisions: a fork when both ways are feasible
    def _holds(self, cond) -> bool:
        if not cond.symbolic:
            return cond.is_true()
        h = cond.hash()
        if h in self.known:
            return True
        if claripy.Not(cond).hash() in self.known:
            return False
        yes = self.state.solver.satisfiable(extra_constraints=[cond])
        if yes and self.state.solver.satisfiable(extra_constraints=[claripy.Not(cond)]):
            raise ForkRequest([Target(cond, "value"), Target(claripy.Not(cond), "value")], "scanf input")
        return yes

    def _value(self, expr, what: str) -> int:
        if not expr.symbolic:
            return expr.concrete_value
        known = self.known.get(expr.hash())
        if isinstance(known, int):
            return known
        vals = self.state.solver.eval_upto(expr, MAX_CHOICES + 1)
        if not vals:
            raise MemoryFault("symbolic-format-argument", f"scanf {what} has no value on this path")
        if len(vals) > MAX_CHOICES:
            raise MemoryFault("symbolic-format-argument", f"scanf {what} has more than {MAX_CHOICES} values")
        if len(vals) > 1:
            raise ForkRequest([Target(expr == v, "value") for v in sorted(vals)], f"scanf {what}")
        return vals[0]

    def _count(self, ok, limit: int, what: str) -> int:
        """How many bytes from ``pos`` on satisfy ``ok(i)`` before one does not (at most ``limit``)."""
        conds = []
        for i in range(min(limit, MAX_SCAN)):
            c = ok(i)
            if c.is_false():
                break
            conds.append(c)
        n = claripy.BVV(len(conds), 32)
        for i in range(len(conds) - 1, -1, -1):
            n = claripy.If(conds[i], n, claripy.BVV(i, 32))
        return self._value(n, what)

    def _not_at_end(self) -> None:
        if self._holds(self.src.end(self.pos)):
            raise _InputFailure

    def _skip_space(self) -> None:
        self.pos += self._count(lambda i: claripy.And(claripy.Not(self.src.end(self.pos + i)),
                                                      _space(self.src.byte(self.pos + i))), MAX_SCAN, "white space")

    def _match(self, char: int) -> None:
        if not self._holds(self.src.byte(self.pos) == char):
            raise _MatchingFailure
        self.pos += 1

    def _store_int(self, value, size: int) -> None:
        self.state.memory.store(self.va_arg("void*"), value[8 * size - 1:0], endness=self.state.arch.memory_endness)

    def _store_text(self, n: int, d: Directive, nul: bool) -> None:
        if not d.suppress:
            data = [self.src.byte(self.pos + i) for i in range(n)] + ([claripy.BVV(0, 8)] if nul else [])
            self.state.memory.store(self.va_arg("void*"), claripy.Concat(*data) if len(data) > 1 else data[0])
            self.done += 1
        self.pos += n


def _decided(state) -> dict:
    """What the path's constraints decide by themselves: each constraint's hash (True), and the
    value of each ``expr == constant`` (by ``expr``'s hash): a fork re-running the call finds its
    choices here without a query."""
    out: dict = {}
    for c in state.solver.constraints:
        out[c.hash()] = True
        if c.op == "__eq__" and len(c.args) == 2 and not c.args[1].symbolic and c.args[0].symbolic:
            out[c.args[0].hash()] = c.args[1].concrete_value
    return out


def _format(state, fmt_ptr, c23: bool):
    """The directives of the format at ``fmt_ptr``, or None (a symbolic format, one angr handles).
    The format is read to its NUL within its object's readable bytes: a format built in a heap
    buffer of exactly its size is not read past its end."""
    fmt = single_value(state, fmt_ptr)
    if fmt is None:
        return None
    readable = readable_at(state, fmt, MAX_FORMAT) if state.has_plugin("ram") else MAX_FORMAT
    if readable is None:
        return None
    readable = min(readable, MAX_FORMAT)
    raw = bytearray()
    data = Bytes(state, fmt_ptr, readable)
    for i in range(readable):
        b = data[i]
        if b is None or b.symbolic:
            return None
        if b.concrete_value == 0:
            return parse_format(bytes(raw), c23)
        raw.append(b.concrete_value)
    return None


def _answer(proc, fmt_ptr, source, va_arg, c23: bool):
    """The return value of a scanf call reading ``source()``, or None for angr's procedure."""
    if not value_forking_enabled():
        return None
    directives = _format(proc.state, fmt_ptr, c23)
    if directives is None:
        return None
    src = source()
    if src is None:
        return None
    scan = _Scan(proc.state, src, va_arg, c23)
    ret = scan.run(directives)
    src.consume(scan.pos)
    return claripy.BVV(ret & 0xFFFFFFFF, 32)


def _text(state, ptr):
    # sscanf reads only as far as its directives match: up to MAX_SCAN bytes of a string on the
    # stack or in a global (angr's max_str_len, 128, cut a longer line short: a wrong EOF)
    cases = pointer_cases(state, ptr, MAX_SCAN)
    if cases is None:
        return None
    if len(cases) > 1:
        raise ForkRequest([Target(c, "value") for c, _, _ in cases], "sscanf string")
    _, p, n = cases[0]
    return _Text(state, p, n)


def _stream(state, fd: int | None):
    simfd = state.posix.get_fd(fd) if fd is not None else None
    file = simfd.read_storage if simfd is not None else None
    if not isinstance(file, angr.SimFile) or file.size is None:     # a SimPackets: angr's procedure
        return None
    pos = single_value(state, file.pos if isinstance(file, angr.SimFileStream) else simfd.read_pos)
    return None if pos is None else _Stream(state, simfd, file, pos)


def _file_fd(state, file_ptr) -> int | None:
    offset = io_file_data_for_arch(state.arch)["fd"]
    return single_value(state, state.memory.load(file_ptr + offset, 4, endness=state.arch.memory_endness))


class RamSscanf(angr.SIM_PROCEDURES["libc"]["sscanf"]):
    """``sscanf(s, format, ...)``."""
    C23 = False

    def run(self, data, fmt):  # pylint: disable=arguments-differ
        r = _answer(self, fmt, lambda: _text(self.state, data), self.va_arg, self.C23)
        return super().run(data, fmt) if r is None else r


class RamScanf(angr.SIM_PROCEDURES["libc"]["scanf"]):
    """``scanf(format, ...)``: stdin."""
    C23 = False

    def run(self, fmt):  # pylint: disable=arguments-differ
        r = _answer(self, fmt, lambda: _stream(self.state, 0), self.va_arg, self.C23)
        return super().run(fmt) if r is None else r


class RamFscanf(angr.SIM_PROCEDURES["libc"]["fscanf"]):
    """``fscanf(stream, format, ...)``."""
    C23 = False

    def run(self, file_ptr, fmt):  # pylint: disable=arguments-differ
        r = _answer(self, fmt, lambda: _stream(self.state, _file_fd(self.state, file_ptr)), self.va_arg, self.C23)
        return super().run(file_ptr, fmt) if r is None else r


class RamVsscanf(angr.SimProcedure):
    """``vsscanf(s, format, ap)`` (angr: a stub)."""
    C23 = False

    def run(self, data, fmt, ap):  # pylint: disable=arguments-differ
        r = _answer(self, fmt, lambda: _text(self.state, data), VaList(self.state, ap), self.C23)
        return claripy.BVS("vsscanf", 32) if r is None else r


class RamVfscanf(angr.SimProcedure):
    """``vfscanf(stream, format, ap)`` (angr: a stub)."""
    C23 = False

    def run(self, file_ptr, fmt, ap):  # pylint: disable=arguments-differ
        r = _answer(self, fmt, lambda: _stream(self.state, _file_fd(self.state, file_ptr)),
                    VaList(self.state, ap), self.C23)
        return claripy.BVS("vfscanf", 32) if r is None else r


class RamVscanf(angr.SimProcedure):
    """``vscanf(format, ap)`` (angr: a stub)."""
    C23 = False

    def run(self, fmt, ap):  # pylint: disable=arguments-differ
        r = _answer(self, fmt, lambda: _stream(self.state, 0), VaList(self.state, ap), self.C23)
        return claripy.BVS("vscanf", 32) if r is None else r


def _c23(cls):
    return module_class(globals(), f"{cls.__name__}C23", (cls,), {"C23": True})


_MODELS = {"sscanf": RamSscanf, "scanf": RamScanf, "fscanf": RamFscanf,
           "vsscanf": RamVsscanf, "vfscanf": RamVfscanf, "vscanf": RamVscanf}
SCANF_PROCEDURES = {**_MODELS, **{f"__isoc99_{n}": c for n, c in _MODELS.items()},
                    **{f"__isoc23_{n}": _c23(c) for n, c in _MODELS.items()}}

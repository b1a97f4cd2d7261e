"""``strftime(s, max, format, tm)``: a ``struct tm`` as text, as glibc writes it in the C locale.

angr has no model (a stub: an unconstrained count, the buffer untouched), so a program that prints
a date printed garbage, and ``printf("%s")`` of that buffer searched unconstrained bytes for a NUL:
a one-byte program ran for minutes with z3 giving up. Here the format is read (it must be a
concrete string), the fields its conversions use are each given one value (a field with several
values on the path forks the state once per joint value, up to ``MAX_FORMAT_VALUES``; more ends the
path as a ``symbolic-format-argument`` error), and the text is this machine's C library's
``strftime_l`` in the C locale: the glibc a replay runs with (:data:`angr_ram.run.replay.NATIVE_ENV`),
so every conversion, padding flag and width is glibc's own. ``%s`` (seconds since the epoch, by
``mktime`` in the replay's zone, UTC) is computed here from the fields. The result is written
with its NUL when it fits in ``max`` bytes; otherwise 0 is returned, as glibc does."""

from __future__ import annotations

import calendar
import ctypes

import angr
import claripy

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.posix.calendar import TM_FIELDS
from angr_ram.procedures.host_libc import C_LOCALE
from angr_ram.procedures.libc import MAX_FORMAT_VALUES, _fault, single_value
from angr_ram.procedures.strings import concrete_string

MAX_FORMAT = 4096                   # the longest format read
MAX_TEXT = 1 << 16                  # the largest buffer filled (a larger max is taken as this)
ZONE_AT, GMTOFF_AT = 48, 40         # struct tm on x86-64 glibc: 9 ints, pad, long tm_gmtoff, char *tm_zone

_ALL = frozenset(TM_FIELDS) | {"gmtoff", "zone"}
_DATE = frozenset({"mday", "mon", "year"})
_CLOCK = frozenset({"hour", "min", "sec"})
_ISO_WEEK = frozenset({"year", "yday", "wday"})
USES = {  # the struct tm members each conversion reads (glibc's __strftime_internal)
    "a": {"wday"}, "A": {"wday"}, "b": {"mon"}, "B": {"mon"}, "h": {"mon"}, "C": {"year"},
    "d": {"mday"}, "e": {"mday"}, "D": _DATE, "x": _DATE, "F": _DATE, "g": _ISO_WEEK, "G": _ISO_WEEK,
    "V": _ISO_WEEK, "H": {"hour"}, "I": {"hour"}, "k": {"hour"}, "l": {"hour"}, "p": {"hour"},
    "P": {"hour"}, "j": {"yday"}, "m": {"mon"}, "M": {"min"}, "S": {"sec"}, "R": {"hour", "min"},
    "T": _CLOCK, "X": _CLOCK, "r": _CLOCK, "u": {"wday"}, "w": {"wday"}, "U": {"yday", "wday"},
    "W": {"yday", "wday"}, "y": {"year"}, "Y": {"year"}, "z": {"gmtoff", "isdst"}, "Z": {"zone", "isdst"},
    "s": _DATE | _CLOCK, "c": _DATE | _CLOCK | {"wday"}, "n": set(), "t": set(), "%": set(),
}


class _Tm(ctypes.Structure):
    _fields_ = [*((f"tm_{name}", ctypes.c_int) for name in TM_FIELDS),
                ("tm_gmtoff", ctypes.c_long), ("tm_zone", ctypes.c_char_p)]


_LIBC = ctypes.CDLL(None)
_LIBC.strftime_l.restype = ctypes.c_size_t
_LIBC.strftime_l.argtypes = [ctypes.POINTER(ctypes.c_char), ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(_Tm), ctypes.c_void_p]


def conversions(fmt: bytes) -> list[tuple[int, int, str]]:
    """(start, end, conversion letter) of each ``%`` conversion of ``fmt``, flags (``_-0^#``), width
    and the ``E``/``O`` modifiers included."""
    out, i = [], 0
    while i < len(fmt):
        if fmt[i] != ord("%"):
            i += 1
            continue
        j = i + 1
        while j < len(fmt) and chr(fmt[j]) in "_-0^#":
            j += 1
        while j < len(fmt) and chr(fmt[j]).isdigit():
            j += 1
        while j < len(fmt) and chr(fmt[j]) in "EO":
            j += 1
        if j >= len(fmt):
            break
        out.append((i, j + 1, chr(fmt[j])))
        i = j + 1
    return out


def used_fields(fmt: bytes) -> list[str]:
    """The members of ``struct tm`` the conversions of ``fmt`` read, in struct order (an unknown
    conversion: all of them)."""
    used = set()
    for _, _, c in conversions(fmt):
        used |= USES.get(c, _ALL)
    return [f for f in (*TM_FIELDS, "gmtoff", "zone") if f in used]


def _field(state, tm, name: str):
    endness = state.arch.memory_endness
    if name == "gmtoff":
        return state.memory.load(tm + GMTOFF_AT, 8, endness=endness)
    return state.memory.load(tm + 4 * TM_FIELDS.index(name), 4, endness=endness)


def _one_value(state, fields: dict) -> dict:
    """The fields' values, forking on their joint values where they have several."""
    if not fields:
        return {}
    joint = claripy.Concat(*fields.values())
    sub = state.ram.substitute(joint) if state.has_plugin("ram") else joint
    vals = state.solver.eval_upto(sub, MAX_FORMAT_VALUES + 1)
    if len(vals) > MAX_FORMAT_VALUES:
        raise _fault(f"strftime of a struct tm whose fields have more than {MAX_FORMAT_VALUES} values")
    if len(vals) > 1:
        if not value_forking_enabled():
            raise angr.errors.SimProcedureError("strftime of a struct tm with several values outside a forking step")
        raise ForkRequest([Target(joint == v, "value") for v in sorted(vals)], "strftime fields")
    out, v, low = {}, vals[0], joint.size()
    for name, bv in fields.items():
        low -= bv.size()
        out[name] = (v >> low) & ((1 << bv.size()) - 1)
    return out


def time_text(fmt: bytes, values: dict, zone: bytes | None, limit: int) -> bytes:
    """glibc's ``strftime`` of ``fmt`` over the fields ``values`` (missing ones 0) in the C locale;
    empty when the text is, or when it and its NUL do not fit in ``limit`` bytes (glibc returns 0)."""
    tm = _Tm(**{f"tm_{k}": ctypes.c_int(v).value for k, v in values.items() if k in TM_FIELDS},
             tm_gmtoff=ctypes.c_long(values.get("gmtoff", 0)).value, tm_zone=zone)
    pieces, last = [], 0
    for start, end, c in conversions(fmt):
        if c == "s":
            seconds = calendar.timegm((tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec))
            pieces += [fmt[last:start], str(seconds).encode()]
            last = end
    fmt = b"".join(pieces) + fmt[last:]
    buf = ctypes.create_string_buffer(max(limit, 1))
    n = _LIBC.strftime_l(buf, limit, fmt, ctypes.byref(tm), C_LOCALE)
    return buf.raw[:n]


class Strftime(angr.SimProcedure):
    """``strftime(s, max, format, tm)``: see the module doc."""

    def run(self, s, maxsize, fmt, tm):  # pylint: disable=arguments-differ
        limit = single_value(self.state, maxsize)
        text = concrete_string(self, fmt, MAX_FORMAT)
        if limit is None or text is None:
            raise angr.errors.SimProcedureError("strftime with a symbolic size or format")
        names = used_fields(text)
        values = _one_value(self.state, {n: _field(self.state, tm, n) for n in names if n != "zone"})
        zone = None
        if "zone" in names:
            p = self.state.memory.load(tm + ZONE_AT, 8, endness=self.state.arch.memory_endness)
            zone = b"" if not p.symbolic and p.concrete_value == 0 else concrete_string(self, p, MAX_FORMAT)
            if zone is None:
                raise angr.errors.SimProcedureError("strftime %Z of a zone name that may vary")
        out = time_text(text, values, zone, min(limit, MAX_TEXT))
        if limit > 0:           # an empty text (or one that does not fit): s[0] = NUL, as glibc leaves it
            self.state.memory.store(s, claripy.BVV(out + b"\0"))
        return claripy.BVV(len(out), self.state.arch.bits)


TIME_TEXT_PROCEDURES = {"strftime": Strftime}

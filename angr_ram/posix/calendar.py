"""``gmtime`` and ``localtime``: a ``time_t`` broken down into a ``struct tm``.

Stock angr has no model of them: the call returns an unconstrained pointer, and the first read of
a field may point anywhere (Debian's GNU make formats a file's time with ``localtime`` when the
file seems newer than the clock: one such read resolved to 466 regions of the address space in
180 s). These models compute the fields as glibc does in UTC, the time zone a replay runs in
(:data:`angr_ram.run.replay.NATIVE_ENV`), with bit-vector arithmetic, so a symbolic time (angr's
clock) gives symbolic fields that hold for every value, and a concrete one constants:

* ``gmtime(&t)`` and ``localtime(&t)`` fill one ``struct tm`` per path, as glibc's static one, and return it;
  ``gmtime_r`` and ``localtime_r`` fill the caller's and return it. The zone is ``"GMT"`` for
  ``gmtime``, ``"UTC"`` for ``localtime`` (glibc's names for ``TZ=UTC0``), offset 0, no DST;
* a time whose year does not fit an ``int`` gives NULL, as glibc's ``EOVERFLOW`` (for a symbolic
  time: NULL exactly when it is out of range).

The days-to-date step is the proleptic Gregorian calendar's closed form: 400-year eras of 146,097
days, years counted from March so that the leap day ends the year.
"""

from __future__ import annotations

import angr
import claripy

from angr_ram.core.named_classes import module_class
from angr_ram.posix.startup import static_string

TM_BYTES = 56                   # struct tm on x86-64 glibc: 9 ints, pad, long tm_gmtoff, char *tm_zone
TM_FIELDS = ("sec", "min", "hour", "mday", "mon", "year", "wday", "yday", "isdst")
SECONDS_PER_DAY = 86_400
DAYS_PER_ERA = 146_097          # 400 Gregorian years
EPOCH_FROM_MARCH_0000 = 719_468  # days from 0000-03-01 to 1970-01-01
_BUFFER_KEY = "angr_ram_tm_buffer"


def _floor_div(a, b: int):
    """floor(a / b) of a signed 64-bit value by a positive constant. (Tried: a fresh quotient ``q``
    with ``a = q*b + r, 0 <= r < b`` instead of the division: the 16-bit timefields sample went from
    19 s to past 120 s under z3.)"""
    return (a - claripy.If(a.SLT(0), claripy.BVV(b - 1, 64), claripy.BVV(0, 64))).SDiv(b)


def _b32(cond, yes: int, no: int):
    return claripy.If(cond, claripy.BVV(yes, 32), claripy.BVV(no, 32))


def broken_down(t) -> tuple[dict, object]:
    """The ``struct tm`` fields (32-bit values by :data:`TM_FIELDS` name) of the 64-bit time ``t``
    in UTC, and the condition that the year fits (glibc returns NULL otherwise). Two divisions
    need 64 bits (days, eras); what is left of a day or an era fits 32 bits, where the solver's
    division circuits are a quarter of the size."""
    days = _floor_div(t, SECONDS_PER_DAY)
    secs = (t - days * SECONDS_PER_DAY)[31:0]              # 0..86399
    z = days + EPOCH_FROM_MARCH_0000
    era = _floor_div(z, DAYS_PER_ERA)
    doe = (z - era * DAYS_PER_ERA)[31:0]                   # day of the era, 0..146096
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365    # year of the era, 0..399
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100)          # day of the year from March 1, 0..365
    mp = (5 * doy + 2) / 153                               # month from March, 0..11
    january = mp >= 10                                     # January or February: the next civil year
    y400 = yoe + _b32(january, 1, 0)                       # the year modulo 400 (an era is 400 years)
    leap = claripy.And(y400 % 4 == 0, claripy.Or(y400 % 100 != 0, y400 % 400 == 0))
    yday = claripy.If(january, doy - 306, doy + 59 + _b32(leap, 1, 0))
    tm_year = era * 400 + y400.zero_extend(32) - 1900
    # 1970-01-01 (era 4, day 135080 of it) was a Thursday, and an era is a whole number of weeks
    fields = {"sec": secs % 60, "min": secs / 60 % 60, "hour": secs / 3600,
              "mday": doy - (153 * mp + 2) / 5 + 1,
              "mon": claripy.If(january, mp - 10, mp + 2), "year": tm_year[31:0],
              "wday": (doe + 3) % 7, "yday": yday, "isdst": claripy.BVV(0, 32)}
    fits = claripy.And(tm_year.SGE(-(1 << 31)), tm_year.SLE((1 << 31) - 1))   # glibc: EOVERFLOW
    return fields, fits


def _tm_buffer(proc):
    """glibc's static ``struct tm`` (one for ``gmtime`` and ``localtime``): a heap object made at
    the path's first call, kept in ``state.globals``."""
    buf = proc.state.globals.get(_BUFFER_KEY)
    if buf is None:
        buf = proc.state.globals[_BUFFER_KEY] = proc.state.heap._malloc(claripy.BVV(TM_BYTES, 64))
    return buf


def _fill(proc, timep, buf, zone: bytes):
    """Break ``*timep`` down into the ``struct tm`` at ``buf`` and return ``buf``, or NULL if the
    year does not fit. A time for which both are possible forks the call: one successor returns
    NULL under the overflow condition, this one ``buf`` under its negation (a pointer ``If(fits,
    buf, NULL)`` would leave every later access through it a two-way choice)."""
    state = proc.state
    e = state.arch.memory_endness
    fields, fits = broken_down(state.memory.load(timep, 8, endness=e))
    for k, name in enumerate(TM_FIELDS):
        state.memory.store(buf + 4 * k, fields[name], endness=e)
    state.memory.store(buf + 36, claripy.BVV(0, 32), endness=e)
    state.memory.store(buf + 40, claripy.BVV(0, 64), endness=e)                    # tm_gmtoff
    state.memory.store(buf + 48, claripy.BVV(static_string(proc, zone), 64), endness=e)
    if not fits.symbolic:
        return buf if fits.is_true() else 0
    if not state.solver.satisfiable(extra_constraints=[claripy.Not(fits)]):    # in range: one check
        return buf
    if not state.solver.satisfiable(extra_constraints=[fits]):
        return 0
    if not proc.should_add_successors:                   # an inline call has one result
        return claripy.If(fits, buf, claripy.BVV(0, 64))
    overflow = state.copy()
    overflow.add_constraints(claripy.Not(fits))
    proc.state = overflow                                # ret() returns from proc.state
    proc.ret(claripy.BVV(0, 64))
    proc.state = state
    state.add_constraints(fits)
    proc.ret(buf)                                        # ret() ends the automatic return
    return buf


class _Static(angr.SimProcedure):
    """``gmtime``/``localtime``: glibc's static buffer, the zone :attr:`ZONE`."""
    ZONE = b"GMT"

    def run(self, timep):  # pylint: disable=arguments-differ
        return _fill(self, timep, _tm_buffer(self), self.ZONE)


class _Reentrant(angr.SimProcedure):
    """``gmtime_r``/``localtime_r``: the caller's buffer, the zone :attr:`ZONE`."""
    ZONE = b"GMT"

    def run(self, timep, result):  # pylint: disable=arguments-differ
        return _fill(self, timep, result, self.ZONE)


CALENDAR_PROCEDURES = {name: module_class(globals(), "Ram" + name.title().replace("_", ""), (base,), {"ZONE": zone})
                       for name, base, zone in (("gmtime", _Static, b"GMT"), ("gmtime_r", _Reentrant, b"GMT"),
                                                ("localtime", _Static, b"UTC"),
                                                ("localtime_r", _Reentrant, b"UTC"))}

"""gmtime/localtime (angr_ram.posix.calendar): the broken-down fields against Python's
calendar on concrete times, a symbolic time solved for a date, and a program that branches on
the calendar explored against its native outcomes."""

import os
import random
import time

import angr
import claripy
import pytest

from angr_ram.posix.calendar import TM_FIELDS, broken_down
from angr_ram.posix.startup import extern_allocate
from angr_ram.posix.time_text import used_fields
from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set_over


def _signed(v: int) -> int:
    return (v ^ 0x80000000) - 0x80000000


def _expected(t: int) -> tuple:
    g = time.gmtime(t)
    return (g.tm_sec, g.tm_min, g.tm_hour, g.tm_mday, g.tm_mon - 1, g.tm_year - 1900, (g.tm_wday + 1) % 7,
            g.tm_yday - 1, 0)


def test_fields_match_the_calendar_on_concrete_times():
    """Epoch edges, leap days, centuries (1900 and 2100 are not leap years, 2000 is), years before 1970
    and far after, and random times within +-2^40 s."""
    rng = random.Random(45)
    times = [0, -1, 86399, 86400, -86400, 951782400, 951868800, 4107542400, -2208988800, 1700000000,
             253402300799, -62135596800, *(rng.randint(-2**40, 2**40) for _ in range(200))]
    for t in times:
        fields, fits = broken_down(claripy.BVV(t & (2**64 - 1), 64))
        assert tuple(_signed(fields[k].concrete_value) for k in TM_FIELDS) == _expected(t), t
        assert fits.is_true()


def test_year_overflow_is_glibcs_null():
    """A year that does not fit an int: glibc returns NULL (EOVERFLOW)."""
    _, fits = broken_down(claripy.BVV(2**62, 64))
    assert fits.is_false()
    _, fits = broken_down(claripy.BVV(-(2**62) & (2**64 - 1), 64))
    assert fits.is_false()


def test_a_symbolic_time_solves_for_a_date():
    """The fields of a symbolic time hold for every value: ask for a leap day after 2020 and check
    the answer with Python's calendar."""
    t = claripy.BVS("t", 64)
    fields, fits = broken_down(t)
    s = claripy.Solver()
    s.add([fits, t.SGE(0), t.SLT(2**32), fields["mon"] == 1, fields["mday"] == 29, fields["year"].SGT(120)])
    v = s.eval(t, 1)[0]
    v = v - 2**64 if v >= 2**63 else v
    assert time.gmtime(v)[1:3] == (2, 29) and time.gmtime(v).tm_year > 2020


@pytest.mark.parametrize("opt", ("O0", "O2"))
@pytest.mark.slow
def test_a_program_branching_on_the_calendar(opt):
    """timefields: a 16-bit day count and a mode byte; leap day, Sunday New Year (localtime and
    gmtime_r), the printed time and zone, or nothing: the native outcomes, every test replays
    (TZ=UTC0), no stub (stock angr: localtime is a stub)."""
    b = os.fspath(BUILD / f"timefields_{opt}")
    r = explore(b, 3, tests=True)
    # the days of 2000-02-29 (0x2b08), Sunday 1978-01-01 (0x0b6a), 19000 (0x4a38) and 0, each mode
    native = outcome_set_over(b, [b"\x08\x6a\x38\x00", b"\x2b\x0b\x4a\x00", b"ga"])
    assert len(native) == 6
    assert r.errors == [] and r.outcomes == native and r.stubs == {}
    assert_tests_replay(b, r)


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_a_time_that_may_overflow_forks_the_call(opt):
    """timeoverflow: k * 2^56 s fits an int year only for k = 0. The call forks: NULL (exits 3 and 4
    by the sign of k) and the buffer, whose zone name is read through the returned pointer; the
    native outcomes over every k, no error, every test replays. (A single successor returning
    ``If(fits, buf, NULL)`` left each access through it a two-way choice; one returning only NULL
    or only the buffer loses outcomes here.)"""
    b = os.fspath(BUILD / f"timeoverflow_{opt}")
    r = explore(b, 1, tests=True)
    native = outcome_set_over(b, [bytes(range(256))])
    assert native == {(0, b"UTC 59\n"), (3, b""), (4, b"")}
    assert r.errors == [] and r.outcomes == native and r.stubs == {}
    assert_tests_replay(b, r)


def test_constant_strings_land_in_a_loaded_object():
    """A procedure's constant strings (the zone names here) are placed in cle's extern objects;
    cle's own allocate, once the first extern object is full, returns addresses in no loaded object
    (it adds the first object's base to an absolute address). Every address ``extern_allocate``
    gives lies in a loaded object, also after new extern objects are made."""
    p = angr.Project(os.fspath(BUILD / "timezones_O2"), auto_load_libs=False)
    addrs = [extern_allocate(p.loader, 24) for _ in range(3000)]       # 72 KB: past one 32 KB object
    assert len(set(addrs)) == len(addrs)
    owners = {p.loader.find_object_containing(a, membership_check=False) for a in addrs}
    assert None not in owners and len(owners) >= 3


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_a_pointer_to_either_zone_name_reads_it(opt):
    """timezones: the zone names of gmtime_r and localtime_r picked from a table by an input bit
    and printed: a pointer that is one of two constant strings. Both native outputs, no error
    (the strings had been placed where the address space saw unmapped memory: a false
    out-of-bounds error and no path), every test replays."""
    b = os.fspath(BUILD / f"timezones_{opt}")
    r = explore(b, 1, tests=True)
    native = outcome_set_over(b, [b"\x00\x01"])
    assert native == {(0, b"GMT\n"), (0, b"UTC\n")}
    assert r.errors == [] and r.outcomes == native and r.stubs == {}
    assert_tests_replay(b, r)


def test_strftime_conversions_read_the_fields_they_print():
    """The struct tm members each conversion reads, flags, widths and E/O modifiers included; an
    unknown conversion reads them all (the state forks on whatever it reads)."""
    assert used_fields(b"%-d %_H %05Y") == ["hour", "mday", "year"]
    assert used_fields(b"%Ec %Oy %%") == ["sec", "min", "hour", "mday", "mon", "year", "wday"]
    assert used_fields(b"%Z%z") == ["isdst", "gmtoff", "zone"]
    assert used_fields(b"%Q") == [*TM_FIELDS, "gmtoff", "zone"]
    assert used_fields(b"plain %") == []


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_strftime_prints_a_date_picked_by_the_input(opt):
    """timetext: gmtime_r/localtime of a time computed from two input bytes, then strftime with
    every conversion of the C locale, %s, the zone, a buffer too small (0) and an empty format.
    angr's strftime is a stub (an unconstrained count, the buffer untouched: a one-byte program ran
    120 s without a result). A user's script: every native outcome, every test replays, no stub."""
    from .test_scanning import _same_as_native

    r, native = _same_as_native(os.fspath(BUILD / f"timetext_{opt}"), b"abc", 2)
    assert len(native) == 9 and r.stats["paths"] == 9
    assert all(b"\n0\n0 []\n" in out for _, out in native)

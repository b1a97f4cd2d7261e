"""scanf's floating-point conversions (angr_ram.posix.float_scan): each text the input can
hold is read by this machine's glibc. angr's scanf ended the path on any ``%f`` (it knows no
floating-point type)."""

import struct

import pytest

from angr_ram.posix.float_scan import host_scan
from angr_ram.posix.scanf_formats import parse_format
from angr_ram.procedures.stubs import stubs_of
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_run

ALPHABET = b"3.e\n"


def test_glibcs_reading_differs_from_strtods():
    one = struct.pack("<d", 1.0)
    assert host_scan(b"1e+x", b"%lf", 8) == (1, one, 3)      # "1e+" consumed, the value 1
    assert host_scan(b"0xg", b"%lf", 8)[::2] == (0, 2)          # "0x" consumed, no conversion
    assert host_scan(b"nan(", b"%lf", 8)[::2] == (1, 3)         # "(" left at the end of input
    assert host_scan(b"12345", b"%3f", 4) == (1, struct.pack("<f", 123.0), 3)
    assert host_scan(b"", b"%f", 4)[0] == -1
    assert host_scan(b"2.5", b"%Lf", 10)[1][:8] != bytes(8)    # x87's 80 bits


def test_float_directives_parse():
    d = parse_format(b"%*5Lg%f%lE")
    assert [(x.conv, x.suppress, x.width, x.size) for x in d] == [(b"g", True, 5, 10), (b"f", False, None, 4),
                                                                   (b"E", False, None, 8)]
    assert parse_format(b"%hf") is None                        # no such length: angr's procedure


@pytest.mark.parametrize(("opt", "n"), [("O2", 3), pytest.param("O0", 4, marks=pytest.mark.slow)])
def test_scanf_and_sscanf_read_floats_as_glibc_does(opt, n):
    b = str(BUILD / f"floatscan_{opt}")
    simgr, r = users_run(b, ALPHABET, n)
    native = outcome_set_over(b, [ALPHABET] * n)
    assert len(native) == {3: 21, 4: 37}[n]
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert not r.errors and not any(stubs_of(s) for s in simgr.deadended)
    runs = replay(r.tests, b, jobs=2)
    assert runs and all(x.status == "ok" for x in runs)

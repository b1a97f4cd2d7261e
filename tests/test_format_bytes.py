"""printf formats whose bytes come from the input (angr_ram.procedures.format_specs.deciding_targets):
a byte that may be ``%`` and a conversion byte of several values are decided by forking, not kept
as text. Stock angr's parser printed ``%X|%d`` where the native program prints ``A|42``; Debian's
``printf %u`` was predicted to print ``%u`` (natively ``0``)."""

import os

import pytest

from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_run

ALPHABET = b"ouxXa%\n5"


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_format_bytes_from_the_input_print_what_glibc_prints(opt):
    b = os.fspath(BUILD / f"fmtbyte_{opt}")
    simgr, r = users_run(b, ALPHABET, 2)
    got = set().union(*(path_outcomes(s) for s in simgr.deadended))
    assert got == outcome_set_over(b, [ALPHABET] * 2)
    assert (0, b"A|42\n") in got and (0, b"12|%d\n") not in got
    assert not r.errors
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []


def test_a_byte_that_cannot_be_percent_stays_text_without_a_fork():
    """Bytes that are never ``%`` (the alphabet has none) fork no more than the program does:
    one path per conversion byte and text ending, none per format byte."""
    b = os.fspath(BUILD / "fmtbyte_O2")
    simgr, _ = users_run(b, b"uxz", 2)
    got = set().union(*(path_outcomes(s) for s in simgr.deadended))
    assert got == outcome_set_over(b, [b"uxz"] * 2)
    assert len(simgr.deadended) == 3      # conversion u, x, or none; the text byte is never % nor an end

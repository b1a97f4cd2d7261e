"""``qsort`` and ``qsort_r`` call the program's comparison function (angr_ram/procedures/sorting.py):
``samples/sorting.c`` sorts its input bytes, then records by a key with ties (stability shows), then
with ``qsort_r`` and a direction argument. Each run reaches the native outcome set over the
template's domain, no stub, every test replays (before: angr's stubs sorted nothing: 120 of 125
tests mismatched, 5 of the 112 native outcomes found)."""

import os

import claripy
import pytest

from angr_ram.run.inputs import Template
from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay, drive_as_a_script
from .groundtruth import outcome_set_over


def _over(t: Template):
    return [range(t.lo, t.hi + 1) if b == ord("?") else [b] for b in t.data]


@pytest.mark.parametrize("opt", [pytest.param("O0", marks=pytest.mark.slow), "O2"])
def test_three_input_bytes_sorted_as_natively(opt):
    b = os.fspath(BUILD / f"sorting_{opt}")
    t = Template(b"???", ord("a"), ord("e"))
    r = explore(b, t, tests=True)
    assert r.stopped is None and r.errors == [] and not r.stubs
    assert r.outcomes == outcome_set_over(b, _over(t))
    assert_tests_replay(b, r)


def test_a_script_with_one_wide_variable_sorts_as_natively():
    """A user's script (entry_state, one 16-bit ``claripy.BVS`` as stdin, angr's defaults): the
    comparison's sign forks, the native outcomes, tests that replay."""
    b = os.fspath(BUILD / "sorting_O2")
    two = claripy.BVS("two", 16)
    r = drive_as_a_script(b, two, two, ord("a"), ord("p"))
    assert not r.stubs and r.errors == []
    assert r.outcomes == outcome_set_over(b, _over(Template(b"??", ord("a"), ord("p"))))
    assert_tests_replay(b, r)

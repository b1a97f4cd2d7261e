"""``qsort`` and ``qsort_r`` call the program's comparison function (angr_ram/posix/sorting.py):
``samples/sorting.c`` sorts its input bytes, then records by a key with ties (stability shows), then
with ``qsort_r`` and a direction argument. Each run reaches the native outcome set over the
template's domain, no stub, every test replays (before: angr's stubs sorted nothing: 120 of 125
tests mismatched, 5 of the 112 native outcomes found)."""

import os
import subprocess

import angr
import claripy
import pytest

import angr_ram
from angr_ram.run.inputs import Template
from angr_ram.run.runner import explore, summarize

from .conftest import BUILD, assert_tests_replay, drive_as_a_script
from .groundtruth import outcome_set_over


def _over(t: Template):
    return [range(t.lo, t.hi + 1) if b == ord("?") else [b] for b in t.data]


@pytest.mark.parametrize("opt", [pytest.param("O0", marks=pytest.mark.slow), "O2"])
@pytest.mark.slow
def test_three_input_bytes_sorted_as_natively(opt):
    b = os.fspath(BUILD / f"sorting_{opt}")
    t = Template(b"???", ord("a"), ord("e"))
    r = explore(b, t, tests=True)
    assert r.stopped is None and r.errors == [] and not r.stubs
    assert r.outcomes == outcome_set_over(b, _over(t))
    assert_tests_replay(b, r)


@pytest.mark.slow
def test_a_script_with_one_wide_variable_sorts_as_natively():
    """A user's script (entry_state, one 16-bit ``claripy.BVS`` as stdin, angr's defaults): the
    comparison's sign forks, the native outcomes, tests that replay."""
    b = os.fspath(BUILD / "sorting_O2")
    two = claripy.BVS("two", 16)
    r = drive_as_a_script(b, two, two, ord("a"), ord("p"))
    assert not r.stubs and r.errors == []
    assert r.outcomes == outcome_set_over(b, _over(Template(b"??", ord("a"), ord("p"))))
    assert_tests_replay(b, r)


@pytest.mark.slow
def test_debian_cut_sorts_a_symbolic_field_list_through_qsort():
    """Debian's ``cut -c X,Y`` (qsort orders the ranges by their start), driven as a user's script:
    ``entry_state(args=[...])`` with one 24-bit ``claripy.BVS`` as the list, its two digits in 1..5.
    The 15 native outputs, each test carries the list from the state's argv and replays (with
    angr's stub: 15 paths, 2 of them mismatch natively, since the ranges stay unsorted)."""
    cut = "/usr/bin/cut"
    if not os.path.exists(cut):
        pytest.skip("no /usr/bin/cut")
    line = b"abcdefg\n"
    proj = angr.Project(cut, auto_load_libs=False)
    spec = claripy.BVS("list", 24)
    st = proj.factory.entry_state(args=["cut", "-c", spec],
                                  stdin=angr.SimFileStream(name="stdin", content=line, has_end=True))
    first, comma, second = (spec.get_byte(k) for k in range(3))
    st.solver.add(claripy.UGE(first, ord("1")), claripy.ULE(first, ord("5")), comma == ord(","),
                  claripy.UGE(second, ord("1")), claripy.ULE(second, ord("5")))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    r = summarize(simgr, tech, tests=True)
    native = {(0, subprocess.run([cut, "-c", f"{a},{b}"], input=line, capture_output=True, check=True).stdout)
              for a in "12345" for b in "12345"}
    assert not r.stubs and r.errors == [] and len(native) == 15
    assert r.outcomes == native
    assert {tuple(t.args) for t in r.tests} == {(b"-c", f"{a},{b}".encode()) for a in "12345" for b in "12345"}
    assert_tests_replay(cut, r)
